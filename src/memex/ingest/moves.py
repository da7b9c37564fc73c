"""A transcript that moved: the same, unchanged file found at a new path while its stored path is gone.

A store copied from another place, an agent's folder or a home renamed: every transcript is found where
the store does not know it. `plan_ingest` recognises each as its stored stream, unchanged (same session,
size and time), but nothing recorded the new path, so every later `memex index` planned it again (a few
queries, `stat`s and opens per file: 5.8 s a run at 20,000 files) instead of sieving it out by path.

The rule: a stream's path is moved to where it was found only when its stored path no longer exists. When
both exist, the new file is a copy (`memex.ingest.state.is_copy_id`), indexed as a session of its own, as
before; a hard link (one inode, two paths, both walked) is such a copy too, or the stored path would swap
between its two names every run.
"""

from __future__ import annotations

import sqlite3


def stored_path(conn: sqlite3.Connection, session_id: str, agent_id: str) -> str | None:
    """The path a stream was last read from, as the store holds it."""
    if agent_id:
        sql = "SELECT transcript_path FROM subagent_sessions WHERE session_id = ? AND agent_id = ?"
        row = conn.execute(sql, (session_id, agent_id)).fetchone()
    else:
        row = conn.execute("SELECT transcript_path FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    return row[0] if row else None


# The stream's row, only while it is still the one planned (its path and its file's size and time).
_WHERE = "WHERE session_id = :session_id AND transcript_path = :old AND file_size = :size AND file_mtime_ns = :mtime"
_MAIN = f"UPDATE sessions SET transcript_path = :new {_WHERE}"
_SUBAGENT = f"UPDATE subagent_sessions SET transcript_path = :new {_WHERE} AND agent_id = :agent_id"


def record_move(
    conn: sqlite3.Connection, session_id: str, agent_id: str, old: str, new: str, size: int, mtime_ns: int
) -> bool:
    """Within the caller's transaction: record that the stream stored at `old` is the unchanged file at `new`
    (its size and time as stored), and its archive copy's source with it. Nothing else changes: no turn,
    vector or mirror. The update of the path makes the copy pending (a trigger): its header still names the
    old path, and keeping the copy (`memex.archive.copies.keep_copy`) rewrites it, pieces untouched, in the
    same run. False when the stored row no longer matches (another writer got there first)."""
    stream = _SUBAGENT if agent_id else _MAIN
    found = {"new": new, "session_id": session_id, "agent_id": agent_id, "old": old, "size": size, "mtime": mtime_ns}
    if not conn.execute(stream, found).rowcount:
        return False
    # The copy was made from the same bytes: it stays, under its new source (found again, so not gone).
    conn.execute(
        "UPDATE archive_streams SET source_path = ?, source_gone_at = NULL "
        "WHERE session_id = ? AND agent_id = ? AND source_path = ?",
        (new, session_id, agent_id, old),
    )
    return True
