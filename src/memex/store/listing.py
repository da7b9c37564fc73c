"""Every session the user can look at: indexed here, and known by another computer's mirror.

`memex sessions list` shows both, newest first; a session seen only through its mirror has no turn count
or subagents here, and is marked with its computer.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from memex.store.queries import Filters, list_sessions, where


def received_sessions(conn: sqlite3.Connection, filters: Filters, limit: int, computer: str | None) -> list[dict]:
    """Sessions known only by a mirror received from another computer (of `computer` when given)."""
    found = filters.mirror_clauses("m")
    if found is None:  # the filters ask what mirrors do not record (pull requests, files)
        return []
    clauses, params = found
    clauses.append("m.session_id NOT IN (SELECT session_id FROM sessions)")
    if computer is not None:
        clauses.append("m.computer = ?")
        params.append(computer)
    rows = conn.execute(
        "SELECT m.session_id, m.agent, m.computer, m.project AS project_dir, m.title, m.timestamp_start AS started_at, "
        "m.timestamp_end AS ended_at, json_extract(m.metadata, '$.prs') AS prs "
        f"FROM mirror_records m{where(clauses)} "
        "ORDER BY m.timestamp_start IS NULL, m.timestamp_start DESC, m.session_id LIMIT ?",
        [*params, limit],
    ).fetchall()
    sessions = []
    for row in rows:
        item: dict[str, Any] = dict(row)
        prs = json.loads(row["prs"]) if row["prs"] else []
        item.update(
            transcript_path=None,
            turns=None,
            subagents=0,
            subagent_names=[],
            prs=[int(n) for n in prs if isinstance(n, int)],
            source="mirror",
        )
        sessions.append(item)
    return sessions


def all_sessions(
    conn: sqlite3.Connection,
    filters: Filters,
    limit: int,
    this_computer: str,
    computer: str | None = None,
    local_only: bool = False,
) -> list[dict[str, Any]]:
    """Sessions indexed here and received from other computers, newest first by start time.

    `computer` keeps one computer's (this one's name gives the local sessions); `local_only` drops the
    received ones.
    """
    local: list[dict[str, Any]] = []
    if computer is None or computer == this_computer:
        local = [{**s, "source": "local"} for s in list_sessions(conn, filters, limit)]
    received: list[dict[str, Any]] = []
    if not local_only and computer != this_computer:
        received = received_sessions(conn, filters, limit, computer)
    merged = sorted(local + received, key=lambda s: s["session_id"])
    merged.sort(key=lambda s: s["started_at"] or "", reverse=True)  # stable: ties stay in id order
    return merged[:limit]
