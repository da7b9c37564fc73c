"""The SQLite store: pragmas, migrations, snapshot, and the clean rebuild of incompatible schemas."""

from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memex.errors import StoreError
from memex.store.db import connect, connect_readonly, dump_schema
from memex.store.migrations import SCHEMA_VERSION
from memex.store.snapshot import SNAPSHOT, current_schema


def test_pragmas(tmp_path: Path) -> None:
    conn = connect(tmp_path / "m.db", busy_timeout_ms=1234)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 1234
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_snapshot_matches_migrations(tmp_path: Path) -> None:
    snapshot = SNAPSHOT.read_text()
    body = "".join(line + "\n" for line in snapshot.splitlines() if not line.startswith("--"))
    assert current_schema() == body, "schema.sql is stale: run `uv run python -m memex.store.snapshot`"
    # And the snapshot itself builds the same database.
    conn = sqlite3.connect(tmp_path / "from-snapshot.db")
    ordered = sorted(
        body.splitlines(),
        key=lambda s: (not s.startswith("CREATE TABLE"), "VIRTUAL" in s, s.startswith("CREATE TRIGGER")),
    )
    for statement in ordered:
        if statement.startswith("CREATE TABLE sqlite_sequence"):
            continue
        conn.execute(statement)
    assert dump_schema(conn).replace("CREATE TABLE sqlite_sequence(name,seq);\n", "") == body.replace(
        "CREATE TABLE sqlite_sequence(name,seq);\n", ""
    )


def test_old_schema_is_set_aside_and_rebuilt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "memex.db"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE conversations (id TEXT, body TEXT)")  # a pre-migration layout
    old.execute("INSERT INTO conversations VALUES ('a', 'b')")
    old.commit()
    old.close()
    conn = connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
    message = capsys.readouterr().err
    assert "incompatible schema" in message and "memex index" in message
    kept = sqlite3.connect(tmp_path / "memex.db.bak")
    assert kept.execute("SELECT count(*) FROM conversations").fetchone()[0] == 1


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "memex.db"
    newer = sqlite3.connect(path)
    newer.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    newer.close()
    with pytest.raises(StoreError, match="newer memex"):
        connect(path)


def test_readonly_connection_cannot_write(tmp_path: Path) -> None:
    path = tmp_path / "memex.db"
    connect(path).close()
    conn = connect_readonly(path)
    with pytest.raises(sqlite3.OperationalError):
        conn.execute("INSERT INTO sessions (session_id, agent, computer, updated_at) VALUES ('a','b','c','d')")


def test_not_a_database(tmp_path: Path) -> None:
    path = tmp_path / "memex.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot open"):
        connect(path)


def test_reading_a_current_store_writes_nothing(tmp_path: Path) -> None:
    """A reader of a store at this schema opens it read-only at once: a write-ahead log a process left
    behind (a hook ends with `os._exit`) is read, not checkpointed into the database file."""
    path = tmp_path / "memex.db"
    connect(path).close()
    insert = "INSERT INTO sessions (session_id, agent, computer, updated_at) VALUES ('s', 'claude', 'c', 't')"
    write = (
        "import os, sys; from pathlib import Path; from memex.store.db import connect; "
        f'connect(Path(sys.argv[1])).execute("{insert}"); os._exit(0)'
    )
    subprocess.run([sys.executable, "-c", write, str(path)], check=True)
    database = path.read_bytes()
    assert Path(f"{path}-wal").stat().st_size > 0
    conn = connect_readonly(path)
    assert [row[0] for row in conn.execute("SELECT session_id FROM sessions")] == ["s"]
    conn.close()
    assert path.read_bytes() == database and Path(f"{path}-wal").stat().st_size > 0


def test_a_reader_makes_a_store_left_readable_private_first(tmp_path: Path) -> None:
    path = tmp_path / "memex.db"
    connect(path).close()
    path.chmod(0o644)
    connect_readonly(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_opening_the_store_again_keeps_the_process_locks_so_another_process_cannot_delete_its_wal(
    tmp_path: Path,
) -> None:
    # POSIX drops every lock a process holds on a file when it closes any descriptor of that file: a daemon
    # whose API opened another connection lost its locks, the next command's close took itself for the
    # last connection and deleted the -wal and -shm, and the daemon's later writes went to a deleted file.
    path = tmp_path / "memex.db"
    daemon = connect(path)
    daemon.execute("CREATE TABLE t (x)")
    connect(path).close()
    connect_readonly(path).close()
    other = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT * FROM t').fetchall(); c.close()"
    subprocess.run([sys.executable, "-c", other, str(path)], check=True)
    assert Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
    daemon.execute("INSERT INTO t VALUES (1)")
    reader = sqlite3.connect(path)
    assert reader.execute("SELECT x FROM t").fetchall() == [(1,)]
    reader.close()
    daemon.close()
