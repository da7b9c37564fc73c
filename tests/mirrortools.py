"""A mirror received from another computer, stored as the sync daemon stores one."""

from __future__ import annotations

import sqlite3

from memex.mirrors.build import content_hash, store_mirror
from memex.mirrors.model import Mirror
from memex.store.db import transaction


def store_received_mirror(
    conn: sqlite3.Connection, session_id: str, computer: str, project: str, title: str, user: str, assistant: str
) -> int:
    """Store another computer's mirror of a one-exchange Codex session (`user` asked, `assistant` answered);
    returns its row id."""
    asked, answered = f"User: {user}", f"Assistant: {assistant}"
    text = f"{asked}\n\n{answered}"
    start = len(asked) + 2 + len("Assistant: ")
    remote = Mirror(
        session_id=session_id,
        computer=computer,
        agent="codex",
        project=project,
        title=title,
        timestamp_start="2026-04-01T10:00:00.000Z",
        timestamp_end="2026-04-01T11:00:00.000Z",
        conversation_text=text,
        metadata={
            "format": 1,
            "messages": [["user", len("User: "), len(asked), None], ["assistant", start, len(text), None]],
            "prs": [],
        },
    )
    remote.content_hash = content_hash(remote)
    with transaction(conn):
        store_mirror(conn, remote)
    found = conn.execute("SELECT id FROM mirrors WHERE session_id = ? AND computer = ?", (session_id, computer))
    return int(found.fetchone()[0])
