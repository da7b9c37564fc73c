"""Queries of the embedding queue (`embed_jobs`, filled by triggers as turns, chunks and mirrors are
written) and of the `vectors` it produces. Which text a job embeds is decided in `memex.embed`."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence


def requeue_stale(conn: sqlite3.Connection, model_version: str) -> int:
    """Put back every job done (or failed) under another model version (inside a transaction)."""
    return conn.execute(
        "UPDATE embed_jobs SET status = 'pending', attempts = 0, last_error = NULL, next_attempt_at = NULL "
        "WHERE model_version != ? AND model_version != '' AND status != 'pending'",
        (model_version,),
    ).rowcount


def retry_errors(conn: sqlite3.Connection) -> int:
    """Give every failed job a fresh set of attempts (inside a transaction)."""
    return conn.execute(
        "UPDATE embed_jobs SET status = 'pending', attempts = 0, next_attempt_at = NULL WHERE status = 'error'"
    ).rowcount


def pending_count(conn: sqlite3.Connection) -> int:
    """Jobs waiting (including those waiting out a back-off)."""
    return int(conn.execute("SELECT count(*) FROM embed_jobs WHERE status = 'pending'").fetchone()[0])


def next_jobs(conn: sqlite3.Connection, level: str, now: str, limit: int) -> list[sqlite3.Row]:
    """(id, level, owner_id, text_hash) of up to `limit` jobs of `level` due at `now`, newest first."""
    return conn.execute(
        "SELECT id, level, owner_id, text_hash FROM embed_jobs WHERE status = 'pending' AND level = ? "
        "AND (next_attempt_at IS NULL OR next_attempt_at <= ?) ORDER BY id DESC LIMIT ?",
        (level, now, limit),
    ).fetchall()


def attempts_of(conn: sqlite3.Connection, job_id: int) -> int | None:
    """How many times the job failed so far; None when it is gone (its owner was deleted or changed)."""
    row = conn.execute("SELECT attempts FROM embed_jobs WHERE id = ?", (job_id,)).fetchone()
    return None if row is None else int(row[0])


def drop_job(conn: sqlite3.Connection, job_id: int) -> None:
    conn.execute("DELETE FROM embed_jobs WHERE id = ?", (job_id,))


def put_vector(
    conn: sqlite3.Connection,
    level: str,
    owner_id: int,
    model: tuple[str, str],
    text_hash: str,
    embedding: bytes,
    stamp: str,
) -> None:
    """Store the vector of (level, owner) under `model` (name, version), replacing one of the same version."""
    conn.execute(
        "INSERT INTO vectors (level, owner_id, model_name, model_version, text_hash, embedding, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (level, owner_id, model_version) "
        "DO UPDATE SET text_hash = excluded.text_hash, embedding = excluded.embedding, "
        "created_at = excluded.created_at",
        (level, owner_id, *model, text_hash, embedding, stamp),
    )


def job_done(
    conn: sqlite3.Connection, job_id: int, level: str, owner_id: int, model_version: str, text_hash: str, stamp: str
) -> None:
    """Mark the job done under `model_version` and drop the owner's vectors of other versions."""
    conn.execute(
        "DELETE FROM vectors WHERE level = ? AND owner_id = ? AND model_version != ?", (level, owner_id, model_version)
    )
    conn.execute(
        "UPDATE embed_jobs SET status = 'done', model_version = ?, attempts = 0, last_error = NULL, "
        "next_attempt_at = NULL, updated_at = ?, text_hash = CASE WHEN level = 'session' "
        "THEN text_hash ELSE ? END WHERE id = ?",
        (model_version, stamp, text_hash, job_id),
    )


def job_failed(
    conn: sqlite3.Connection, job_id: int, tries: int, error: str | None, stamp: str, retry_at: str, max_tries: int
) -> None:
    """Record a failed attempt: the job waits until `retry_at`, or is in `error` after `max_tries`."""
    conn.execute(
        "UPDATE embed_jobs SET attempts = ?, last_error = ?, updated_at = ?, next_attempt_at = ?, "
        "status = CASE WHEN ? >= ? THEN 'error' ELSE 'pending' END WHERE id = ?",
        (tries, error, stamp, retry_at, tries, max_tries, job_id),
    )


def vectors_by_hash(conn: sqlite3.Connection, hashes: Sequence[str], model_name: str) -> dict[str, bytes]:
    """Stored vectors (any level, any version of the model `model_name`) of texts with these hashes: the same
    model gives the same text the same vector, whichever recipe chose that text."""
    if not hashes:
        return {}
    marks = ",".join("?" * len(hashes))
    rows = conn.execute(
        f"SELECT text_hash, embedding FROM vectors WHERE text_hash IN ({marks}) AND model_name = ?",
        [*hashes, model_name],
    )
    return {r[0]: r[1] for r in rows}
