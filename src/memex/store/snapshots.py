"""Snapshots of what every `memex index` reads whole, each one marshal'd value kept with a log of changes.

Reading 20,000 rows through the sqlite3 module costs a `memex index` that finds nothing to do more than
anything but its walk (every row is a few objects and a tuple, built one call at a time); loading them
from one value costs a fifth of that. Two things are kept so (migration 11):

- the stored streams (`every_stream`): exact. Triggers log every stream whose path, size, time or owner
  changes, in the transaction of the change; a reader takes the snapshot, the log past it and the logged
  streams as they are now in one read transaction, so it gets the store's own state whoever wrote to it.
- the archive's source paths: a superset. Triggers log every source path a copy is recorded under; a path
  no copy has any more costs its reader one query that finds nothing.

A snapshot whose log has grown long is not used: the rows are read one by one, and kept as the new
snapshot with the log they cover dropped (by a writer that finds the store free, else by a later run).
The stream log also names the sessions whose mirror went, so the check for sessions without a mirror
looks only at those it names since the last check (`sessions_to_check`).
"""

from __future__ import annotations

import marshal
import sqlite3
from collections.abc import Collection, Iterable, Iterator
from itertools import filterfalse
from typing import Any

from memex.plain import Record
from memex.store import streams

Row = tuple[int, int, str, str, str, str]

STREAMS = "streams"
ARCHIVE_SOURCES = "archive_sources"

# A snapshot whose log holds more than this many changes is read again row by row and taken again: a logged
# stream costs a query of its own (~20 microseconds), a new snapshot the row-by-row read it replaces once
# and as many bytes written as it holds (~180 per stream). A run after a backfill finds its log too long.
RETAKE_AFTER_CHANGES = 256
# The log of changes kept beside each kind of snapshot.
_LOGS = {STREAMS: "stream_changes", ARCHIVE_SOURCES: "archive_source_changes"}


class Streams(Record):
    """What the store holds of every stream: `rows` (the snapshot's, or `every_stream`'s), less the entries
    of the paths in `gone`, plus `fresh` (the logged streams as they are now), in that order."""

    __slots__ = ("fresh", "gone", "last_change", "retake", "rows")

    rows: list[Row]
    gone: list[str]
    fresh: list[Row]
    # Whether `rows` were read row by row (as of `last_change`), to be kept as the new snapshot.
    retake: bool
    last_change: int

    def __init__(
        self,
        rows: list[Row],
        gone: list[str] | None = None,
        fresh: list[Row] | None = None,
        retake: bool = False,
        last_change: int = 0,
    ) -> None:
        self.rows = rows
        self.gone = [] if gone is None else gone
        self.fresh = [] if fresh is None else fresh
        self.retake = retake
        self.last_change = last_change


def read_streams(conn: sqlite3.Connection) -> Streams:
    """Every ingested stream: from the snapshot and its log when the store has one and the log is short,
    else row by row."""
    with _reading(conn) as cursor:
        snapshot = _snapshot(cursor, STREAMS)
        if snapshot is None:  # a store not migrated yet (a read-only connection)
            return Streams(streams.every_stream(conn))
        if snapshot:
            changed = _streams_changed(conn, cursor, snapshot[0])
            if changed is not None:
                return Streams(marshal.loads(snapshot[1]), *changed)
        return Streams(streams.every_stream(conn), retake=True, last_change=_last_change(cursor, STREAMS))


def streams_since(conn: sqlite3.Connection, last: int) -> tuple[list[str], list[Row], int] | None:
    """What changed in the stored streams after change `last` (`Streams.gone` and `fresh` as `read_streams`
    gives them past its snapshot) and the last change now, read in one transaction; None when the log no
    longer covers that span (a snapshot taken since dropped it) or holds more than RETAKE_AFTER_CHANGES."""
    with _reading(conn) as cursor:
        now = _sequence(cursor)
        if now < last:  # another store under the same name
            return None
        changed = _streams_changed(conn, cursor, last, now - last)
        return None if changed is None else (*changed, now)


def _streams_changed(
    conn: sqlite3.Connection, cursor: sqlite3.Cursor, since: int, expected: int | None = None
) -> tuple[list[str], list[Row]] | None:
    """The stored streams changed after change `since`, in the reading transaction of `cursor`: the paths
    they had before (`Streams.gone`) and their rows now (`fresh`). None when the log holds more than
    RETAKE_AFTER_CHANGES after it, or not the `expected` number of changes (ids are never reused: a gap is
    a span the log dropped)."""
    changes = _logged(cursor, STREAMS, "old_path, session_id, agent_id", since)
    if changes is None or (expected is not None and len(changes) != expected):
        return None
    keys = dict.fromkeys((session_id, agent_id) for _, session_id, agent_id in changes)
    fresh = [row for row in (streams.one_stream(conn, *key) for key in keys) if row is not None]
    return [old for old, _, _ in changes if old is not None], fresh


def last_stream_change(conn: sqlite3.Connection) -> int:
    """The id of the last change ever logged to the stored streams (0: none), dropped from the log or not."""
    with _reading(conn) as cursor:
        return _sequence(cursor)


def _sequence(cursor: sqlite3.Cursor) -> int:
    found = cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = 'stream_changes'").fetchone()
    return int(found[0]) if found else 0


