"""The archive of sessions an agent keeps in a database (OpenCode 1.18's `opencode.db`): each session's
records, as `memex show --raw` gives them, kept after the agent deleted the session."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from memex.archive.copies import Stream, archive_root, keep_copy
from memex.archive.reader import ArchiveReader
from memex.config import Config
from memex.sources import raw_transcript
from memex.store.archive import archive_row, pending_sources
from memex.store.db import connect

OPENCODE_DB = Path(__file__).resolve().parents[1] / "fixtures" / "live" / "opencode-1.18.33" / "opencode.db"


def _database(config: Config) -> Path:
    """The fixture database where the settings expect OpenCode's (tests/agent_dirs.py)."""
    target = config.opencode_db
    shutil.copy(OPENCODE_DB, target)
    return target


def _sessions(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    return conn.execute("SELECT session_id, transcript_path FROM sessions WHERE agent = 'opencode'").fetchall()


def _archived(config: Config, conn: sqlite3.Connection, session_id: str) -> bytes:
    row = archive_row(conn, session_id, "")
    assert row is not None, f"no copy of {session_id}"
    with ArchiveReader(archive_root(config) / row.archive_path) as reader:
        return reader.read()


def _delete_session(database: Path, session_id: str) -> None:
    """What OpenCode does when its user deletes a session."""
    with sqlite3.connect(database) as db:
        for table, column in (("part", "session_id"), ("message", "session_id"), ("session", "id")):
            db.execute(f"DELETE FROM {table} WHERE {column} = ?", (session_id,))


def test_each_session_is_archived_as_its_records_and_doctor_is_content(run, config: Config) -> None:
    database = _database(config)
    assert run("index").exit_code == 0
    conn = connect(config.db_path)
    sessions = _sessions(conn)
    assert len(sessions) >= 3
    for session_id, path in sessions:
        assert _archived(config, conn, session_id) == b"".join(raw_transcript("opencode", Path(path)))
        assert archive_row(conn, session_id, "").source_path == str(database) + "#" + session_id
    assert pending_sources(conn) == []  # doctor no longer asks for a `memex index` that cannot help
    assert "no up-to-date copy" not in run("doctor").stdout


def test_an_unchanged_session_is_not_read_again_and_a_changed_one_is_copied_again(run, config: Config) -> None:
    database = _database(config)
    assert run("index").exit_code == 0
    conn = connect(config.db_path)
    session_id, path = _sessions(conn)[0]
    stream = Stream("opencode", session_id, "", Path(path))
    assert keep_copy(conn, config, stream).status == "unchanged"
    with sqlite3.connect(database) as db:  # the session goes on: its title and time move
        db.execute("UPDATE session SET title = 'renamed by the agent', time_updated = time_updated + 1000")
    assert keep_copy(conn, config, stream).status == "rewritten"
    archived = _archived(config, conn, session_id)
    assert b"renamed by the agent" in archived
    assert archived == b"".join(raw_transcript("opencode", Path(path)))


def test_a_session_the_agent_deleted_is_served_from_the_copy(run, config: Config) -> None:
    database = _database(config)
    assert run("index").exit_code == 0
    conn = connect(config.db_path)
    session_id, path = _sessions(conn)[0]
    records = b"".join(raw_transcript("opencode", Path(path)))
    _delete_session(database, session_id)

    shown = run("show", session_id, "--raw")
    assert shown.exit_code == 0 and shown.stdout_bytes == records
    report = json.loads(run("index", "--json").stdout)  # the copy is never parsed as a transcript
    assert report["failed_files"] == 0 and report["files_changed"] == 0
    row = archive_row(conn, session_id, "")
    assert row is not None and row.source_gone_at is not None  # counted as kept after the agent deleted it
    assert json.loads(run("stats", "--json").stdout)["archived_originals_gone"] == 1
    assert run("show", session_id, "--raw").stdout_bytes == records  # and still served


def test_a_session_still_in_its_database_is_not_taken_for_gone(run, config: Config, monkeypatch) -> None:
    """A copy whose session the walk did not list (the agent's folder not searched this run) is gone only
    when its database no longer holds it: its synthetic path never exists as a file."""
    _database(config)
    assert run("index").exit_code == 0
    monkeypatch.setenv("MEMEX_OPENCODE_DB", str(config.opencode_db.with_name("elsewhere.db")))
    assert run("index").exit_code == 0
    monkeypatch.undo()
    conn = connect(config.db_path)
    gone = conn.execute("SELECT count(source_gone_at) FROM archive_streams WHERE agent = 'opencode'").fetchone()[0]
    assert gone == 0
