"""Queries of publication: the `outbox` (mirrors redacted and encoded, waiting for Redis) and
`published_mirrors` (what went out, to which Redis data generation)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any


def unpublished(conn: sqlite3.Connection, computer: str, epoch: str | None) -> list[sqlite3.Row]:
    """(session_id, content_hash) of this computer's mirrors whose current version is neither published
    (to the data generation `epoch`, when it is known) nor waiting in the outbox, oldest change first."""
    return conn.execute(
        "SELECT m.session_id, m.content_hash FROM mirrors m "
        "LEFT JOIN published_mirrors p ON p.session_id = m.session_id "
        "LEFT JOIN outbox o ON o.session_id = m.session_id "
        "WHERE m.computer = ? AND o.source_hash IS NOT m.content_hash "
        "AND (p.source_hash IS NOT m.content_hash OR (? IS NOT NULL AND p.epoch IS NOT ?)) "
        "ORDER BY m.updated_at",
        (computer, epoch, epoch),
    ).fetchall()


def mirrors_of(conn: sqlite3.Connection, computer: str, session_ids: Sequence[str]) -> list[sqlite3.Row]:
    """The current mirrors (every column of the `mirrors` view) of `computer`'s sessions among `session_ids`."""
    marks = ",".join("?" * len(session_ids))
    return conn.execute(
        f"SELECT * FROM mirrors WHERE computer = ? AND session_id IN ({marks})", [computer, *session_ids]
    ).fetchall()


def put(conn: sqlite3.Connection, items: Sequence[tuple[str, str, str, bytes]], queued_at: str) -> None:
    """Queue (session_id, source hash, updated_at, payload) items (inside a transaction); a session's newer
    version replaces the one still waiting, with its attempts reset."""
    conn.executemany(
        "INSERT INTO outbox (session_id, source_hash, updated_at, payload, queued_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (session_id) DO UPDATE SET source_hash = excluded.source_hash, "
        "updated_at = excluded.updated_at, payload = excluded.payload, queued_at = excluded.queued_at, "
        "attempts = 0, last_error = NULL",
        [(*item, queued_at) for item in items],
    )


def waiting(conn: sqlite3.Connection) -> int:
    """How many mirrors wait in the outbox."""
    return int(conn.execute("SELECT count(*) FROM outbox").fetchone()[0])


def oldest(conn: sqlite3.Connection, limit: int) -> list[sqlite3.Row]:
    """The first `limit` waiting items (session_id, source_hash, updated_at, payload), in queue order."""
    return conn.execute(
        "SELECT session_id, source_hash, updated_at, payload FROM outbox ORDER BY queued_at, session_id LIMIT ?",
        (limit,),
    ).fetchall()


def mark_sent(conn: sqlite3.Connection, sent: Sequence[Any], epoch: str, sent_at: str) -> None:
    """Take sent items (rows of `oldest`) out of the outbox and record them published (inside a
    transaction); a newer version queued meanwhile stays in the outbox."""
    for row in sent:
        conn.execute(
            "DELETE FROM outbox WHERE session_id = ? AND source_hash = ?", (row["session_id"], row["source_hash"])
        )
        conn.execute(
            "INSERT INTO published_mirrors (session_id, source_hash, epoch, published_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (session_id) DO UPDATE SET source_hash = excluded.source_hash, epoch = excluded.epoch, "
            "published_at = excluded.published_at",
            (row["session_id"], row["source_hash"], epoch, sent_at),
        )


def count_attempt(conn: sqlite3.Connection, session_ids: Sequence[str], error: str) -> None:
    """Record a failed send of these items (inside a transaction)."""
    conn.executemany(
        "UPDATE outbox SET attempts = attempts + 1, last_error = ? WHERE session_id = ?",
        [(error[:500], session_id) for session_id in session_ids],
    )
