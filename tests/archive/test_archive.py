"""The archive: a compressed copy of every transcript, appended as it grows, readable after a crash, and
what `--raw` and a rebuilt store read once the agent deleted the original."""

from __future__ import annotations

import io
import json
import os
import shutil
import time
from pathlib import Path

import pytest
import zstandard

from corpus import GEMINI_LEGACY, HILLVIEW, MISC, SLAY
from memex.archive import frames, reader
from memex.archive.copies import COMPACT_PIECES, Stream, archive_root, keep_copy
from memex.archive.reader import ArchiveReader, unknown_copies
from memex.config import Config
from memex.store.archive import archive_row
from memex.store.db import connect

LARGE = MISC / "large-conversation.jsonl"  # 460 lines, 1.4 MB of a real session
SLAY_ID = SLAY.stem


def _zstd_d(path: Path) -> bytes:
    """What the standard decoder makes of an archive file (skippable frames are passed over)."""
    with open(path, "rb") as handle:
        return zstandard.ZstdDecompressor().stream_reader(handle, read_across_frames=True).read()


def _copy(config: Config, session_id: str, agent_id: str = "") -> Path:
    conn = connect(config.db_path)
    try:
        row = archive_row(conn, session_id, agent_id)
        assert row is not None, f"no copy of {session_id}/{agent_id}"
        return archive_root(config) / row.archive_path
    finally:
        conn.close()


def _without_clock(shown: str) -> object:
    """`show --json` output without the times the store wrote its rows (not the transcript's)."""
    data = json.loads(shown)
    data["session"].pop("updated_at")
    for turn in data.get("turns", []):
        turn.pop("id")  # turn ids are never reused
    return data


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def test_index_archives_every_transcript_subagents_included(run, config: Config, projects: Path) -> None:
    assert run("index", str(projects)).exit_code == 0
    sources = sorted(projects.rglob("*.jsonl"))
    conn = connect(config.db_path)
    rows = conn.execute("SELECT source_path, archive_path, raw_bytes FROM archive_streams").fetchall()
    conn.close()
    assert sorted(Path(r["source_path"]).name for r in rows) == sorted(p.name for p in sources)
    assert any("/agent-" in r["archive_path"] for r in rows)  # the sidechain files too
    for row in rows:
        copy = archive_root(config) / row["archive_path"]
        assert _zstd_d(copy) == Path(row["source_path"]).read_bytes()  # `zstd -d` gives the transcript back
        assert row["raw_bytes"] == Path(row["source_path"]).stat().st_size
        assert copy.stat().st_mode & 0o777 == 0o600


def test_a_growing_transcript_is_appended_to_never_rewritten(run, config: Config, tmp_path: Path) -> None:
    lines = _lines(LARGE)
    target = tmp_path / "claude-projects" / "-home-dev-shop" / LARGE.name
    target.parent.mkdir(parents=True)
    target.write_bytes(b"".join(lines[:200]))
    assert run("index").exit_code == 0
    copy = _copy(config, LARGE.stem)
    first = copy.read_bytes()
    for end in (260, 300, 461):  # the session goes on: three more ingests
        with open(target, "ab") as handle:
            handle.write(b"".join(lines[len(_lines(target)) : end]))
        assert run("index").exit_code == 0
        now = copy.read_bytes()
        assert now.startswith(first)  # what was archived stays byte for byte: only pieces were added
        first = now
    assert _zstd_d(copy) == LARGE.read_bytes()
    with open(copy, "rb") as handle:
        scan = frames.scan(handle, copy.stat().st_size)
    assert scan is not None and len(scan.pieces) == 4 and scan.raw_bytes == LARGE.stat().st_size


