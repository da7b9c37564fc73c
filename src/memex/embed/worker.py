"""The embedding worker: drains the `embed_jobs` queue in batches, durably and resumably.

Ingest only enqueues (triggers add a pending job for every new chunk, turn and changed mirror). The
worker takes pending jobs turns first, then sessions (a session indexed here gets its most central turn's
vector, `central`, so its turns come before it), then chunks; newest first within a level, so a long
backfill is useful early. It embeds a batch outside any transaction, then stores its
vectors and marks its jobs done in one transaction: killed at any moment, the next run redoes at most
one batch, and the vectors' unique key means nothing is stored twice. A job that fails is retried with
doubling back-off, then left in state `error` with its message.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from memex.config import Config
from memex.embed.central import central_turn_vectors
from memex.embed.lock import EmbedBusy, worker_lock  # noqa: F401 (the worker's lock, imported from here)
from memex.embed.model import Embedder, load_embedder
from memex.embed.summarizer import llm_summaries
from memex.embed.texts import embed_texts, text_hash
from memex.embed.worth import has_meaning
from memex.store import embed_jobs as queue
from memex.store.db import transaction

# A batch is stored once its texts are embedded or after this many seconds of embedding, whichever comes
# first: an idle laptop embeds `embed_batch_size` (16) texts in about 2.5 s, a busy one took 20 s, and an
# interrupted or killed worker loses the batch in hand.
BATCH_SECONDS = 2.0
# The order the worker drains the levels in: a session indexed here takes its vector from its turns'.
DRAIN_ORDER = ("turn", "session", "chunk")


@dataclass
class DrainReport:
    """What one drain did."""

    embedded: int = 0
    reused: int = 0  # jobs whose text already had its vector (nothing to compute)
    from_turns: int = 0  # sessions whose vector is their most central turn's (nothing to compute)
    failed: int = 0
    seconds: float = 0.0
    by_level: dict[str, int] = field(default_factory=dict)

    @property
    def per_second(self) -> float:
        return self.embedded / self.seconds if self.seconds else 0.0


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def requeue_stale(conn: sqlite3.Connection, model_version: str) -> int:
    """Put back in the queue every job done (or failed) under another model version; their old vectors
    stay searchable until the new ones replace them."""
    with transaction(conn):
        return queue.requeue_stale(conn, model_version)


def retry_errors(conn: sqlite3.Connection) -> int:
    """Give every job in state `error` a fresh set of attempts."""
    with transaction(conn):
        return queue.retry_errors(conn)


def pending_count(conn: sqlite3.Connection) -> int:
    """Jobs waiting (including those waiting out a back-off)."""
    return queue.pending_count(conn)


def _next_batch(conn: sqlite3.Connection, size: int, now: str) -> list[sqlite3.Row]:
    for level in DRAIN_ORDER:
        rows = queue.next_jobs(conn, level, now, size)
        if rows:
            return rows
    return []


def _embed_each(embedder: Embedder, texts: list[str], deadline: float) -> tuple[list[object | None], list[str | None]]:
    """Vectors for the first of `texts`, one model call per text, until all are done or `deadline`
    (time.monotonic) has passed: a text that fails fails alone, and a batch is stored every few seconds
    however busy the CPU is. Calling the model text by text costs nothing: 16 texts took 3.07 s one by
    one and 3.02 s as one batch on the 2-core development machine."""
    vectors: list[object | None] = []
    errors: list[str | None] = []
    for text in texts:
        if vectors and time.monotonic() > deadline:
            break
        try:
            vectors.append(embedder.embed_passages([text])[0])
            errors.append(None)
        except Exception as exc:  # a backend error of any kind fails this text only
            vectors.append(None)
            errors.append(f"{type(exc).__name__}: {exc}"[:500])
    return vectors, errors


def _store_batch(
    conn: sqlite3.Connection,
    config: Config,
    batch: list[sqlite3.Row],
    hashes: dict[int, str],
    results: dict[int, tuple[object | None, str | None]],
    now: datetime,
) -> None:
    """Write the batch's vectors and job states in one transaction."""
    stamp = _stamp(now)
    with transaction(conn):
        for job in batch:
            level, owner = job["level"], job["owner_id"]
            digest = hashes.get(owner)
            if digest is None:  # the owner is gone, or has nothing to embed
                queue.drop_job(conn, job["id"])
                continue
            attempts = queue.attempts_of(conn, job["id"])
            if attempts is None:
                continue  # while it was embedded, its owner was deleted (a rebuilt turn) or changed (a mirror)
            vector, error = results.get(job["id"], (None, None))
            if vector is not None:
                model = (config.embed_model, config.model_version)
                queue.put_vector(conn, level, owner, model, digest, _blob(vector), stamp)
            if error is None:
                queue.job_done(conn, job["id"], level, owner, config.model_version, digest, stamp)
                continue
            tries = attempts + 1
            retry_at = _stamp(now + timedelta(seconds=config.embed_retry_base_seconds * 2 ** (tries - 1)))
            queue.job_failed(conn, job["id"], tries, error, stamp, retry_at, config.embed_max_attempts)


