"""Publishing this computer's mirrors: which are due, the `outbox` table, and sending it to Redis.

A mirror to publish is first written to the outbox, redacted and encoded as it will travel; sending
takes outbox rows to Redis in batches (one MULTI per batch: the stream entry, the latest-mirror hash and
the publishers set change together) and only then deletes them and records what was published. Redis
down means rows simply wait; a crash between Redis and the local commit means a mirror is sent twice,
which receivers ignore. The outbox holds one row per session: a newer version replaces one still waiting.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime

import redis

from memex.mirrors.model import mirror_from_row
from memex.store.db import transaction
from memex.sync import wire
from memex.sync.keys import Keys


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass(frozen=True)
class Due:
    """A local mirror not yet published in its current version."""

    session_id: str
    content_hash: str


def unpublished(conn: sqlite3.Connection, computer: str, epoch: str | None) -> list[Due]:
    """This computer's mirrors whose current version is neither published (to this Redis data generation,
    when it is known) nor waiting in the outbox."""
    rows = conn.execute(
        "SELECT m.session_id, m.content_hash FROM mirrors m "
        "LEFT JOIN published_mirrors p ON p.session_id = m.session_id "
        "LEFT JOIN outbox o ON o.session_id = m.session_id "
        "WHERE m.computer = ? AND o.source_hash IS NOT m.content_hash "
        "AND (p.source_hash IS NOT m.content_hash OR (? IS NOT NULL AND p.epoch IS NOT ?)) "
        "ORDER BY m.updated_at",
        (computer, epoch, epoch),
    ).fetchall()
    return [Due(r["session_id"], r["content_hash"]) for r in rows]


def enqueue(conn: sqlite3.Connection, computer: str, session_ids: list[str], batch: int = 200) -> int:
    """Put the current mirror of each session in the outbox (redacted and encoded); returns how many.

    Mirrors are prepared outside any transaction and written `batch` at a time, so a large first
    backfill never holds the store's write lock for long (a Stop hook may be waiting for it).
    """
    queued = 0
    for start in range(0, len(session_ids), batch):
        chunk = session_ids[start : start + batch]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT * FROM mirrors WHERE computer = ? AND session_id IN ({marks})", [computer, *chunk]
        ).fetchall()  # a session that lost its conversation since it was found due is simply absent
        prepared = [
            (
                row["session_id"],
                row["content_hash"],
                row["updated_at"],
                wire.prepare(mirror_from_row(row), row["updated_at"]),
            )
            for row in rows
        ]
        now = now_iso()
        with transaction(conn):
            conn.executemany(
                "INSERT INTO outbox (session_id, source_hash, updated_at, payload, queued_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET source_hash = excluded.source_hash, "
                "updated_at = excluded.updated_at, payload = excluded.payload, queued_at = excluded.queued_at, "
                "attempts = 0, last_error = NULL",
                [(*item, now) for item in prepared],
            )
        queued += len(prepared)
    return queued


def waiting(conn: sqlite3.Connection) -> int:
    """How many mirrors wait in the outbox."""
    return conn.execute("SELECT count(*) FROM outbox").fetchone()[0]


def send_batch(
    conn: sqlite3.Connection, client: redis.Redis, keys: Keys, computer: str, epoch: str, batch: int, max_len: int
) -> int:
    """Send up to `batch` outbox rows to Redis, then drop them from the outbox; returns how many were sent.

    A Redis error propagates (the rows stay, with their attempt counted when the store allows it).
    """
    rows = conn.execute(
        "SELECT session_id, source_hash, updated_at, payload FROM outbox ORDER BY queued_at, session_id LIMIT ?",
        (batch,),
    ).fetchall()
    if not rows:
        return 0
    pipe = client.pipeline(transaction=True)
    for row in rows:
        fields = {
            "computer": computer,
            "session_id": row["session_id"],
            "updated_at": row["updated_at"],
            "mirror": bytes(row["payload"]),
        }
        pipe.xadd(keys.stream, fields, maxlen=max_len, approximate=True)  # type: ignore[arg-type]
        pipe.hset(keys.latest(computer), row["session_id"], bytes(row["payload"]))
    pipe.sadd(keys.publishers, computer)
    try:
        pipe.execute()
    except redis.RedisError as exc:
        _count_attempt(conn, [r["session_id"] for r in rows], str(exc))
        raise
    sent_at = now_iso()
    with transaction(conn):
        for row in rows:
            # A newer version queued meanwhile stays in the outbox.
            conn.execute(
                "DELETE FROM outbox WHERE session_id = ? AND source_hash = ?", (row["session_id"], row["source_hash"])
            )
            conn.execute(
                "INSERT INTO published_mirrors (session_id, source_hash, epoch, published_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (session_id) DO UPDATE SET source_hash = excluded.source_hash, epoch = excluded.epoch, "
                "published_at = excluded.published_at",
                (row["session_id"], row["source_hash"], epoch, sent_at),
            )
    return len(rows)


def _count_attempt(conn: sqlite3.Connection, session_ids: list[str], error: str) -> None:
    try:
        with transaction(conn):
            conn.executemany(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ? WHERE session_id = ?",
                [(error[:500], session_id) for session_id in session_ids],
            )
    except sqlite3.Error:  # bookkeeping only: the rows wait either way
        pass


def flush(
    conn: sqlite3.Connection, client: redis.Redis, keys: Keys, computer: str, epoch: str, batch: int, max_len: int
) -> int:
    """Send the whole outbox, batch after batch; returns how many mirrors were sent."""
    sent = 0
    while True:
        count = send_batch(conn, client, keys, computer, epoch, batch, max_len)
        sent += count
        if count < batch:
            return sent
