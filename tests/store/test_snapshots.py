"""The stored streams' snapshot never hides a change: whoever writes to the store (an index run, another
connection, a forget), `stored_streams` gives what the store's rows say, read one by one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memex.ingest.indexer import discover, index_transcripts
from memex.ingest.state import AGENT, FILE_SIZE, stored_streams, stored_streams_since
from memex.store import snapshots, streams
from memex.store.archive import archive_rows
from memex.store.db import connect, connect_readonly
from transcripts import ClaudeSession, retry_projects, simple_turn

FILES = 12


def truth(conn) -> dict[str, tuple]:  # type: ignore[no-untyped-def]
    """The store's streams read row by row, as `stored_streams` gives them."""
    return {row[5]: row for row in streams.every_stream(conn)}


def snapshot_at(conn) -> int | None:  # type: ignore[no-untyped-def]
    found = conn.execute("SELECT last_change FROM snapshots WHERE kind = 'streams'").fetchone()
    return found[0] if found else None


def fresh_snapshot(conn) -> int:  # type: ignore[no-untyped-def]
    """Drop the snapshot and read: the read takes it again, covering every change so far."""
    conn.execute("DELETE FROM snapshots")
    assert stored_streams(conn) == truth(conn)
    at = snapshot_at(conn)
    assert at is not None and conn.execute("SELECT count(*) FROM stream_changes").fetchone()[0] == 0
    return at


@pytest.fixture
def indexed(conn, config, tmp_path: Path):  # type: ignore[no-untyped-def]
    root = tmp_path / "projects"
    sessions = retry_projects(root, FILES)
    index_transcripts(conn, config, discover({"claude": [root]}))
    return root, sessions


def test_changes_written_by_another_connection_after_the_snapshot_are_seen(conn, config, indexed) -> None:  # type: ignore[no-untyped-def]
    at = fresh_snapshot(conn)
    ids = [row[0] for row in conn.execute("SELECT session_id FROM sessions ORDER BY session_id")]
    paths = {
        sid: conn.execute("SELECT transcript_path FROM sessions WHERE session_id = ?", (sid,)).fetchone()[0]
        for sid in ids
    }
    other = connect(config.db_path)
    try:
        other.execute("UPDATE sessions SET file_size = file_size + 10 WHERE session_id = ?", (ids[0],))  # grew
        other.execute(
            "UPDATE sessions SET file_mtime_ns = file_mtime_ns + 1 WHERE session_id = ?", (ids[1],)
        )  # rewritten
        other.execute(
            "UPDATE sessions SET transcript_path = '/moved/x.jsonl' WHERE session_id = ?", (ids[2],)
        )  # renamed
        other.execute("DELETE FROM sessions WHERE session_id = ?", (ids[3],))  # forgotten
        other.execute(
            "INSERT INTO sessions (session_id, agent, computer, transcript_path, file_size, file_mtime_ns, updated_at) "
            "VALUES ('new-one', 'claude', 'here', '/new/one.jsonl', 5, 6, 'now')"
        )
        other.execute(
            "INSERT INTO subagent_sessions (session_id, agent_id, transcript_path, file_size, file_mtime_ns, "
            "updated_at) VALUES (?, 'a1', '/sub/a1.jsonl', 7, 8, 'now')",
            (ids[4],),
        )
        other.execute("UPDATE sessions SET agent = 'codex' WHERE session_id = ?", (ids[4],))  # its subagent's too
        other.execute(
            "INSERT INTO subagent_sessions (session_id, agent_id, transcript_path, file_size, file_mtime_ns, "
            "updated_at) VALUES (?, 'a2', '/sub/a2.jsonl', 9, 10, 'now')",
            (ids[5],),
        )
        other.execute("DELETE FROM sessions WHERE session_id = ?", (ids[5],))  # and its subagent, by cascade
    finally:
        other.close()

    known = stored_streams(conn)
    assert known == truth(conn)
    assert snapshot_at(conn) == at  # read through the snapshot and its log, not row by row
    assert known[paths[ids[0]]][FILE_SIZE] == truth(conn)[paths[ids[0]]][0]
    assert paths[ids[2]] not in known and "/moved/x.jsonl" in known
    assert paths[ids[3]] not in known and "/new/one.jsonl" in known
    assert known["/sub/a1.jsonl"][AGENT] == "codex" and known[paths[ids[4]]][AGENT] == "codex"
    assert "/sub/a2.jsonl" not in known and paths[ids[5]] not in known


