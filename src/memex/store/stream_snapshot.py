"""The stored streams' snapshot: `every_stream` kept as one marshal'd value, and made exact by a log.

Reading 20,000 rows through the sqlite3 module costs a `memex index` that finds nothing to do more than
anything but its walk (every row is six objects and a tuple, built one call at a time); loading them from
one value costs a fifth of that. The snapshot is never trusted alone: triggers (migration 11) log every
stream whose path, size, time or owner changes, in the transaction of the change, and a reader takes the
snapshot, the log past it and the logged streams as they are now in one read transaction. So what it gets
is the store's own state, whoever wrote to it. When the log has grown, the snapshot is taken again and the
log it covers dropped, once the log is long (by a writer that finds the store free, else by a later run).
"""

from __future__ import annotations

import marshal
import sqlite3
from dataclasses import dataclass, field

from memex.store import streams

Row = tuple[int, int, str, str, str, str]

# A snapshot whose log holds more than this many changes is not used but taken again: a logged stream costs
# a query of its own (~20 microseconds), a new snapshot the row-by-row read it replaces once, and writing as
# many bytes as it holds (~180 per stream). A run after a backfill finds its whole log too long.
RETAKE_AFTER_CHANGES = 256


@dataclass
class Streams:
    """What the store holds of every stream: `rows` (the snapshot's, or `every_stream`'s), less the entries
    of the paths in `gone`, plus `fresh` (the logged streams as they are now), in that order."""

    rows: list[Row]
    gone: list[str] = field(default_factory=list)
    fresh: list[Row] = field(default_factory=list)
    # Whether `rows` were read row by row (as of `last_change`), to be kept as the new snapshot.
    retake: bool = False
    last_change: int = 0


def read(conn: sqlite3.Connection) -> Streams:
    """Every ingested stream: from the snapshot and its log when the store has one and the log is short,
    else row by row."""
    cursor = conn.cursor()
    cursor.row_factory = None
    own = not conn.in_transaction
    if own:
        cursor.execute("BEGIN")  # the snapshot, its log and the rows it names as of one moment
    try:
        try:
            snapshot = cursor.execute("SELECT last_change, data FROM stream_snapshot WHERE id = 1").fetchone()
        except sqlite3.OperationalError:  # a store not migrated yet (a read-only connection)
            return Streams(streams.every_stream(conn))
        if snapshot is not None:
            changes = cursor.execute(
                "SELECT old_path, session_id, agent_id FROM stream_changes WHERE id > ? ORDER BY id LIMIT ?",
                (snapshot[0], RETAKE_AFTER_CHANGES + 1),
            ).fetchall()
            if len(changes) <= RETAKE_AFTER_CHANGES:
                keys = dict.fromkeys((session_id, agent_id) for _, session_id, agent_id in changes)
                fresh = [row for row in (streams.one_stream(conn, *key) for key in keys) if row is not None]
                return Streams(marshal.loads(snapshot[1]), [old for old, _, _ in changes if old is not None], fresh)
        last = cursor.execute("SELECT coalesce(max(id), 0) FROM stream_changes").fetchone()[0]
        return Streams(streams.every_stream(conn), retake=True, last_change=last)
    finally:
        if own:
            cursor.execute("COMMIT")


def take(conn: sqlite3.Connection, rows: list[Row], last_change: int) -> bool:
    """Store `rows` (plain tuples: the state as of `last_change`) as the snapshot and drop the log it covers,
    unless a newer snapshot is there already. Only when the store is free at once: a snapshot is never worth
    waiting for a writer (nor possible on a read-only store). Returns whether it was stored."""
    waited = conn.execute("PRAGMA busy_timeout").fetchone()[0]
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.execute(
                "INSERT INTO stream_snapshot (id, last_change, data) VALUES (1, ?, ?) ON CONFLICT (id) DO UPDATE "
                "SET last_change = excluded.last_change, data = excluded.data "
                "WHERE excluded.last_change >= stream_snapshot.last_change",
                (last_change, marshal.dumps(rows)),
            )
            conn.execute("DELETE FROM stream_changes WHERE id <= (SELECT last_change FROM stream_snapshot)")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.OperationalError:  # busy, read-only, full: the next run takes it
        return False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {int(waited)}")
    return True
