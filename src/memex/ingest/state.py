"""Where each transcript stream stopped: line index, byte offsets, and what the file looked like then.

A stream is a session's main transcript (`sessions`) or one subagent transcript (`subagent_sessions`).
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Iterable
from typing import BinaryIO, Final

from memex.digest import blake2b
from memex.plain import Record
from memex.store import snapshots, streams


def is_copy_id(session_id: str, of: str) -> bool:
    """Whether `session_id` is `of`, or the id another file claiming session `of` is stored under: `of`, a
    dash and 8 hex digits of its path (`memex.ingest.pipeline._resolve_session_id`)."""
    if session_id == of:
        return True
    suffix = session_id[len(of) + 1 :]
    return session_id.startswith(f"{of}-") and len(suffix) == 8 and all(c in "0123456789abcdef" for c in suffix)


# Bytes hashed at the head of the consumed part and just before the stop point: enough to tell an
# append from a rewrite without reading the file again.
HEAD_CHECK_BYTES = 1024
TAIL_CHECK_BYTES = 256


class StreamState(Record):
    """Progress of one stream. `resume_*` is where the next run re-reads from (the provisional turn)."""

    __slots__ = (
        "bad_lines",
        "file_mtime_ns",
        "file_size",
        "head_hash",
        "last_compact_line_index",
        "last_line_index",
        "last_offset",
        "provisional_turn_start",
        "resume_line_index",
        "resume_offset",
        "tail_hash",
    )

    last_line_index: int
    last_offset: int
    resume_line_index: int
    resume_offset: int
    provisional_turn_start: int | None
    last_compact_line_index: int | None
    file_size: int | None
    file_mtime_ns: int | None
    head_hash: str | None
    tail_hash: str | None
    bad_lines: int

    def __init__(
        self,
        last_line_index: int = 0,
        last_offset: int = 0,
        resume_line_index: int = 0,
        resume_offset: int = 0,
        provisional_turn_start: int | None = None,
        last_compact_line_index: int | None = None,
        file_size: int | None = None,
        file_mtime_ns: int | None = None,
        head_hash: str | None = None,
        tail_hash: str | None = None,
        bad_lines: int = 0,
    ) -> None:
        self.last_line_index = last_line_index
        self.last_offset = last_offset
        self.resume_line_index = resume_line_index
        self.resume_offset = resume_offset
        self.provisional_turn_start = provisional_turn_start
        self.last_compact_line_index = last_compact_line_index
        self.file_size = file_size
        self.file_mtime_ns = file_mtime_ns
        self.head_hash = head_hash
        self.tail_hash = tail_hash
        self.bad_lines = bad_lines


_COLUMNS = list(StreamState.__annotations__)


def _digest(handle: BinaryIO, start: int, length: int) -> str:
    handle.seek(start)
    return blake2b(handle.read(length), digest_size=12).hexdigest()


def file_checks(handle: BinaryIO, consumed: int) -> tuple[str, str]:
    """Hashes of the head and of the tail of the first `consumed` bytes of a file."""
    head = _digest(handle, 0, min(consumed, HEAD_CHECK_BYTES))
    tail_start = max(0, consumed - TAIL_CHECK_BYTES)
    return head, _digest(handle, tail_start, consumed - tail_start)


def is_append_of(handle: BinaryIO, size: int, state: StreamState) -> bool:
    """True when the file still begins with the bytes this state consumed (it only grew, or is the same)."""
    if size < state.last_offset:
        return False
    return file_checks(handle, state.last_offset) == (state.head_hash, state.tail_hash)


def load_state(conn: sqlite3.Connection, session_id: str, agent_id: str) -> StreamState | None:
    """The stored progress of a stream, or None when it was never ingested."""
    row = streams.load(conn, session_id, agent_id, _COLUMNS)
    return StreamState(**dict(row)) if row else None


def save_state(
    conn: sqlite3.Connection, session_id: str, agent_id: str, transcript_path: str, state: StreamState, now: str
) -> None:
    """Record a stream's progress (the session row itself must exist)."""
    progress = {name: getattr(state, name) for name in _COLUMNS}
    streams.save(conn, session_id, agent_id, transcript_path, progress, now)


# What the store knows of a transcript file, by its path: how it looked and whose stream it is, as the plain
# tuple its snapshot holds (`memex.store.snapshots.Row`); its items by these indices. The first three are
# what a `memex.sources.files.Sieve` compares with the file on disk. Tuples, not a named tuple made of each:
# at 20,000 streams, making those cost a run that finds nothing changed ~5 ms.
StoredStream = snapshots.Row
FILE_SIZE: Final = 0
FILE_MTIME_NS: Final = 1
AGENT: Final = 2
SESSION_ID: Final = 3
AGENT_ID: Final = 4
TRANSCRIPT_PATH: Final = 5
_PATH = operator.itemgetter(TRANSCRIPT_PATH)


def stored_streams(conn: sqlite3.Connection) -> dict[str, StoredStream]:
    """Every ingested transcript by its stored (real) path: one read for a whole `memex index` run, from the
    store's snapshot of them and the log of what changed since (`memex.store.snapshots`)."""
    found = snapshots.read_streams(conn)
    known = _by_path(found.rows)  # tens of thousands: made into a dict without a Python-level call
    _apply_changes(known, found.gone, found.fresh)
    if found.retake:
        snapshots.take(conn, snapshots.STREAMS, found.rows, found.last_change)
    return known


def stored_streams_since(
    conn: sqlite3.Connection, known: dict[str, StoredStream] | None, last: int
) -> tuple[dict[str, StoredStream], int]:
    """`stored_streams` for a process that keeps them between runs (the warm server): `known` as of change
    `last` brought up to date from the log of changes (a new dict; the rows that did not change are the
    same objects), or read whole when there is no `known` or the log does not cover the span; and the
    last change they are up to date with."""
    changed = None if known is None else snapshots.streams_since(conn, last)
    if known is None or changed is None:
        now = snapshots.last_stream_change(conn)  # first: a change made during the read is applied next time
        return stored_streams(conn), now
    gone, fresh, now = changed
    if not gone and not fresh:
        return known, now
    updated = dict(known)
    _apply_changes(updated, gone, fresh)
    return updated, now


def _apply_changes(known: dict[str, StoredStream], gone: list[str], fresh: list[snapshots.Row]) -> None:
    """Bring `known` to the store's rows: the streams' former paths out, their rows now in."""
    for path in gone:
        known.pop(path, None)
    known.update(_by_path(fresh))


def stored_streams_at(conn: sqlite3.Connection, paths: Iterable[str]) -> dict[str, StoredStream]:
    """`stored_streams` of these paths only (those the store holds): a run over named files reads their rows,
    not the tens of thousands of every stream."""
    return _by_path(streams.streams_at(conn, sorted(set(paths))))


def _by_path(rows: list[snapshots.Row]) -> dict[str, StoredStream]:
    return dict(zip(map(_PATH, rows), rows, strict=True))
