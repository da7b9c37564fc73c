"""Queries of transcript streams' progress: where a session's main transcript (`sessions`) or one of its
subagent transcripts (`subagent_sessions`) stopped, and what the file looked like then. What the columns
mean is `memex.ingest.state.StreamState`'s."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any


def load(conn: sqlite3.Connection, session_id: str, agent_id: str, columns: Sequence[str]) -> sqlite3.Row | None:
    """The stored progress of a stream (these columns), or None when it was never ingested."""
    listed = ", ".join(columns)
    if agent_id:
        return conn.execute(
            f"SELECT {listed} FROM subagent_sessions WHERE session_id = ? AND agent_id = ?", (session_id, agent_id)
        ).fetchone()
    return conn.execute(
        f"SELECT {listed} FROM sessions WHERE session_id = ? AND file_size IS NOT NULL", (session_id,)
    ).fetchone()


def save(
    conn: sqlite3.Connection, session_id: str, agent_id: str, transcript_path: str, progress: dict[str, Any], now: str
) -> None:
    """Record a stream's progress (column -> value); the session row itself must exist."""
    assignments = ", ".join(f"{name} = ?" for name in progress)
    values = list(progress.values())
    if agent_id:
        conn.execute(
            "INSERT OR IGNORE INTO subagent_sessions (session_id, agent_id, transcript_path, updated_at) "
            "VALUES (?, ?, ?, ?)",
            (session_id, agent_id, transcript_path, now),
        )
        conn.execute(
            f"UPDATE subagent_sessions SET transcript_path = ?, updated_at = ?, {assignments} "
            "WHERE session_id = ? AND agent_id = ?",
            [transcript_path, now, *values, session_id, agent_id],
        )
    else:
        conn.execute(
            f"UPDATE sessions SET transcript_path = ?, updated_at = ?, {assignments} WHERE session_id = ?",
            [transcript_path, now, *values, session_id],
        )


# (file_size, file_mtime_ns, agent, session_id, agent_id, transcript_path) of the main and the subagent
# transcripts ingested (`every_stream`; `one_stream` adds the key).
_MAIN = (
    "SELECT file_size, file_mtime_ns, agent, session_id, '', transcript_path FROM sessions "
    "WHERE transcript_path IS NOT NULL AND file_size IS NOT NULL"
)
_SUB = (
    "SELECT sub.file_size, sub.file_mtime_ns, s.agent, sub.session_id, sub.agent_id, sub.transcript_path "
    "FROM subagent_sessions sub JOIN sessions s ON s.session_id = sub.session_id WHERE sub.file_size IS NOT NULL"
)


def every_stream(conn: sqlite3.Connection) -> list[tuple[int, int, str, str, str, str]]:
    """(file_size, file_mtime_ns, agent, session_id, agent_id, transcript_path) of every ingested transcript,
    as plain tuples (tens of thousands of rows, read once per `memex index` run)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor.execute(f"{_MAIN} UNION ALL {_SUB}").fetchall()


def one_stream(conn: sqlite3.Connection, session_id: str, agent_id: str) -> tuple[int, int, str, str, str, str] | None:
    """The `every_stream` row of one stream, or None when it holds no ingested transcript."""
    cursor = conn.cursor()
    cursor.row_factory = None
    if agent_id:
        return cursor.execute(f"{_SUB} AND sub.session_id = ? AND sub.agent_id = ?", (session_id, agent_id)).fetchone()
    return cursor.execute(f"{_MAIN} AND session_id = ?", (session_id,)).fetchone()


def streams_at(conn: sqlite3.Connection, paths: Sequence[str]) -> list[tuple[int, int, str, str, str, str]]:
    """The `every_stream` rows of the transcripts stored at these paths (indexed lookups: what a run over a
    few named files reads instead of every stream)."""
    cursor = conn.cursor()
    cursor.row_factory = None
    rows: list[tuple[int, int, str, str, str, str]] = []
    for index in range(0, len(paths), 500):
        chunk = list(paths[index : index + 500])
        marks = ",".join("?" * len(chunk))
        rows += cursor.execute(f"{_MAIN} AND transcript_path IN ({marks})", chunk).fetchall()
        rows += cursor.execute(f"{_SUB} AND sub.transcript_path IN ({marks})", chunk).fetchall()
    return rows
