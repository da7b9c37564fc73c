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
from memex.store import outbox as queue
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
    return [Due(r["session_id"], r["content_hash"]) for r in queue.unpublished(conn, computer, epoch)]


def enqueue(conn: sqlite3.Connection, computer: str, session_ids: list[str], batch: int = 200) -> int:
    """Put the current mirror of each session in the outbox (redacted and encoded); returns how many.

    Mirrors are prepared outside any transaction and written `batch` at a time, so a large first
    backfill never holds the store's write lock for long (a Stop hook may be waiting for it).
    """
    queued = 0
    for start in range(0, len(session_ids), batch):
        # A session that lost its conversation since it was found due is simply absent.
        rows = queue.mirrors_of(conn, computer, session_ids[start : start + batch])
        prepared = [
            (
                row["session_id"],
                row["content_hash"],
                row["updated_at"],
                wire.prepare(mirror_from_row(row), row["updated_at"]),
            )
            for row in rows
        ]
        with transaction(conn):
            queue.put(conn, prepared, now_iso())
        queued += len(prepared)
    return queued


def waiting(conn: sqlite3.Connection) -> int:
    """How many mirrors wait in the outbox."""
    return queue.waiting(conn)


def send_batch(
    conn: sqlite3.Connection, client: redis.Redis, keys: Keys, computer: str, epoch: str, batch: int, max_len: int
) -> int:
    """Send up to `batch` outbox rows to Redis, then drop them from the outbox; returns how many were sent.

    A Redis error propagates (the rows stay, with their attempt counted when the store allows it).
    """
    rows = queue.oldest(conn, batch)
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
    with transaction(conn):
        queue.mark_sent(conn, rows, epoch, now_iso())
    return len(rows)


def _count_attempt(conn: sqlite3.Connection, session_ids: list[str], error: str) -> None:
    try:
        with transaction(conn):
            queue.count_attempt(conn, session_ids, error)
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