def archive_sources(conn: sqlite3.Connection, outside: Collection[str] = ()) -> set[str]:
    """Every source path the archive holds a copy of, and perhaps a few it no longer does; but those in
    `outside` (the transcripts found on disk: tens of thousands, each looked up once, never made a set)."""

    def kept(paths: Iterable[str]) -> Iterator[str]:
        return filterfalse(outside.__contains__, paths)

    with _reading(conn) as cursor:
        snapshot = _snapshot(cursor, ARCHIVE_SOURCES)
        if snapshot is None:
            return set(kept(path for (path,) in cursor.execute("SELECT source_path FROM archive_streams")))
        if snapshot:
            logged = _logged(cursor, ARCHIVE_SOURCES, "source_path", snapshot[0])
            if logged is not None:
                sources: set[str] = set(kept(marshal.loads(snapshot[1])))
                sources.update(kept(path for (path,) in logged))
                return sources
        last = _last_change(cursor, ARCHIVE_SOURCES)
        paths = [path for (path,) in cursor.execute("SELECT source_path FROM archive_streams")]
    take(conn, ARCHIVE_SOURCES, paths, last)
    return set(kept(paths))


class _reading:
    """One read transaction (the snapshot, its log and the rows it names as of one moment), unless the
    connection is in a transaction already; gives a cursor that returns plain tuples."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.own = not conn.in_transaction

    def __enter__(self) -> sqlite3.Cursor:
        cursor = self.conn.cursor()
        cursor.row_factory = None
        if self.own:
            cursor.execute("BEGIN")
        return cursor

    def __exit__(self, *exc: object) -> None:
        if self.own:
            self.conn.execute("COMMIT")


def _snapshot(cursor: sqlite3.Cursor, kind: str) -> tuple[int, bytes] | tuple[()] | None:
    """(last change, data) of the snapshot of `kind`; () when there is none yet; None on a store that has
    no snapshots (not migrated: only a read-only connection sees one)."""
    try:
        found = cursor.execute("SELECT rowid, last_change FROM snapshots WHERE kind = ?", (kind,)).fetchone()
    except sqlite3.OperationalError:
        return None
    if not found:
        return ()
    # Read as a blob, straight into the one bytes object: a column's value is first copied whole into
    # SQLite's memory (3.5 MB at 20,000 streams: ~2 ms and 900 page faults more).
    with cursor.connection.blobopen("snapshots", "data", found[0], readonly=True) as blob:
        return found[1], blob.read()


def _logged(cursor: sqlite3.Cursor, kind: str, columns: str, since: int) -> list[tuple[Any, ...]] | None:
    """`columns` of the changes to `kind` logged after change `since`, in order; None when there are more
    than RETAKE_AFTER_CHANGES (the snapshot is then read again row by row)."""
    changes = cursor.execute(
        f"SELECT {columns} FROM {_LOGS[kind]} WHERE id > ? ORDER BY id LIMIT ?", (since, RETAKE_AFTER_CHANGES + 1)
    ).fetchall()
    return changes if len(changes) <= RETAKE_AFTER_CHANGES else None


def _last_change(cursor: sqlite3.Cursor, kind: str) -> int:
    """The last change to `kind` logged (0: none)."""
    return int(cursor.execute(f"SELECT coalesce(max(id), 0) FROM {_LOGS[kind]}").fetchone()[0])


def take(conn: sqlite3.Connection, kind: str, value: list[Any], last_change: int) -> bool:
    """Store `value` (plain tuples and strings: the state as of `last_change`) as the snapshot of `kind` and
    drop the log it covers, unless a newer snapshot is there already (only when the store is free at once,
    `_when_free`). Returns whether it was stored."""
    return _when_free(
        conn,
        (
            "INSERT INTO snapshots (kind, last_change, data) VALUES (?, ?, ?) ON CONFLICT (kind) DO UPDATE "
            "SET last_change = excluded.last_change, data = excluded.data "
            "WHERE excluded.last_change >= snapshots.last_change",
            (kind, last_change, marshal.dumps(value)),
        ),
        (f"DELETE FROM {_LOGS[kind]} WHERE id <= (SELECT last_change FROM snapshots WHERE kind = ?)", (kind,)),
    )


def sessions_to_check(conn: sqlite3.Connection) -> tuple[set[str] | None, int]:
    """The sessions that can have come to hold conversation without a mirror since the last check (their
    stream changed, or their mirror went: the stream log names both), or None when the log no longer
    covers that span (every session is to be checked); and the last change the answer covers."""
    with _reading(conn) as cursor:
        try:
            checked = cursor.execute("SELECT verified FROM mirror_check").fetchone()
        except sqlite3.OperationalError:  # a store not migrated yet
            return None, 0
        last = _sequence(cursor)
        if checked is None or checked[0] > last:
            return None, last
        named = cursor.execute("SELECT session_id FROM stream_changes WHERE id > ?", (checked[0],)).fetchall()
        if len(named) != last - checked[0]:  # ids are never reused: a gap is a span the log dropped
            return None, last
        return {session_id for (session_id,) in named}, last


def sessions_checked(conn: sqlite3.Connection, last_change: int) -> None:
    """Record that every session is known to have its mirror as of `last_change` (when the store is free)."""
    _when_free(
        conn,
        (
            "INSERT INTO mirror_check (id, verified) VALUES (1, ?) ON CONFLICT (id) DO UPDATE "
            "SET verified = excluded.verified WHERE excluded.verified > mirror_check.verified",
            (last_change,),
        ),
    )


def _when_free(conn: sqlite3.Connection, *statements: tuple[str, tuple[Any, ...]]) -> bool:
    """Run `statements` in one write transaction if the store is free at once: what they keep is never
    worth waiting for a writer for (nor possible on a read-only store). Returns whether they ran."""
    waited = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for sql, parameters in statements:
                conn.execute(sql, parameters)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.OperationalError:  # busy, read-only, full: the next run does it
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(waited)}")
    return True