def _blob(vector: object) -> bytes:
    import numpy as np

    if isinstance(vector, bytes):
        return vector
    return np.asarray(vector, dtype="<f4").tobytes()


def drain(
    conn: sqlite3.Connection,
    config: Config,
    embedder: Embedder | None = None,
    max_jobs: int | None = None,
    on_batch: Callable[[DrainReport, int], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> DrainReport:
    """Embed pending jobs until the queue is empty (or `max_jobs` were taken, or `should_stop()`).

    The caller holds `worker_lock`. `on_batch(report, jobs_in_batch)` is called after each batch is
    stored. Interrupted (KeyboardInterrupt), it stops at once: every stored batch is kept, the batch in
    hand is embedded again by the next drain.
    """
    report = DrainReport()
    started = time.perf_counter()
    requeue_stale(conn, config.model_version)
    taken = 0
    while max_jobs is None or taken < max_jobs:
        if should_stop and should_stop():
            break
        size = config.embed_batch_size if max_jobs is None else min(config.embed_batch_size, max_jobs - taken)
        jobs = _next_batch(conn, size, _stamp(_now()))
        if not jobs:
            break
        taken += len(jobs)
        level = jobs[0]["level"]
        owners = [j["owner_id"] for j in jobs]
        from_turns = level == "session" and not config.summary_llm_url  # an LLM's summary is read instead
        central = central_turn_vectors(conn, owners, config) if from_turns else {}
        texts = embed_texts(conn, level, [owner for owner in owners if owner not in central], config)
        texts = {owner: text for owner, text in texts.items() if has_meaning(text)}  # the others get no vector
        hashes = {owner: text_hash(text) for owner, text in texts.items()}
        # A text embedded before (by this owner, or another with the same text) keeps its vector.
        # An identical text is not embedded twice (a turn's only chunk, a repeated message), nor again
        # after a version bump that left it as it was (only the texts a new recipe changed are computed).
        known = queue.vectors_by_hash(conn, list(set(hashes.values())), config.embed_model)
        results: dict[int, tuple[object | None, str | None]] = {}
        todo = []
        for job in (j for j in jobs if j["owner_id"] in central):
            hashes[job["owner_id"]], turns_vector = central[job["owner_id"]]
            results[job["id"]] = (turns_vector, None)
            report.from_turns += 1
        for job in (j for j in jobs if j["owner_id"] in texts):
            if hashes[job["owner_id"]] in known:
                results[job["id"]] = (known[hashes[job["owner_id"]]], None)
                report.reused += 1
            else:
                todo.append(job)
        if todo:
            if embedder is None:
                embedder = load_embedder(config)
            inputs = [texts[j["owner_id"]] for j in todo]
            if level == "session" and config.summary_llm_url:
                inputs = llm_summaries(config, [j["owner_id"] for j in todo], inputs, conn)
            vectors, errors = _embed_each(embedder, inputs, time.monotonic() + BATCH_SECONDS)
            if len(vectors) < len(todo):  # out of time: the rest stay queued for the next batch
                left = {j["id"] for j in todo[len(vectors) :]}
                jobs = [j for j in jobs if j["id"] not in left]
                todo = todo[: len(vectors)]
                taken -= len(left)
            for job, vector, error in zip(todo, vectors, errors, strict=True):
                results[job["id"]] = (vector, error)
                if error is None:
                    report.embedded += 1
                    report.by_level[level] = report.by_level.get(level, 0) + 1
                else:
                    report.failed += 1
        _store_batch(conn, config, jobs, hashes, results, _now())
        report.seconds = time.perf_counter() - started
        if on_batch:
            on_batch(report, len(jobs))
    report.seconds = time.perf_counter() - started
    return report
