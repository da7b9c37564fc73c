"""Queries of computers: the registry as the daemon last saw it, the local sessions stranded under an old
name, and forgetting a computer."""

from __future__ import annotations

import sqlite3
from typing import Any

# The tombstone of a whole computer in `forgotten` (its session column): every mirror it published goes.
EVERY_SESSION = "*"


def stranded(conn: sqlite3.Connection, computer: str) -> dict[str, int]:
    """Names other than `computer` that local sessions are stored under (the `computer` setting was
    changed), with how many sessions each holds."""
    # The two ranges of `sessions_computer` either side of the name (`!=` would scan it whole): no session is
    # read when none is stranded, whatever the store holds. They come out in order.
    rows = conn.execute(
        "SELECT computer, count(*) FROM sessions WHERE computer < ?1 GROUP BY computer UNION ALL "
        "SELECT computer, count(*) FROM sessions WHERE computer > ?1 GROUP BY computer",
        (computer,),
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def rename_local(conn: sqlite3.Connection, old: str, new: str) -> int:
    """Move the local sessions stored under `old`, and their mirrors, to `new` (inside a transaction);
    they are published again under the new name. Returns how many sessions moved."""
    moved = conn.execute("UPDATE sessions SET computer = ? WHERE computer = ?", (new, old)).rowcount
    conn.execute(
        "DELETE FROM mirror_records WHERE computer = ? AND session_id IN (SELECT session_id FROM sessions) "
        "AND session_id IN (SELECT session_id FROM mirror_records WHERE computer = ?)",
        (new, old),
    )  # a received copy of our own session under the new name would collide
    conn.execute(
        "UPDATE mirror_records SET computer = ? WHERE computer = ? AND session_id IN (SELECT session_id FROM sessions)",
        (new, old),
    )
    conn.execute("DELETE FROM published_mirrors")  # published under the old name: everything goes out again
    conn.execute("DELETE FROM outbox")
    return moved


def drop_computer(conn: sqlite3.Connection, computer: str) -> int:
    """Delete the mirrors received from `computer` and its registry entry (inside a transaction); the
    sessions indexed here are never touched. Returns how many mirrors went."""
    dropped = conn.execute(
        "DELETE FROM mirror_records WHERE computer = ? AND session_id NOT IN (SELECT session_id FROM sessions)",
        (computer,),
    ).rowcount
    conn.execute("DELETE FROM computers WHERE computer = ?", (computer,))
    return dropped


def unpublish_before(conn: sqlite3.Connection, when: str) -> int:
    """Forget that this computer's mirrors published before `when` (ISO time) were published, so they go out
    again; returns how many."""
    return conn.execute("DELETE FROM published_mirrors WHERE published_at < ?", (when,)).rowcount


def add_computer_tombstone(conn: sqlite3.Connection, computer: str, origin: str, when: str) -> None:
    """Queue the forgetting of a whole computer for publication (again, if it was forgotten before)."""
    conn.execute(
        "INSERT OR REPLACE INTO forgotten (session_id, computer, origin, forgotten_at, published_at) "
        "VALUES (?, ?, ?, ?, NULL)",
        (EVERY_SESSION, computer, origin, when),
    )


def received_mirrors(conn: sqlite3.Connection, computer: str) -> int:
    """How many mirrors received from `computer` this store holds."""
    return conn.execute(
        "SELECT count(*) FROM mirror_records WHERE computer = ? "
        "AND session_id NOT IN (SELECT session_id FROM sessions)",
        (computer,),
    ).fetchone()[0]


def remember(conn: sqlite3.Connection, info: dict[str, Any]) -> None:
    """Keep one computer's announcement (computer, version, api_url, sessions, started_at, last_seen) in
    the registry, unless an announcement seen later is already there (inside a transaction)."""
    conn.execute(
        "INSERT INTO computers (computer, version, api_url, sessions, started_at, last_seen) "
        "VALUES (:computer, :version, :api_url, :sessions, :started_at, :last_seen) "
        "ON CONFLICT (computer) DO UPDATE SET version = excluded.version, api_url = excluded.api_url, "
        "sessions = excluded.sessions, started_at = excluded.started_at, last_seen = excluded.last_seen "
        "WHERE excluded.last_seen >= computers.last_seen",
        {key: info.get(key) for key in ("computer", "version", "api_url", "sessions", "started_at", "last_seen")},
    )


def remembered(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """The registry as this computer's daemon last saw it, by name."""
    return conn.execute(
        "SELECT computer, version, api_url, sessions, started_at, last_seen FROM computers ORDER BY computer"
    ).fetchall()
