"""Reading another program's SQLite database without getting in its way.

Agents that keep sessions in SQLite (OpenCode, Cursor) are usually running while memex reads. The database
is opened read-only through SQLite itself, so the write-ahead log beside it (`-wal`, where a running agent
keeps most of its recent data) is read too; a reader never blocks a WAL writer, and each read is one short
transaction closed at once (a rollback-journal database is then locked against writers for milliseconds
only). A read-only open cannot create the `-shm` index a WAL database needs when its folder is not
writable: the database is then read from a private copy of its files.

Synthetic transcript paths name one session of a database: `<database>#<session id>`.
"""

from __future__ import annotations

import contextlib
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from memex.sources.files import open_regular

# A read waits at most this long for the agent's own lock (a checkpoint, a rollback-journal write).
BUSY_TIMEOUT_S = 0.5
_HEADER = b"SQLite format 3\x00"
SEPARATOR = "#"


def is_sqlite(path: Path) -> bool:
    """Whether `path` is a regular file holding an SQLite database."""
    try:
        with open_regular(path) as handle:
            return handle.read(len(_HEADER)) == _HEADER
    except OSError:
        return False


def synthetic(database: Path, key: str) -> Path:
    """The transcript path of one session of a database."""
    return database.with_name(f"{database.name}{SEPARATOR}{key}")


def split(path: Path) -> tuple[Path, str] | None:
    """(database, session key) of a synthetic path, else None."""
    name, separator, key = path.name.rpartition(SEPARATOR)
    return (path.with_name(name), key) if separator and name and key else None


def _connect(database: Path) -> sqlite3.Connection:
    uri = f"file:{quote(str(database))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA query_only = 1")
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # fails here when it cannot be read
    return conn


@contextlib.contextmanager
def reading(database: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to `database` (with its WAL) inside one read transaction, closed on exit.

    Raises FileNotFoundError when the database is gone, sqlite3.Error when it cannot be read at all.
    """
    if not database.is_file():
        raise FileNotFoundError(str(database))
    copy: tempfile.TemporaryDirectory[str] | None = None
    try:
        conn = _connect(database)
    except sqlite3.OperationalError:  # e.g. a WAL database in a folder this user cannot write (no -shm)
        copy = tempfile.TemporaryDirectory(prefix="memex-sqlite-")
        for suffix in ("", "-wal"):
            source = Path(str(database) + suffix)
            if source.is_file():
                shutil.copyfile(source, Path(copy.name) / (database.name + suffix))
        conn = _connect(Path(copy.name) / database.name)
    try:
        conn.execute("BEGIN")
        yield conn
    finally:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        conn.close()
        if copy is not None:
            copy.cleanup()


def has_tables(database: Path, *tables: str) -> bool:
    """Whether `database` is an SQLite database holding every one of `tables`."""
    if not is_sqlite(database):
        return False
    try:
        with reading(database) as conn:
            names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except (OSError, sqlite3.Error):
        return False
    return set(tables) <= names


def version_key(database: Path) -> tuple[int, int]:
    """What changes whenever the database's content may have: the sizes and times of it and its WAL."""
    key = []
    for suffix in ("", "-wal"):
        try:
            stat = Path(str(database) + suffix).stat()
            key.append((stat.st_size, stat.st_mtime_ns))
        except FileNotFoundError:
            key.append((0, 0))
    return hash(tuple(key)), 0
