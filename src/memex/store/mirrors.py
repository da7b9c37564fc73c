"""Queries of mirrors: a local session's conversation entries as its mirror reads them, the mirror records,
their segments and the state a mirror is resumed from. What a mirror holds is decided in `memex.mirrors`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterator, Sequence
from typing import Any

# The state columns of `mirror_state`, in the order MirrorState declares them.
STATE_COLUMNS = (
    "line_index",
    "messages",
    "chars",
    "last_role",
    "last_start",
    "last_chars",
    "last_timestamp",
    "head",
    "tail_start",
    "content_hash",
    "recipe",
)


def mirrored_session(conn: sqlite3.Connection, session_id: str) -> sqlite3.Row | None:
    """The columns of a local session its mirror is made from."""
    return conn.execute(
        "SELECT session_id, agent, computer, project_dir, title, started_at, ended_at, resume_line_index "
        "FROM sessions WHERE session_id = ?",
        (session_id,),
    ).fetchone()


def conversation_entries(conn: sqlite3.Connection, session_id: str, from_line: int) -> list[sqlite3.Row]:
    """The main agent's prompts, answers and compaction summaries from line `from_line` on, in order."""
    return conn.execute(
        "SELECT line_index, kind, text, timestamp, message_id FROM entries WHERE session_id = ? AND agent_id = '' "
        "AND kind IN ('prompt', 'assistant', 'compact_summary') AND text IS NOT NULL AND line_index >= ? "
        "ORDER BY line_index",
        (session_id, from_line),
    ).fetchall()


def assistant_texts_before(
    conn: sqlite3.Connection, session_id: str, message_ids: Sequence[str], line: int
) -> Iterator[tuple[str, str]]:
    """(response id, raw text) of the main agent's assistant lines before `line` of these responses."""
    for index in range(0, len(message_ids), 500):
        chunk = list(message_ids[index : index + 500])
        yield from conn.execute(
            "SELECT message_id, text FROM entries INDEXED BY entries_message_id WHERE message_id IS NOT NULL "
            f"AND message_id IN ({','.join('?' * len(chunk))}) AND session_id = ? AND agent_id = '' "
            "AND kind = 'assistant' AND text IS NOT NULL AND line_index < ?",
            [*chunk, session_id, line],
        )


def pr_numbers(conn: sqlite3.Connection, session_id: str) -> list[int]:
    """The pull requests a session links to, by number."""
    rows = conn.execute("SELECT DISTINCT pr_number FROM pr_links WHERE session_id = ? ORDER BY 1", (session_id,))
    return [r[0] for r in rows]


def sessions_without_mirror(conn: sqlite3.Connection, among: Collection[str] | None = None) -> list[str]:
    """Local sessions holding conversation but no mirror yet (indexed before mirrors existed), of `among`
    when given."""
    if among is not None and not among:
        return []
    only = " AND s.session_id IN (SELECT value FROM json_each(?))" if among is not None else ""
    rows = conn.execute(
        "SELECT s.session_id FROM sessions s WHERE NOT EXISTS "
        "(SELECT 1 FROM mirror_records m WHERE m.session_id = s.session_id AND m.computer = s.computer) "
        "AND EXISTS (SELECT 1 FROM entries e WHERE e.session_id = s.session_id AND e.agent_id = '' "
        f"AND e.kind IN ('prompt', 'assistant', 'compact_summary') AND e.text IS NOT NULL){only} "
        "ORDER BY s.session_id",
        [json.dumps(sorted(among))] if among is not None else [],
    ).fetchall()
    return [r[0] for r in rows]


# --- records ----------------------------------------------------------------------------------------------


def record_of(conn: sqlite3.Connection, session_id: str, computer: str) -> sqlite3.Row | None:
    """(id, content_hash) of the stored mirror of `computer`'s session."""
    return conn.execute(
        "SELECT id, content_hash FROM mirror_records WHERE session_id = ? AND computer = ?", (session_id, computer)
    ).fetchone()


