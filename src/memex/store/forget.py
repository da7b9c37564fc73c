"""Queries of forgetting: choosing sessions, deleting everything the store holds of one, tombstones.

A session is deleted from `sessions` (its entries, turns, chunks, full-text rows, vectors, embed jobs,
file mentions, links and centroids follow by cascade and triggers), its mirrors (`mirror_records`:
segments, full-text rows and vectors follow), what waits to be published or was published of it, and the
record of its archived copies (the files are the caller's). A tombstone in `forgotten` keeps it away.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from memex.store.queries import Filters


@dataclass(frozen=True)
class Target:
    """A session chosen to be forgotten, as the confirmation lists it."""

    session_id: str
    computer: str  # the computer it ran on
    agent: str
    project: str | None
    title: str | None
    started_at: str | None
    local: bool  # indexed here (not only a received mirror)

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


def choose(
    conn: sqlite3.Connection,
    sessions: list[str],
    project: str | None = None,
    before: str | None = None,
    agent: str | None = None,
) -> list[Target]:
    """Sessions (indexed here, or known by another computer's mirror) matching every criterion given:
    one of the ids `sessions`, the project, started before `before`, the agent."""
    filters = Filters(project=project, agent=agent)
    local_clauses, local_params = filters.session_clauses("s")
    mirror_clauses, mirror_params = filters.mirror_clauses("m") or ([], [])
    if before:
        local_clauses.append("s.started_at < ?")
        local_params.append(before)
        mirror_clauses.append("m.timestamp_start < ?")
        mirror_params.append(before)
    if sessions:
        marks = ", ".join("?" * len(sessions))
        local_clauses.append(f"s.session_id IN ({marks})")
        local_params += sessions
        mirror_clauses.append(f"m.session_id IN ({marks})")
        mirror_params += sessions

    def where(clauses: list[str]) -> str:
        return " WHERE " + " AND ".join(clauses) if clauses else ""

    rows = conn.execute(
        "SELECT * FROM (SELECT s.session_id, s.computer, s.agent, s.project_dir AS project, s.title, s.started_at, "
        f"1 AS local FROM sessions s{where(local_clauses)} UNION ALL "
        "SELECT m.session_id, m.computer, m.agent, m.project, m.title, m.timestamp_start, 0 FROM mirror_records m"
        f"{where([*mirror_clauses, 'm.session_id NOT IN (SELECT session_id FROM sessions)'])}) "
        "ORDER BY started_at IS NULL, started_at, session_id",
        [*local_params, *mirror_params],
    ).fetchall()
    return [Target(r[0], r[1], r[2], r[3], r[4], r[5], bool(r[6])) for r in rows]


def delete_session(conn: sqlite3.Connection, session_id: str) -> None:
    """Delete everything the store holds of a session, here and as any computer's mirror (inside a
    transaction), the records of its archive copies included (not the files: `archive_paths` first)."""
    conn.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM mirror_records WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM turn_access_patterns WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM outbox WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM published_mirrors WHERE session_id = ?", (session_id,))
    conn.execute("DELETE FROM archive_streams WHERE session_id = ?", (session_id,))


def archive_paths(conn: sqlite3.Connection, session_id: str) -> list[str]:
    """The archive files (relative paths) of a session."""
    return [r[0] for r in conn.execute("SELECT archive_path FROM archive_streams WHERE session_id = ?", (session_id,))]


def add_tombstone(
    conn: sqlite3.Connection, session_id: str, computer: str, origin: str, when: str, published: bool
) -> bool:
    """Record that a session is forgotten; False when it already was."""
    cursor = conn.execute(
        "INSERT OR IGNORE INTO forgotten (session_id, computer, origin, forgotten_at, published_at) "
        "VALUES (?, ?, ?, ?, ?)",
        (session_id, computer, origin, when, when if published else None),
    )
    return cursor.rowcount > 0


def is_forgotten(conn: sqlite3.Connection, session_id: str, computer: str | None = None) -> bool:
    """Whether a session was forgotten (on `computer`, or on any)."""
    if computer is None:
        row = conn.execute("SELECT 1 FROM forgotten WHERE session_id = ? LIMIT 1", (session_id,)).fetchone()
    else:
        row = conn.execute(
            "SELECT 1 FROM forgotten WHERE session_id = ? AND computer = ?", (session_id, computer)
        ).fetchone()
    return row is not None


def unpublished_tombstones(conn: sqlite3.Connection) -> list[tuple[str, str, str]]:
    """(session, computer, forgotten_at) of the forgettings asked here that the others were not told yet:
    every unpublished one (another computer's are stored published), also those asked under an earlier name
    of this computer, which no computer of that name would ever publish once it was renamed."""
    rows = conn.execute(
        "SELECT session_id, computer, forgotten_at FROM forgotten WHERE published_at IS NULL ORDER BY forgotten_at"
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


def mark_published(conn: sqlite3.Connection, items: list[tuple[str, str, str]], when: str) -> None:
    """Record that these forgettings were published."""
    conn.executemany(
        "UPDATE forgotten SET published_at = ? WHERE session_id = ? AND computer = ?",
        [(when, session_id, computer) for session_id, computer, _ in items],
    )


def tombstone_count(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM forgotten").fetchone()[0]


def forgotten_sessions(conn: sqlite3.Connection) -> set[str]:
    """Every session forgotten here (tombstoned)."""
    return {r[0] for r in conn.execute("SELECT session_id FROM forgotten")}
