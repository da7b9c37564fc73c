"""The SQLite connection: WAL, foreign keys, busy timeout, migrations, clean rebuild of old schemas."""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path

from memex.errors import StoreError, UserError
from memex.store.migrations import MIGRATIONS, MIN_COMPATIBLE_VERSION, SCHEMA_VERSION, SNAPSHOTS_VERSION

_SIDE_FILES = ("-wal", "-shm")
# The migrations use DROP COLUMN, RETURNING and MATERIALIZED (SQLite 3.35, March 2021).
MIN_SQLITE = (3, 35, 0)
# The store holds every secret the transcripts held: its files are the user's alone (SQLite gives the
# -wal and -shm files the mode of the database file), and so is a folder memex creates for it.
FILE_MODE = 0o600
FOLDER_MODE = 0o700
# What "read-only" looks like to the operating system (a permission, or a read-only mount).
_READ_ONLY_ERRNOS = {errno.EACCES, errno.EPERM, errno.EROFS}


def is_read_only_error(error: OSError) -> bool:
    """Whether `error` says a file or folder cannot be written (not that it is missing or broken)."""
    return error.errno in _READ_ONLY_ERRNOS


def make_private_folder(folder: Path) -> None:
    """Create `folder` (and its parents) for memex's files, the folder itself readable by its owner only."""
    folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)


def open_private(path: Path, flags: int = os.O_WRONLY | os.O_APPEND) -> int:
    """A file descriptor on `path`, the file created with mode 0600 when it does not exist."""
    return os.open(path, flags | os.O_CREAT, FILE_MODE)


def store_writable(path: Path) -> bool:
    """Whether this process may write the store at `path` (its folder, and the file when it exists):
    False on a read-only mount or without the permission."""
    folder = path.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    return not path.exists() or os.access(path, os.W_OK)


def _check_folder(folder: Path) -> None:
    if folder.exists() and not folder.is_dir():
        raise UserError(f"MEMEX_HOME {folder} is not a folder: point MEMEX_HOME at a folder")


def _prepare_folder(path: Path) -> None:
    """The store's folder, created if missing; one clear line when it is a file or cannot be written."""
    folder = path.parent
    _check_folder(folder)
    try:
        make_private_folder(folder)
    except OSError as exc:
        raise UserError(f"cannot create MEMEX_HOME {folder}: {exc.strerror or exc}") from None
    if not store_writable(path):
        raise UserError(
            f"MEMEX_HOME {folder} is read-only: this command writes to the store (search, show, sessions, "
            "stats and computers read it as it is)"
        )


def _make_private(path: Path) -> None:
    """The database file exists with mode 0600 before SQLite opens it (its -wal and -shm get the same
    mode); an existing store, or one an older memex left readable by others, is made private.

    An existing file is never opened here: closing any descriptor of it would drop every lock this
    process's SQLite connections hold on it (POSIX), and another process closing its last connection would
    then delete the -wal and -shm those connections still write to."""
    with contextlib.suppress(FileExistsError):
        os.close(open_private(path, os.O_RDWR | os.O_EXCL))
    for suffix in ("", *_SIDE_FILES):
        file = Path(str(path) + suffix)
        with contextlib.suppress(OSError):  # gone meanwhile, or not ours: left as it is
            if file.stat().st_mode & 0o077:
                file.chmod(FILE_MODE)


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
            if number + 1 > SNAPSHOTS_VERSION:
                conn.execute("DELETE FROM snapshots")
                conn.execute("DELETE FROM mirror_check")
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
    _prepare_folder(path)
    _make_private(path)
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


def set_busy_timeout(conn: sqlite3.Connection, milliseconds: int) -> None:
    """How long this connection waits for another writer before giving up."""
    conn.execute(f"PRAGMA busy_timeout = {int(milliseconds)}")


def integrity(conn: sqlite3.Connection) -> str:
    """SQLite's quick integrity check of the store: "ok", or the first problem found."""
    return str(conn.execute("PRAGMA quick_check(1)").fetchone()[0])


def connect_existing(path: Path, busy_timeout_ms: int = 30_000) -> sqlite3.Connection | None:
    """The database at `path` for a reader that must never create an empty one (a hook, the warm server),
    or None when there is none yet."""
    if not path.exists():
        return None
    return connect(path, busy_timeout_ms)


def connect_readonly(path: Path, busy_timeout_ms: int = 30_000) -> sqlite3.Connection:
    """Open an existing database for reading only (search and show work while a writer is busy, and on
    a store this process cannot write: a read-only mount, another user's folder)."""
    _check_folder(path.parent)
    if not path.exists():
        raise UserError(f"no memex database at {path} yet: run `memex index` first")
    if store_writable(path):
        current = _current_readonly(path, busy_timeout_ms)
        if current is not None:
            return current
        conn = connect(path, busy_timeout_ms)  # creates nothing new, but brings an old schema up to date
        conn.close()
        return _open_readonly(path, busy_timeout_ms)
    try:
        conn = _open_readonly(path, busy_timeout_ms)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
    except (sqlite3.OperationalError, StoreError):
        # WAL needs its -shm file, which a read-only folder cannot get: nobody can be writing this store
        # (it cannot create its -wal either), so it is read as an immutable file.
        conn = _open_readonly(path, busy_timeout_ms, "&immutable=1")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"cannot read the database {path}: {exc}") from None
    if version != SCHEMA_VERSION:
        conn.close()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the database {path} was written by a newer memex (schema {version}, this one knows "
                f"{SCHEMA_VERSION}); upgrade memex or set MEMEX_HOME elsewhere"
            )
        raise StoreError(
            f"the database {path} has schema {version} and this memex needs {SCHEMA_VERSION}; it is read-only "
            "here: run any memex command once where it can be written to bring it up to date"
        )
    return conn


def _current_readonly(path: Path, busy_timeout_ms: int) -> sqlite3.Connection | None:
    """A read-only connection to a private store already at this schema (what a read command finds nearly
    always: one read of the schema version, not a read-write connection opened and checkpointed first),
    else None: `connect` then makes it private, migrates it or sets it aside."""
    try:
        if path.stat().st_mode & 0o077:
            return None
        conn = _open_readonly(path, busy_timeout_ms)
    except (OSError, StoreError):
        return None
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            return conn
    except sqlite3.DatabaseError:
        pass
    conn.close()
    return None


def _open_readonly(path: Path, busy_timeout_ms: int, flags: str = "") -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro{flags}", uri=True, isolation_level=None, check_same_thread=False
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