def put_record(conn: sqlite3.Connection, record: dict[str, Any]) -> int:
    """Insert or update the record of (session_id, computer); returns its id."""
    return int(
        conn.execute(
            "INSERT INTO mirror_records (session_id, computer, agent, project, title, timestamp_start, "
            "timestamp_end, metadata, content_hash, updated_at) VALUES (:session_id, :computer, :agent, "
            ":project, :title, :timestamp_start, :timestamp_end, :metadata, :content_hash, :updated_at) "
            "ON CONFLICT (session_id, computer) DO UPDATE SET agent = excluded.agent, project = excluded.project, "
            "title = excluded.title, timestamp_start = excluded.timestamp_start, "
            "timestamp_end = excluded.timestamp_end, metadata = excluded.metadata, "
            "content_hash = excluded.content_hash, updated_at = excluded.updated_at RETURNING id",
            record,
        ).fetchone()[0]
    )


def delete_record(conn: sqlite3.Connection, mirror_id: int) -> None:
    """Remove a stored mirror (its segments and vector go with it)."""
    conn.execute("DELETE FROM mirror_records WHERE id = ?", (mirror_id,))


def preferred_mirror(conn: sqlite3.Connection, session_id: str, computer: str | None) -> sqlite3.Row | None:
    """A session's stored mirror (every column of the `mirrors` view): `computer`'s when it has one, else the
    most recently updated."""
    return conn.execute(
        "SELECT * FROM mirrors WHERE session_id = ? ORDER BY computer = ? DESC, updated_at DESC LIMIT 1",
        (session_id, computer or ""),
    ).fetchone()


# --- segments ---------------------------------------------------------------------------------------------


def segments_of(conn: sqlite3.Connection, mirror_id: int) -> list[sqlite3.Row]:
    """(id, start, length, digest, title) of a mirror's segments, in order."""
    return conn.execute(
        "SELECT id, start, length, digest, title FROM mirror_segments WHERE mirror_id = ? ORDER BY start",
        (mirror_id,),
    ).fetchall()


def segment_bodies(conn: sqlite3.Connection, segment_ids: Sequence[int]) -> list[str]:
    """The text of these segments, in order."""
    marks = ",".join("?" * len(segment_ids))
    rows = conn.execute(f"SELECT body FROM mirror_segments WHERE id IN ({marks}) ORDER BY start", list(segment_ids))
    return [r[0] for r in rows]


def segment_spans(conn: sqlite3.Connection, segment_ids: Sequence[int]) -> list[tuple[int, str]]:
    """(start, message spans as JSON) of these segments, in order."""
    marks = ",".join("?" * len(segment_ids))
    rows = conn.execute(f"SELECT start, spans FROM mirror_segments WHERE id IN ({marks}) ORDER BY start", segment_ids)
    return [(r[0], r[1]) for r in rows]


def delete_segments(conn: sqlite3.Connection, segment_ids: Sequence[int]) -> None:
    for index in range(0, len(segment_ids), 500):
        chunk = list(segment_ids[index : index + 500])
        conn.execute(f"DELETE FROM mirror_segments WHERE id IN ({','.join('?' * len(chunk))})", chunk)


def move_segment(conn: sqlite3.Connection, segment_id: int, start: int) -> None:
    conn.execute("UPDATE mirror_segments SET start = ? WHERE id = ?", (start, segment_id))


def retitle_segment(conn: sqlite3.Connection, segment_id: int, title: str) -> None:
    conn.execute("UPDATE mirror_segments SET title = ? WHERE id = ?", (title, segment_id))


def insert_segments(conn: sqlite3.Connection, rows: Sequence[tuple[Any, ...]]) -> None:
    """New segments: (mirror_id, start, length, digest, title, spans JSON, body, fts_body) each."""
    conn.executemany(
        "INSERT INTO mirror_segments (mirror_id, start, length, digest, title, spans, body, fts_body) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


# --- resume state -----------------------------------------------------------------------------------------


def load_state(conn: sqlite3.Connection, session_id: str) -> sqlite3.Row | None:
    """A local session's mirror state (STATE_COLUMNS), if one was saved."""
    return conn.execute(
        f"SELECT {', '.join(STATE_COLUMNS)} FROM mirror_state WHERE session_id = ?", (session_id,)
    ).fetchone()


def save_state(conn: sqlite3.Connection, session_id: str, values: Sequence[Any]) -> None:
    """Replace a session's mirror state (values in STATE_COLUMNS order)."""
    conn.execute(
        f"INSERT OR REPLACE INTO mirror_state (session_id, {', '.join(STATE_COLUMNS)}) "
        f"VALUES (?{', ?' * len(STATE_COLUMNS)})",
        [session_id, *values],
    )