@pytest.mark.parametrize("cut", ["description", "frame", "last byte"])
def test_a_write_cut_short_leaves_a_readable_copy_that_the_next_run_completes(
    run, config: Config, tmp_path: Path, cut: str
) -> None:
    lines = _lines(LARGE)
    target = tmp_path / "claude-projects" / "-home-dev-shop" / LARGE.name
    target.parent.mkdir(parents=True)
    target.write_bytes(b"".join(lines[:300]))
    assert run("index").exit_code == 0
    copy = _copy(config, LARGE.stem)
    before = copy.read_bytes()
    # The transcript grows, and the process appending its piece is killed part-way through the write.
    target.write_bytes(LARGE.read_bytes())
    source = io.BytesIO(LARGE.read_bytes())
    source.seek(len(b"".join(lines[:300])))
    piece = frames.piece(source.read(), len(b"".join(lines[:300])), "", config.archive_level)
    keep = {"description": 5, "frame": len(piece) // 2, "last byte": len(piece) - 1}[cut]
    with open(copy, "ab") as handle:
        handle.write(piece[:keep])
    with ArchiveReader(copy) as reader:  # readable: every complete piece, nothing of the torn one
        assert reader.read() == b"".join(lines[:300])
    assert run("index").exit_code == 0
    assert copy.read_bytes().startswith(before)
    assert _zstd_d(copy) == LARGE.read_bytes()
    with ArchiveReader(copy) as reader:
        assert reader.read() == LARGE.read_bytes()


def test_a_rewritten_transcript_is_copied_again(run, config: Config, tmp_path: Path) -> None:
    chat = tmp_path / "gemini-tmp" / GEMINI_LEGACY.parent.parent.name / "chats" / GEMINI_LEGACY.name
    chat.parent.mkdir(parents=True)
    shutil.copy(GEMINI_LEGACY, chat)
    assert run("index").exit_code == 0
    document = json.loads(chat.read_text())
    document["messages"] = document["messages"][:2]  # Gemini rewrites its JSON chat in place
    chat.write_text(json.dumps(document))
    assert run("index").exit_code == 0
    conn = connect(config.db_path)
    (session_id,) = conn.execute("SELECT session_id FROM sessions").fetchone()
    conn.close()
    assert _zstd_d(_copy(config, session_id)) == chat.read_bytes()


def test_small_pieces_are_merged(config: Config, tmp_path: Path) -> None:
    lines = _lines(LARGE)
    source = tmp_path / "s.jsonl"
    source.write_bytes(b"")
    conn = connect(config.db_path)
    stream = Stream("claude", "s", "", source)
    statuses = []
    for count in range(1, COMPACT_PIECES + 5):
        with open(source, "ab") as handle:
            handle.write(lines[count])
        statuses.append(keep_copy(conn, config, stream).status)
    copy = archive_root(config) / archive_row(conn, "s", "").archive_path
    conn.close()
    assert "compacted" in statuses and statuses.count("appended") >= COMPACT_PIECES - 1
    with open(copy, "rb") as handle:
        scan = frames.scan(handle, copy.stat().st_size)
    assert scan is not None and len(scan.pieces) < COMPACT_PIECES // 2
    assert _zstd_d(copy) == source.read_bytes()


def test_raw_reads_the_copy_once_the_agent_deleted_the_transcript(run, config: Config, tmp_path: Path) -> None:
    target = tmp_path / "claude-projects" / "-Users-chloe-c-slay" / SLAY.name
    target.parent.mkdir(parents=True)
    shutil.copy(SLAY, target)
    assert run("index").exit_code == 0
    target.unlink()  # Claude Code's cleanupPeriodDays
    result = run("show", SLAY_ID[:8], "--raw")
    assert result.exit_code == 0 and result.stdout_bytes == SLAY.read_bytes()
    shown = run("show", SLAY_ID[:8])
    assert shown.exit_code == 0 and "sl" in shown.stdout


def test_raw_without_a_copy_says_so_in_one_line(run, config: Config, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMEX_ARCHIVE_ENABLED", "0")
    target = tmp_path / "claude-projects" / "-Users-chloe-c-slay" / SLAY.name
    target.parent.mkdir(parents=True)
    shutil.copy(SLAY, target)
    assert run("index").exit_code == 0
    assert not archive_root(config).exists()  # the setting turns the archive off
    checked = run("index", "--check-archive")  # nothing to look at: said, not silently done
    assert checked.exit_code == 0 and "archive is turned off (archive_enabled = 0)" in checked.stderr
    target.unlink()
    result = run("show", SLAY_ID[:8], "--raw")
    assert result.exit_code == 2
    assert "not on this computer" in result.stderr and "Traceback" not in result.stderr


def test_a_store_rebuilt_from_scratch_reads_the_deleted_transcripts_from_the_archive(
    run, config: Config, tmp_path: Path
) -> None:
    projects = tmp_path / "claude-projects"
    shutil.copytree(HILLVIEW, projects / HILLVIEW.name)
    assert run("index").exit_code == 0
    before = run("sessions", "list", "--json", "--limit", "100").stdout
    turns_before = _without_clock(run("show", "155715ec", "--turns", "--json").stdout)
    shutil.rmtree(projects)  # every transcript deleted by its agent
    for suffix in ("", "-wal", "-shm"):  # and the store lost (a schema change rebuilds it)
        Path(str(config.db_path) + suffix).unlink(missing_ok=True)
    report = json.loads(run("index", "--json").stdout)
    assert report["files"] == 16 and report["sessions"] == 8 and report["subagents"] == 8
    assert run("sessions", "list", "--json", "--limit", "100").stdout == before
    assert _without_clock(run("show", "155715ec", "--turns", "--json").stdout) == turns_before
    again = json.loads(run("index", "--json").stdout)
    assert again["files_changed"] == 0  # nothing is parsed twice
    stats = json.loads(run("stats", "--json").stdout)
    assert stats["archived_transcripts"] == 16 and stats["archived_originals_gone"] == 16


def test_a_reparse_after_a_format_change_reads_the_copy(run, config: Config, tmp_path: Path) -> None:
    target = tmp_path / "claude-projects" / "-Users-chloe-c-slay" / SLAY.name
    target.parent.mkdir(parents=True)
    shutil.copy(SLAY, target)
    assert run("index").exit_code == 0
    turns = _without_clock(run("show", SLAY_ID[:8], "--turns", "--json").stdout)
    target.unlink()
    conn = connect(config.db_path)
    with conn:  # what a migration does when the parsers change: every stream is read again
        conn.execute("UPDATE sessions SET file_mtime_ns = -1, head_hash = 'reparse'")
        conn.execute("DELETE FROM turns")
    conn.close()
    report = json.loads(run("index", "--json").stdout)
    assert report["files_changed"] == 1
    assert _without_clock(run("show", SLAY_ID[:8], "--turns", "--json").stdout) == turns


def test_stats_shows_the_archive_size_and_ratio(run, config: Config, projects: Path) -> None:
    assert run("index", str(projects)).exit_code == 0
    stats = json.loads(run("stats", "--json").stdout)
    raw = sum(p.stat().st_size for p in projects.rglob("*.jsonl"))
    assert stats["archived_transcript_bytes"] == raw
    stored = sum(p.stat().st_size for p in archive_root(config).rglob("*.zst"))
    assert stats["archive_bytes"] == stored
    assert stats["archive_ratio"] == round(raw / stored, 2) and stats["archive_ratio"] > 2
    text = run("stats").stdout
    assert "archive ratio" in text


def test_a_corrupted_piece_is_reported_not_served(config: Config, tmp_path: Path) -> None:
    source = tmp_path / "s.jsonl"
    source.write_bytes(SLAY.read_bytes())
    conn = connect(config.db_path)
    keep_copy(conn, config, Stream("claude", "s", "", source))
    copy = archive_root(config) / archive_row(conn, "s", "").archive_path
    conn.close()
    data = bytearray(copy.read_bytes())
    data[-40] ^= 0xFF  # a flipped bit inside the frame
    copy.write_bytes(bytes(data))
    with ArchiveReader(copy) as reader, pytest.raises(frames.ArchiveCorrupt):
        reader.read()


def test_a_copy_of_a_transcript_that_moved_names_its_new_path_and_keeps_its_pieces(
    config: Config, tmp_path: Path
) -> None:
    """A transcript found at a new path, grown meanwhile (or whose copy's header still names where it was):
    the header is rewritten and the new bytes appended; the pieces archived stay byte for byte."""
    lines = _lines(LARGE)
    old = tmp_path / "old" / "s.jsonl"
    old.parent.mkdir()
    old.write_bytes(b"".join(lines[:300]))
    conn = connect(config.db_path)
    assert keep_copy(conn, config, Stream("claude", "s", "", old)).status == "new"
    copy = archive_root(config) / archive_row(conn, "s", "").archive_path
    with open(copy, "rb") as handle:
        before = frames.scan(handle, copy.stat().st_size)
    assert before is not None
    pieces = copy.read_bytes()[before.pieces[0].at : before.end]
    new = tmp_path / "new" / "s.jsonl"
    new.parent.mkdir()
    os.rename(old, new)
    new.write_bytes(LARGE.read_bytes())
    assert keep_copy(conn, config, Stream("claude", "s", "", new)).status == "relabelled"
    with ArchiveReader(copy) as reader:
        assert reader.header["source"] == str(new) and reader.read() == LARGE.read_bytes()
    assert pieces in copy.read_bytes()  # copied, not compressed again
    row = archive_row(conn, "s", "")
    assert row is not None and (row.source_path, row.stored_bytes) == (str(new), copy.stat().st_size)
    assert keep_copy(conn, config, Stream("claude", "s", "", new)).status == "unchanged"
    conn.close()


def test_a_store_that_lost_some_archive_rows_finds_those_copies_again(run, config: Config, tmp_path: Path) -> None:
    """A store older than its archive (restored from a backup): the session folders it does not know are read."""
    projects = tmp_path / "claude-projects"
    shutil.copytree(HILLVIEW, projects / HILLVIEW.name)
    assert run("index").exit_code == 0
    shutil.rmtree(projects)
    conn = connect(config.db_path)
    with conn:
        lost = conn.execute("SELECT session_id FROM archive_streams WHERE agent_id = '' LIMIT 1").fetchone()[0]
        conn.execute("DELETE FROM archive_streams WHERE session_id = ?", (lost,))
        conn.execute("UPDATE sessions SET file_mtime_ns = -1")  # every stream to be read again
        conn.execute("UPDATE archive_listings SET mtime_ns = mtime_ns - 1")  # as listed before the backup
    conn.close()
    assert run("index").exit_code == 0
    conn = connect(config.db_path)
    try:
        assert archive_row(conn, lost, "") is not None
        assert conn.execute("SELECT count(*) FROM archive_streams WHERE session_id = ?", (lost,)).fetchone()[0] >= 1
    finally:
        conn.close()


def test_only_session_folders_the_store_does_not_know_are_listed(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    for relative in ("claude/a/main.zst", "claude/a/agent-x.zst", "claude/b/main.zst", "codex/c/main.zst"):
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_bytes(b"")
    (root / "claude" / "b" / "notes.txt").write_bytes(b"")
    (root / ".lock").write_bytes(b"")
    found = unknown_copies(root, {"claude/a/main.zst"})
    assert [p.relative_to(root).as_posix() for p in found] == ["claude/b/main.zst", "codex/c/main.zst"]


def _age(root: Path) -> None:
    """Make the archive's folders look untouched for an hour (listings of recent folders are not trusted)."""
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        old = folder.stat().st_mtime_ns - 3600 * 10**9
        os.utime(folder, ns=(old, old))


def test_an_archive_whose_folders_did_not_change_is_not_listed_again(
    run, config: Config, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    projects = tmp_path / "claude-projects"
    shutil.copytree(HILLVIEW, projects / HILLVIEW.name)
    assert run("index").exit_code == 0
    root = archive_root(config)
    _age(root)
    assert run("index").exit_code == 0  # lists the archive once more, and remembers its folders
    listed: list[Path] = []
    real = reader.unknown_copies

    def counted(folder: Path, known: set[str]) -> list[Path]:
        listed.append(folder)
        return real(folder, known)

    monkeypatch.setattr(reader, "unknown_copies", counted)
    assert run("index").exit_code == 0
    assert listed == []

    # A session folder the store does not know (copied in from a backup) changes its agent's folder.
    conn = connect(config.db_path)
    with conn:
        lost = conn.execute("SELECT session_id, archive_path FROM archive_streams WHERE agent_id = ''").fetchone()
        conn.execute("DELETE FROM archive_streams WHERE session_id = ?", (lost[0],))
    conn.close()
    folder = (root / lost[1]).parent
    shutil.move(folder, tmp_path / "aside")
    _age(root)
    assert run("index").exit_code == 0  # the archive without that folder, known and remembered
    listed.clear()
    shutil.move(tmp_path / "aside", folder)
    assert run("index").exit_code == 0
    assert listed == [root]
    conn = connect(config.db_path)
    try:
        assert archive_row(conn, lost[0], "") is not None
    finally:
        conn.close()


def test_a_store_from_before_the_pending_copies_names_the_streams_without_one(
    run, config: Config, projects: Path
) -> None:
    """Migration 12 names every stream whose copy does not match what was indexed (none, or an older one),
    and the next `memex index` copies them, although their transcripts did not change."""
    assert run("index", str(projects)).exit_code == 0
    conn = connect(config.db_path)
    streams = conn.execute("SELECT session_id, agent_id FROM archive_streams ORDER BY 1, 2").fetchall()
    missing, stale = tuple(streams[0]), tuple(streams[1])
    with conn:  # the store as migration 11 left it: a copy lost, another behind its transcript
        conn.execute("DELETE FROM archive_streams WHERE session_id = ? AND agent_id = ?", missing)
        conn.execute("UPDATE archive_streams SET source_size = 1 WHERE session_id = ? AND agent_id = ?", stale)
        for trigger in ("sessions", "subagent_sessions"):
            for event in ("insert", "update"):
                conn.execute(f"DROP TRIGGER {trigger}_archive_pending_{event}")
        conn.execute("DROP TABLE archive_pending")
        conn.execute("DROP INDEX subagent_sessions_transcript_path")  # and migration 13's
        conn.execute("DROP INDEX sessions_computer")
        conn.execute("PRAGMA user_version = 11")
    conn.close()
    conn = connect(config.db_path)  # migrated
    assert {tuple(r) for r in conn.execute("SELECT session_id, agent_id FROM archive_pending")} == {missing, stale}
    report = json.loads(run("index", "--json", str(projects)).stdout)
    assert report["files_changed"] == 0
    assert conn.execute("SELECT count(*) FROM archive_pending").fetchone()[0] == 0
    assert archive_row(conn, *missing) is not None
    conn.close()


@pytest.mark.parametrize("aged", [False, True])
def test_an_archive_folder_deleted_is_copied_again_by_the_next_index(
    run, config: Config, tmp_path: Path, aged: bool
) -> None:
    """The archive folder removed (to free space, or a store restored from a backup without it) while the
    transcripts are still on disk: `memex doctor` says what to do, and `memex index` makes the copies again,
    so `--raw` still has the transcript after Claude Code deletes it."""
    projects = tmp_path / "claude-projects"
    shutil.copytree(HILLVIEW, projects / HILLVIEW.name)
    target = projects / "-Users-chloe-c-slay" / SLAY.name
    target.parent.mkdir(parents=True)
    shutil.copy(SLAY, target)
    assert run("index").exit_code == 0
    root = archive_root(config)
    if aged:  # the store had listed the archive's folders and remembered them
        _age(root)
        assert run("index").exit_code == 0
    shutil.rmtree(root)

    doctor = {c["name"]: c for c in json.loads(run("doctor", "--json").stdout)["checks"]}
    assert doctor["archive"]["status"] == "fail" and "`memex index" in (doctor["archive"]["fix"] or "")

    assert run("index").exit_code == 0
    assert _zstd_d(_copy(config, SLAY_ID)) == SLAY.read_bytes()
    doctor = {c["name"]: c for c in json.loads(run("doctor", "--json").stdout)["checks"]}
    assert doctor["archive"]["status"] == "ok", doctor["archive"]
    target.unlink()  # Claude Code's cleanupPeriodDays
    result = run("show", SLAY_ID[:8], "--raw")
    assert result.exit_code == 0 and result.stdout_bytes == SLAY.read_bytes()


def _archive_check(run) -> dict:  # type: ignore[no-untyped-def]
    """`memex doctor`'s archive check."""
    return {c["name"]: c for c in json.loads(run("doctor", "--json").stdout)["checks"]}["archive"]


@pytest.mark.parametrize("subagent", [False, True])
def test_a_check_of_the_archive_with_files_named_copies_theirs_again_at_once_and_the_others_next_run(
    run, config: Config, tmp_path: Path, subagent: bool
) -> None:
    """`memex index --check-archive FILE`: the named file's lost copy (deleted, or cut short) is made again in
    that run; another lost copy is made pending, and made by the next run that reads its folder."""
    projects = tmp_path / "claude-projects"
    shutil.copytree(HILLVIEW, projects / HILLVIEW.name)
    assert run("index", "--no-embed").exit_code == 0
    conn = connect(config.db_path)
    rows = conn.execute("SELECT agent_id, source_path, archive_path, stored_bytes FROM archive_streams").fetchall()
    conn.close()
    named = next(row for row in rows if bool(row["agent_id"]) == subagent)
    other = next(row for row in rows if row["source_path"] != named["source_path"])
    named_copy, other_copy = (archive_root(config) / row["archive_path"] for row in (named, other))
    with open(named_copy, "r+b") as handle:
        handle.truncate(named["stored_bytes"] // 2)
    other_copy.unlink()

    assert run("index", "--no-embed", "--check-archive", named["source_path"]).exit_code == 0
    assert _zstd_d(named_copy) == Path(named["source_path"]).read_bytes()
    assert not other_copy.exists()
    assert run("index", "--no-embed").exit_code == 0
    assert _zstd_d(other_copy) == Path(other["source_path"]).read_bytes()


@pytest.mark.parametrize("subagent", [False, True])
def test_one_copy_deleted_is_copied_again_by_a_check_of_every_copy(
    run, config: Config, tmp_path: Path, subagent: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One copy deleted inside its session's folder (only that folder's time changes): a plain `memex index`
    within a day of the last look at every copy does not look again (a `stat` per copy), and `memex doctor`
    names the copy with the fix; `memex index --check-archive` makes it again, and so does a plain
    `memex index` once the last look is more than a day old."""
    projects = tmp_path / "claude-projects"
    shutil.copytree(HILLVIEW, projects / HILLVIEW.name)
    assert run("index").exit_code == 0
    conn = connect(config.db_path)
    try:
        if subagent:  # a subagent's copy, beside its session's main one
            row = conn.execute("SELECT session_id, agent_id FROM archive_streams WHERE agent_id != '' LIMIT 1")
        else:
            row = conn.execute("SELECT session_id, agent_id FROM archive_streams WHERE agent_id = '' LIMIT 1")
        session_id, agent_id = row.fetchone()
        source = Path(archive_row(conn, session_id, agent_id).source_path)  # type: ignore[union-attr]
    finally:
        conn.close()
    root = archive_root(config)
    _age(root)
    assert run("index").exit_code == 0  # lists the archive once more, and remembers its folders
    checked: list[Path] = []
    real = reader.lost_copies

    def counted(conn: object, folder: Path) -> list:
        checked.append(folder)
        return real(conn, folder)  # type: ignore[arg-type]

    monkeypatch.setattr(reader, "lost_copies", counted)
    assert run("index").exit_code == 0
    assert checked == []  # nothing changed: no copy is looked at
    copy = _copy(config, session_id, agent_id)
    assert copy.parent.parent.parent == root
    agent_folder_before = copy.parent.parent.stat().st_mtime_ns
    copy.unlink()
    assert copy.parent.parent.stat().st_mtime_ns == agent_folder_before  # only the session's folder changed

    assert run("index").exit_code == 0
    assert checked == [] and not copy.exists()  # within the day: the copies are not looked at
    archive = _archive_check(run)
    assert archive["status"] == "fail" and copy.relative_to(root).as_posix() in archive["detail"]
    assert archive["fix"] == "`memex index --check-archive` copies again those whose transcript is still on disk"

    checked.clear()  # doctor looked at every copy too
    assert run("index", "--check-archive").exit_code == 0
    assert checked == [root] and _zstd_d(copy) == source.read_bytes()
    assert _archive_check(run)["status"] == "ok"

    copy.unlink()
    checked.clear()
    assert run("index").exit_code == 0
    assert checked == [] and not copy.exists()  # --check-archive just looked
    conn = connect(config.db_path)
    try:
        more_than_a_day_ago = time.time_ns() - reader.CHECK_COPIES_EVERY_NS - 60 * 10**9
        conn.execute("UPDATE archive_listings SET mtime_ns = ? WHERE folder = '/'", (more_than_a_day_ago,))
        conn.commit()
    finally:
        conn.close()
    checked.clear()
    assert run("index").exit_code == 0
    assert checked == [root] and _zstd_d(copy) == source.read_bytes()
    checked.clear()
    assert run("index").exit_code == 0
    assert checked == []  # the look was recorded: the next is a day away
    assert _archive_check(run)["status"] == "ok"
    if not subagent:
        source.unlink()  # Claude Code's cleanupPeriodDays
        result = run("show", session_id[:8], "--raw")
        assert result.exit_code == 0 and result.stdout_bytes == _zstd_d(copy)
