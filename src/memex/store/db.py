"""The SQLite connection: WAL, foreign keys, busy timeout, migrations, clean rebuild of old schemas."""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

from memex.errors import StoreError, UserError
from memex.store.migrations import MIGRATIONS, MIN_COMPATIBLE_VERSION, SCHEMA_VERSION

_SIDE_FILES = ("-wal", "-shm")
# The migrations use DROP COLUMN, RETURNING and MATERIALIZED (SQLite 3.35, March 2021).
MIN_SQLITE = (3, 35, 0)


def _configure(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    conn.execute("PRAGMA foreign_keys = ON")


def _schema_version(conn: sqlite3.Connection) -> tuple[int, bool]:
    """(user_version, whether the file holds any table at all)."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    has_tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0] > 0
    return version, has_tables


def _set_aside(path: Path, version: int) -> Path:
    backup = path.with_name(path.name + ".bak")
    for suffix in ("", *_SIDE_FILES):
        with contextlib.suppress(FileNotFoundError):
            Path(str(path) + suffix).replace(Path(str(backup) + suffix))
    print(
        f"memex: the database {path} has an incompatible schema (version {version}); it was moved to "
        f"{backup} and a new one created. Run `memex index` to rebuild it from your transcripts.",
        file=sys.stderr,
    )
    return backup


def migrate(conn: sqlite3.Connection) -> int:
    """Apply the migrations this database lacks, each in its own transaction; return the new version."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    for number in range(version, SCHEMA_VERSION):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while we waited for the write lock.
            if conn.execute("PRAGMA user_version").fetchone()[0] > number:
                conn.execute("COMMIT")
                continue
            for statement in _statements(MIGRATIONS[number]):
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {number + 1}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return SCHEMA_VERSION


def _statements(script: str) -> Iterator[str]:
    """Split a migration script into statements (trigger bodies hold semicolons of their own)."""
    buffer = ""
    for line in script.splitlines(keepends=True):
        if line.strip().startswith("--"):
            continue
        buffer += line
        if sqlite3.complete_statement(buffer):
            if buffer.strip():
                yield buffer.strip()
            buffer = ""
    if buffer.strip():
        yield buffer.strip()


def connect(path: Path, busy_timeout_ms: int = 30_000) -> sqlite3.Connection:
    """Open (creating and migrating as needed) the database at `path`, in autocommit mode.

    Writers wrap their work in `transaction()`. An incompatible older schema is set aside and rebuilt.
    """
    if sqlite3.sqlite_version_info < MIN_SQLITE:
        raise StoreError(
            f"memex needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer; this Python has {sqlite3.sqlite_version}"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        _configure(conn, busy_timeout_ms)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        version, has_tables = _schema_version(conn)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot open the database {path}: {exc}") from None
    if version > SCHEMA_VERSION:
        conn.close()
        raise StoreError(
            f"the database {path} was written by a newer memex (schema {version}, this one knows "
            f"{SCHEMA_VERSION}); upgrade memex or set MEMEX_HOME elsewhere"
        )
    if (has_tables and version < MIN_COMPATIBLE_VERSION) or 0 < version < MIN_COMPATIBLE_VERSION:
        conn.close()
        _set_aside(path, version)
        return connect(path, busy_timeout_ms)
    if version < SCHEMA_VERSION:
        try:
            migrate(conn)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"cannot migrate the database {path}: {exc}") from None
    return conn


def connect_readonly(path: Path, busy_timeout_ms: int = 30_000) -> sqlite3.Connection:
    """Open an existing database for reading only (search and show work while a writer is busy)."""
    if not path.exists():
        raise UserError(f"no memex database at {path} yet: run `memex index` first")
    conn = connect(path, busy_timeout_ms)  # creates nothing new, but brings an old schema up to date
    conn.close()
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
        )
        _configure(conn, busy_timeout_ms)
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot open the database {path}: {exc}") from None
    return conn


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction (`BEGIN IMMEDIATE`): all of it lands, or none of it."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def dump_schema(conn: sqlite3.Connection) -> str:
    """The schema as SQL, in a stable order (compared against the `schema.sql` snapshot)."""
    rows = conn.execute(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' "
        "AND name NOT LIKE '%fts_data' AND name NOT LIKE '%fts_idx' AND name NOT LIKE '%fts_docsize' "
        "AND name NOT LIKE '%fts_config' ORDER BY type, name"
    ).fetchall()
    return "".join(" ".join(row[0].split()) + ";\n" for row in rows)