def test_index_runs_over_changed_files_keep_it_exact(conn, config, indexed) -> None:  # type: ignore[no-untyped-def]
    root, sessions = indexed
    fresh_snapshot(conn)
    simple_turn(sessions[0], "one more prompt about the retry loop", "raised the cap to five")  # grown
    stat = sessions[1].path.stat()
    sessions[1].path.write_text(sessions[1].path.read_text().replace("retry", "RETRY"))  # rewritten
    os.utime(sessions[1].path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    sessions[2].path.rename(sessions[2].path.with_name("00000099-1111-2222-3333-444444444444.jsonl"))  # renamed
    sessions[3].path.unlink()  # deleted
    new = "0000abcd-1111-2222-3333-444444444444"
    simple_turn(ClaudeSession(root / "-home-dev-p0" / f"{new}.jsonl", new), "a new prompt", "a new answer")

    report = index_transcripts(conn, config, discover({"claude": [root]}))
    assert report.files == FILES and report.files_changed == 4  # grown, rewritten, renamed, new
    known = stored_streams(conn)
    assert known == truth(conn)
    for session in (sessions[0], sessions[1]):
        size, mtime = known[str(session.path.resolve())][:2]
        assert (size, mtime) == (session.path.stat().st_size, session.path.stat().st_mtime_ns)
    again = index_transcripts(conn, config, discover({"claude": [root]}))
    assert again.files_changed == 0


def test_a_long_log_is_read_row_by_row_and_the_snapshot_taken_again(conn, config, indexed, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    at = fresh_snapshot(conn)
    monkeypatch.setattr(snapshots, "RETAKE_AFTER_CHANGES", 3)
    conn.execute("UPDATE sessions SET file_size = file_size + 1")  # FILES changes: more than 3
    assert stored_streams(conn) == truth(conn)
    assert snapshot_at(conn) > at and conn.execute("SELECT count(*) FROM stream_changes").fetchone()[0] == 0
    conn.execute("UPDATE sessions SET file_size = file_size + 1 WHERE rowid = 1")  # one: through the log again
    assert stored_streams(conn) == truth(conn)


def test_a_store_no_index_reads_keeps_its_log_short(conn, indexed) -> None:  # type: ignore[no-untyped-def]
    fresh_snapshot(conn)
    for _ in range(6_000 // FILES):  # a hook's ingests, and no `memex index` to take the snapshot again
        conn.execute("UPDATE sessions SET file_size = file_size + 1")
    assert snapshot_at(conn) is None  # far past use: gone, with the log it needed
    assert conn.execute("SELECT count(*) FROM stream_changes").fetchone()[0] <= 4_096 + 1_024
    assert stored_streams(conn) == truth(conn)


def test_an_older_snapshot_never_replaces_a_newer_one(conn, indexed) -> None:  # type: ignore[no-untyped-def]
    at = fresh_snapshot(conn)
    conn.execute("UPDATE sessions SET file_size = file_size + 1 WHERE rowid = 1")
    assert snapshots.take(conn, snapshots.STREAMS, [], at - 1)  # a slower process's, taken before: refused
    assert snapshot_at(conn) == at and stored_streams(conn) == truth(conn)


def test_a_read_only_connection_reads_it_without_writing(conn, config, indexed) -> None:  # type: ignore[no-untyped-def]
    conn.execute("DELETE FROM snapshots")
    reader = connect_readonly(config.db_path, 1_000)
    try:
        assert stored_streams(reader) == truth(conn)  # no snapshot to take on a read-only store: no error
    finally:
        reader.close()
    assert snapshot_at(conn) is None


def test_the_archive_sources_snapshot_misses_no_copy(conn, config, indexed) -> None:  # type: ignore[no-untyped-def]
    every = {path for (path,) in conn.execute("SELECT source_path FROM archive_streams")}
    assert len(every) == FILES and snapshots.archive_sources(conn) == every  # taken now
    other = connect(config.db_path)
    try:
        other.execute("UPDATE archive_streams SET source_path = '/moved/a.jsonl' WHERE rowid = 1")
        other.execute(
            "INSERT OR REPLACE INTO archive_streams (session_id, agent_id, agent, source_path, archive_path, "
            "raw_bytes, stored_bytes, pieces, updated_at) VALUES ('s-new', '', 'claude', '/new/b.jsonl', 'x', 1, 1, "
            "1, 'now')"
        )
    finally:
        other.close()
    assert {"/moved/a.jsonl", "/new/b.jsonl"} <= snapshots.archive_sources(conn)
    assert snapshots.archive_sources(conn, outside=every) == {"/moved/a.jsonl", "/new/b.jsonl"}
    found = {row.source_path for row in archive_rows(conn, outside=every)}
    assert found == {"/moved/a.jsonl", "/new/b.jsonl"}  # the copies whose source was not found
    assert archive_rows(conn, outside=every | found) == []


def test_a_later_migration_drops_the_snapshots(conn, indexed, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from memex.store import db

    fresh_snapshot(conn)
    snapshots.archive_sources(conn)
    later = [*db.MIGRATIONS, "CREATE TABLE later_one (x INTEGER);"]  # one that might rebuild a watched table
    monkeypatch.setattr(db, "MIGRATIONS", later)
    monkeypatch.setattr(db, "SCHEMA_VERSION", len(later))
    db.migrate(conn)
    assert conn.execute("SELECT count(*) FROM snapshots").fetchone()[0] == 0
    assert stored_streams(conn) == truth(conn)


def mirrored(conn) -> set[str]:  # type: ignore[no-untyped-def]
    return {row[0] for row in conn.execute("SELECT session_id FROM mirror_records")}


def test_a_mirror_that_went_is_built_again_by_the_next_run(conn, config, indexed) -> None:  # type: ignore[no-untyped-def]
    root, _ = indexed
    every = mirrored(conn)
    assert len(every) == FILES
    assert snapshots.sessions_to_check(conn)[0] == set()  # checked: nothing named since
    gone = sorted(every)[:2]
    other = connect(config.db_path)
    try:
        other.execute(f"DELETE FROM mirror_records WHERE session_id IN ('{gone[0]}', '{gone[1]}')")
    finally:
        other.close()
    assert snapshots.sessions_to_check(conn)[0] == set(gone)
    report = index_transcripts(conn, config, discover({"claude": [root]}))
    assert report.files_changed == 0 and report.mirrors == 2 and mirrored(conn) == every
    assert snapshots.sessions_to_check(conn)[0] == set()


def test_every_session_is_checked_when_the_log_no_longer_covers_the_span(conn, config, indexed, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    root, _ = indexed
    every = mirrored(conn)
    monkeypatch.setattr(snapshots, "RETAKE_AFTER_CHANGES", 0)
    conn.execute("DELETE FROM mirror_records WHERE rowid = (SELECT min(rowid) FROM mirror_records)")
    stored_streams(conn)  # takes the snapshot again: the log it covers, the deletion among it, is dropped
    assert snapshots.sessions_to_check(conn)[0] is None
    report = index_transcripts(conn, config, discover({"claude": [root]}))
    assert report.mirrors == 1 and mirrored(conn) == every


def test_streams_kept_between_runs_follow_every_change_and_keep_the_rows_that_did_not(  # type: ignore[no-untyped-def]
    conn, config, indexed, monkeypatch
) -> None:
    """`stored_streams_since` (the warm server's): the streams as of a change, brought up to date from the log,
    are the store's; a row that did not change is the very object it was (the live tree's sieve memo
    compares references); a span the log no longer covers is read whole."""
    known, last = stored_streams_since(conn, None, 0)
    assert known == truth(conn) and last == snapshots.last_stream_change(conn)
    same, at = stored_streams_since(conn, known, last)
    assert same is known and at == last  # nothing changed: the same mapping
    ids = [row[0] for row in conn.execute("SELECT session_id FROM sessions ORDER BY session_id")]
    other = connect(config.db_path)
    try:
        other.execute("UPDATE sessions SET file_size = file_size + 10 WHERE session_id = ?", (ids[0],))
        other.execute("UPDATE sessions SET transcript_path = '/moved/x.jsonl' WHERE session_id = ?", (ids[1],))
        other.execute("DELETE FROM sessions WHERE session_id = ?", (ids[2],))
    finally:
        other.close()
    updated, now = stored_streams_since(conn, known, last)
    assert updated == truth(conn) and now > last and updated is not known
    kept = [path for path in updated if path in known and updated[path] == known[path]]
    assert len(kept) == FILES - 3 and all(updated[path] is known[path] for path in kept)
    fresh_snapshot(conn)  # a snapshot taken again drops the log these changes were in
    conn.execute("UPDATE sessions SET file_size = file_size + 1 WHERE session_id = ?", (ids[3],))
    assert stored_streams_since(conn, known, last)[0] == truth(conn)  # read whole: the span is gone
    monkeypatch.setattr(snapshots, "RETAKE_AFTER_CHANGES", 3)
    latest, now = stored_streams_since(conn, None, 0)
    conn.execute("UPDATE sessions SET file_size = file_size + 1")  # more changes than the log is read for
    assert stored_streams_since(conn, latest, now)[0] == truth(conn)
