"""Queries over `archive_streams`: what each compressed copy of a transcript holds (a cache of the files)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterable
from typing import Any

from memex.plain import Record
from memex.store.snapshots import archive_sources


class ArchiveRow(Record):
    """One archived stream as the store remembers it."""

    __slots__ = (
        "agent",
        "agent_id",
        "archive_path",
        "pieces",
        "raw_bytes",
        "session_id",
        "source_gone_at",
        "source_mtime_ns",
        "source_path",
        "source_size",
        "stored_bytes",
        "updated_at",
    )

    session_id: str
    agent_id: str
    agent: str
    source_path: str
    archive_path: str  # relative to the archive folder
    raw_bytes: int
    stored_bytes: int
    pieces: int
    source_size: int | None
    source_mtime_ns: int | None
    source_gone_at: str | None
    updated_at: str

    def __init__(
        self,
        session_id: str,
        agent_id: str,
        agent: str,
        source_path: str,
        archive_path: str,
        raw_bytes: int,
        stored_bytes: int,
        pieces: int,
        source_size: int | None,
        source_mtime_ns: int | None,
        source_gone_at: str | None,
        updated_at: str,
    ) -> None:
        self.session_id = session_id
        self.agent_id = agent_id
        self.agent = agent
        self.source_path = source_path
        self.archive_path = archive_path
        self.raw_bytes = raw_bytes
        self.stored_bytes = stored_bytes
        self.pieces = pieces
        self.source_size = source_size
        self.source_mtime_ns = source_mtime_ns
        self.source_gone_at = source_gone_at
        self.updated_at = updated_at


_COLUMNS = list(ArchiveRow.__annotations__)


def _row(found: Any) -> ArchiveRow:
    return ArchiveRow(**{name: found[name] for name in _COLUMNS})


def archive_row(conn: sqlite3.Connection, session_id: str, agent_id: str) -> ArchiveRow | None:
    """The archived stream (session, agent id), or None."""
    found = conn.execute(
        f"SELECT {', '.join(_COLUMNS)} FROM archive_streams WHERE session_id = ? AND agent_id = ?",
        (session_id, agent_id),
    ).fetchone()
    return _row(found) if found else None


def archive_rows(
    conn: sqlite3.Connection, session_ids: list[str] | None = None, outside: Collection[str] = ()
) -> list[ArchiveRow]:
    """Every archived stream (of `session_ids` when given), main transcripts before subagents; those whose
    source path is one of `outside` are passed over before their row is read (the transcripts found on
    disk: a backfilled store has a copy of each, so only their source paths are read)."""
    sql = f"SELECT {', '.join(_COLUMNS)} FROM archive_streams"
    params: list[Any] = []
    if session_ids is not None:
        sql += f" WHERE session_id IN ({', '.join('?' * len(session_ids))})"
        params = list(session_ids)
    elif outside:
        # The source paths from their snapshot (memex.store.snapshots), but those found: only the copies of
        # the sources not found are read, through the index on source_path.
        others = archive_sources(conn, outside)
        if not others:
            return []
        sql += " WHERE source_path IN (SELECT value FROM json_each(?))"
        params = [json.dumps(sorted(others))]
    rows = conn.execute(sql + " ORDER BY agent_id != '', session_id, agent_id", params)
    return [_row(r) for r in rows if r["source_path"] not in outside]


def archive_paths(conn: sqlite3.Connection) -> set[str]:
    """Where every archived stream's copy lives, relative to the archive folder."""
    return {path for (path,) in conn.execute("SELECT archive_path FROM archive_streams")}


# The row of `archive_listings` that holds, instead of a folder's time, the wall-clock time (ns) at which
# every recorded copy was last looked at (`memex.archive.reader.mark_lost_copies`).
COPIES_CHECKED_AT = "/"


def listed_folders(conn: sqlite3.Connection) -> dict[str, int]:
    """The archive folders (`''`, an agent's) as they were when the store last knew every copy in them."""
    sql = "SELECT folder, mtime_ns FROM archive_listings WHERE folder != ?"
    return dict(conn.execute(sql, (COPIES_CHECKED_AT,)).fetchall())


def save_listed_folders(conn: sqlite3.Connection, stamps: dict[str, int]) -> None:
    """Record the archive folders' modification times (folder -> mtime_ns) after a complete listing."""
    conn.execute("DELETE FROM archive_listings WHERE folder != ?", (COPIES_CHECKED_AT,))
    conn.executemany("INSERT INTO archive_listings (folder, mtime_ns) VALUES (?, ?)", stamps.items())


def copies_checked_at(conn: sqlite3.Connection) -> int | None:
    """When (wall-clock ns) every recorded copy was last looked at, or None if never."""
    sql = "SELECT mtime_ns FROM archive_listings WHERE folder = ?"
    found = conn.execute(sql, (COPIES_CHECKED_AT,)).fetchone()
    return found[0] if found else None


def save_copies_checked_at(conn: sqlite3.Connection, when_ns: int) -> None:
    """Record that every recorded copy was looked at (those lost made pending) at `when_ns` (wall clock)."""
    sql = "INSERT OR REPLACE INTO archive_listings (folder, mtime_ns) VALUES (?, ?)"
    conn.execute(sql, (COPIES_CHECKED_AT, when_ns))


def save_archive_row(conn: sqlite3.Connection, row: ArchiveRow) -> None:
    """Insert or replace the record of one archived stream."""
    conn.execute(
        f"INSERT OR REPLACE INTO archive_streams ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
        [getattr(row, name) for name in _COLUMNS],
    )


def pending_streams(conn: sqlite3.Connection) -> set[tuple[str, str]]:
    """(session id, agent id) of the streams whose copy is not known to match what was indexed."""
    return {(r[0], r[1]) for r in conn.execute("SELECT session_id, agent_id FROM archive_pending")}


def pending_sources(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """(agent, transcript path) of the pending streams, main sessions and subagents."""
    return conn.execute(
        "SELECT s.agent, coalesce(sub.transcript_path, s.transcript_path) FROM archive_pending p "
        "JOIN sessions s ON s.session_id = p.session_id LEFT JOIN subagent_sessions sub "
        "ON p.agent_id != '' AND sub.session_id = p.session_id AND sub.agent_id = p.agent_id "
        "WHERE p.agent_id = '' OR sub.agent_id IS NOT NULL"
    ).fetchall()


def copy_needed(conn: sqlite3.Connection, streams: Iterable[tuple[str, str]]) -> None:
    """The streams' copies must be made again (lost from the archive): they are pending."""
    conn.executemany("INSERT OR IGNORE INTO archive_pending (session_id, agent_id) VALUES (?, ?)", list(streams))


def copy_kept(conn: sqlite3.Connection, session_id: str, agent_id: str) -> None:
    """The stream's copy matches its source (or it has none to copy): it is no longer pending."""
    conn.execute("DELETE FROM archive_pending WHERE session_id = ? AND agent_id = ?", (session_id, agent_id))


def is_pending(conn: sqlite3.Connection, session_id: str, agent_id: str) -> bool:
    """Whether the stream is pending (`archive_pending`)."""
    sql = "SELECT 1 FROM archive_pending WHERE session_id = ? AND agent_id = ?"
    return conn.execute(sql, (session_id, agent_id)).fetchone() is not None


def mark_source_gone(conn: sqlite3.Connection, session_id: str, agent_id: str, when: str) -> None:
    """Record that the source of an archived stream is no longer on disk (the first time it was noticed)."""
    conn.execute(
        "UPDATE archive_streams SET source_gone_at = coalesce(source_gone_at, ?) WHERE session_id = ? AND agent_id = ?",
        (when, session_id, agent_id),
    )


def delete_archive_rows(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """Forget the archived streams of a session; returns their archive paths (the files are the caller's)."""
    paths = [r[0] for r in conn.execute("SELECT archive_path FROM archive_streams WHERE session_id = ?", (session_id,))]
    conn.execute("DELETE FROM archive_streams WHERE session_id = ?", (session_id,))
    return paths


def archive_totals(conn: sqlite3.Connection) -> dict[str, int]:
    """Streams archived, transcript bytes they hold, bytes they take, and how many have lost their source."""
    streams, raw, stored, gone = conn.execute(
        "SELECT count(*), coalesce(sum(raw_bytes), 0), coalesce(sum(stored_bytes), 0), "
        "count(source_gone_at) FROM archive_streams"
    ).fetchone()
    return {"streams": streams, "raw_bytes": raw, "stored_bytes": stored, "sources_gone": gone}


def archive_statistics(conn: sqlite3.Connection) -> dict[str, Any]:
    """What `memex stats` says of the archive: copies, their size, the compression ratio, lost originals."""
    totals = archive_totals(conn)
    ratio = round(totals["raw_bytes"] / totals["stored_bytes"], 2) if totals["stored_bytes"] else None
    return {
        "archived_transcripts": totals["streams"],
        "archived_transcript_bytes": totals["raw_bytes"],
        "archive_bytes": totals["stored_bytes"],
        "archive_ratio": ratio,
        "archived_originals_gone": totals["sources_gone"],
    }


def archived_sizes(conn: sqlite3.Connection) -> dict[str, int]:
    """Source path -> bytes of it the archive holds."""
    return dict(conn.execute("SELECT source_path, raw_bytes FROM archive_streams").fetchall())


def publication_backlog(conn: sqlite3.Connection) -> tuple[int, int]:
    """(mirrors in the outbox, forgettings asked here, under any name of this computer, not yet published)."""
    waiting = conn.execute("SELECT count(*) FROM outbox").fetchone()[0]
    unsent = conn.execute("SELECT count(*) FROM forgotten WHERE published_at IS NULL").fetchone()[0]
    return waiting, unsent
