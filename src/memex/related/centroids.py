"""Access-pattern centroids, computed lazily: by the first `find-related` that needs them, never at ingest.

The math (every vector unit length, so a cosine is a dot product):
- a turn's centroid is the weighted mean of its files' vectors (each file once per turn; a file the turn
  changed weighs `related_edit_weight`, one it read or mentioned 1), normalised;
- a session's centroid is the mean of its turns' centroids, each weighted by its heaviest file (a turn
  that changed files counts `related_edit_weight` times one that only read), normalised. Subagent turns
  belong to their parent session (`turns.session_id`), so their files count for it.

Refresh watermark: a session's row records its highest turn id when it was computed (`max_turn_id`), and
`access_pattern_state` the store's highest turn id at the end of the last refresh. A refresh reads only the
turns above that (a rowid range: nothing to read when nothing changed) and recomputes each session that
gained a turn above its own watermark, plus those a deleted turn marked stale. Turn ids are never reused,
so a provisional turn rebuilt by the next ingest is a new turn and its session is recomputed. A change of
`resource_model_version` has no state row yet: everything is recomputed with vectors of the new model
(one model per centroid, never a mix).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from memex.config import Config
from memex.related.resources import (
    COMPUTING_CENTROIDS,
    FINDING_PATHS,
    ProgressFn,
    counted_tools_sql,
    counts,
    embed_resources,
    load_vectors,
    missing_resources,
    store_vectors,
    weight_sql,
)
from memex.store import access_patterns as patterns
from memex.store.access_patterns import json_list
from memex.store.db import transaction
from memex.textutil import normalize_timestamp


@dataclass
class RefreshReport:
    """What one refresh did."""

    sessions: int = 0  # sessions whose centroids were recomputed
    turns: int = 0  # turn centroids written
    embedded: int = 0  # paths embedded (new to the cache)
    seconds: float = 0.0


@dataclass
class Centroids:
    """Centroids computed from mention rows sorted by (session, turn)."""

    turn_ids: np.ndarray  # int64, one per turn that has a centroid
    turn_vectors: np.ndarray  # float32, unit rows
    turn_weights: np.ndarray  # float32, the turn's heaviest file
    turn_files: np.ndarray  # int64, distinct files of the turn
    sessions: np.ndarray  # int64 session codes, one per session that has a centroid
    session_vectors: np.ndarray  # float32, unit rows
    session_turns: np.ndarray  # int64, turns with a centroid
    session_files: np.ndarray  # int64, distinct files


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return (matrix / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def _starts(keys: np.ndarray) -> np.ndarray:
    """Positions where a run of equal keys begins (keys sorted into runs)."""
    return np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])


def segment_sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Row sums of the runs of `values` beginning at `starts`, for many short runs (a turn's few files).

    `np.add.reduceat` pays ~10 µs per run, which dominates when runs are one to four rows long; this adds
    the k-th row of every run at once, for each k: a few vectorised steps whatever the number of runs.
    """
    lengths = np.diff(np.r_[starts, len(values)])
    run = np.repeat(np.arange(len(starts)), lengths)
    position = np.arange(len(values)) - np.repeat(starts, lengths)
    order = np.argsort(position, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(position))]
    sums = values[starts]  # every run's first row (a copy)
    for k in range(1, len(bounds) - 1):
        rows = order[bounds[k] : bounds[k + 1]]
        sums[run[rows]] += values[rows]  # one row per run at position k: no index repeats
    return sums


def compute_centroids(
    session_codes: np.ndarray, turn_ids: np.ndarray, resources: np.ndarray, weights: np.ndarray, vectors: np.ndarray
) -> Centroids:
    """Turn and session centroids from one row per file mention: the turn's session code, the turn id, the
    file's row in `vectors`, the mention's weight. Any order; a file mentioned twice in a turn counts once,
    with its heaviest weight."""
    dimension = vectors.shape[1] if vectors.ndim == 2 else 0
    if len(turn_ids) == 0:
        empty_i, empty_v = np.zeros(0, dtype=np.int64), np.zeros((0, dimension), dtype=np.float32)
        return Centroids(empty_i, empty_v, np.zeros(0, np.float32), empty_i, empty_i, empty_v, empty_i, empty_i)
    # Sort by session, turn, file, heaviest first; keep the first row of each (turn, file).
    order = np.lexsort((-weights, resources, turn_ids, session_codes))
    session_codes, turn_ids, resources = session_codes[order], turn_ids[order], resources[order]
    weights = weights[order].astype(np.float32)
    first = np.r_[True, (turn_ids[1:] != turn_ids[:-1]) | (resources[1:] != resources[:-1])]
    session_codes, turn_ids, resources, weights = (
        session_codes[first],
        turn_ids[first],
        resources[first],
        weights[first],
    )
    turn_start = _starts(turn_ids)
    weighted = vectors[resources]
    weighted *= weights[:, None]
    turn_vectors = _unit(segment_sums(weighted, turn_start))
    del weighted
    turn_weights = np.maximum.reduceat(weights, turn_start)
    turn_files = np.diff(np.r_[turn_start, len(turn_ids)])
    turn_sessions = session_codes[turn_start]
    session_start = _starts(turn_sessions)  # few long runs: reduceat suits them
    session_vectors = _unit(np.add.reduceat(turn_vectors * turn_weights[:, None], session_start, axis=0))
    session_turns = np.diff(np.r_[session_start, len(turn_sessions)])
    sessions = turn_sessions[session_start]
    # Distinct files per session: unique (session, file) pairs counted per session.
    span = int(resources.max()) + 1
    pairs = np.unique(session_codes.astype(np.int64) * span + resources)
    per_session = np.bincount(pairs // span, minlength=int(sessions.max()) + 1)
    return Centroids(
        turn_ids[turn_start].astype(np.int64),
        turn_vectors,
        turn_weights,
        turn_files.astype(np.int64),
        sessions.astype(np.int64),
        session_vectors,
        session_turns.astype(np.int64),
        per_session[sessions].astype(np.int64),
    )


def stale_sessions(conn: sqlite3.Connection, version: str) -> tuple[list[str], int, int]:
    """The sessions whose centroids are missing or out of date, the turn watermark recorded by the last
    refresh, and the one to record once these are done."""
    seen = patterns.watermark(conn, version)
    top = patterns.newest_turn(conn)
    stale = patterns.marked_stale(conn)
    if top > seen:
        newest = patterns.last_turns_since(conn, seen)
        known = patterns.computed_up_to(conn, [session_id for session_id, _ in newest], version)
        stale.update(session_id for session_id, last in newest if known.get(session_id, -1) < last)
    return sorted(stale), seen, top


def refresh_patterns(conn: sqlite3.Connection, config: Config, on_progress: ProgressFn | None = None) -> RefreshReport:
    """Bring every session's centroids up to date: embed the paths new to the cache, then recompute stale
    sessions a batch per write transaction, telling `on_progress` each step (resources.ProgressFn)."""
    started = time.perf_counter()
    version = config.resource_model_version
    report = RefreshReport()
    stale, seen, top = stale_sessions(conn, version)
    if not stale and top == seen:  # the usual case: nothing to write, no write lock to wait for
        report.seconds = time.perf_counter() - started
        return report
    if stale:
        if on_progress is not None:
            on_progress(FINDING_PATHS, 0, None)
        report.embedded = embed_resources(conn, config, missing_resources(conn, config, stale), on_progress)
        for batch in _batches(stale, config.related_refresh_batch_sessions):
            if on_progress is not None:
                on_progress(COMPUTING_CENTROIDS, report.sessions, len(stale))
            with transaction(conn):
                report.turns += _refresh_batch(conn, config, batch)
            report.sessions += len(batch)
        if on_progress is not None:
            on_progress(COMPUTING_CENTROIDS, report.sessions, len(stale))
    with transaction(conn):
        patterns.set_watermark(conn, version, top, normalize_timestamp(time.time()))
    report.seconds = time.perf_counter() - started
    return report


def _batches(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    size = max(1, size)
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _mention_rows(conn: sqlite3.Connection, config: Config, batch: Sequence[str]) -> np.ndarray:
    """One row per counted-tool mention of the batch's turns: (session's position in `batch`, turn id,
    resource id, weight); a path without a vector has minus its mention's id in place of a resource id."""
    weight, weight_params = weight_sql(config)
    condition, condition_params = counted_tools_sql()
    rows = conn.execute(
        f"SELECT b.key, t.id, coalesce(r.id, -fm.id), {weight} FROM json_each(?) b "
        "JOIN turns t ON t.session_id = b.value JOIN file_mentions fm ON fm.turn_id = t.id "
        "LEFT JOIN resource_embeddings r ON r.resource = fm.file_path AND r.model_version = ? "
        f"WHERE {condition}",
        [*weight_params, json_list(batch), config.resource_model_version, *condition_params],
    ).fetchall()
    return np.array(rows, dtype=np.int64).reshape(len(rows), 4)


def _refresh_batch(conn: sqlite3.Connection, config: Config, batch: Sequence[str]) -> int:
    """Recompute the centroids of `batch` (inside the caller's write transaction); turn centroids written."""
    rows = _mention_rows(conn, config, batch)
    unknown = rows[rows[:, 2] < 0, 2]
    if len(unknown):
        late = [path for path in patterns.paths_of_mentions(conn, (-unknown).tolist()) if counts(path)]
        if late:  # mentioned since the paths were embedded (an ingest wrote meanwhile): few, embedded now
            store_vectors(conn, config, late)
            rows = _mention_rows(conn, config, batch)
        rows = rows[rows[:, 2] > 0]  # the rest are paths that do not count
    watermarks = patterns.last_turns_of(conn, batch)
    resource_ids, positions = np.unique(rows[:, 2], return_inverse=True)
    centroids = compute_centroids(
        rows[:, 0], rows[:, 1], positions.reshape(-1), rows[:, 3], load_vectors(conn, resource_ids.tolist())
    )
    version, stamp = config.resource_model_version, normalize_timestamp(time.time())
    turn_sessions = np.repeat(centroids.sessions, centroids.session_turns)
    patterns.replace_turn_patterns(
        conn,
        batch,
        (
            (int(turn_id), batch[code], version, float(weight), int(files), vector.tobytes())
            for turn_id, code, weight, files, vector in zip(
                centroids.turn_ids,
                turn_sessions,
                centroids.turn_weights,
                centroids.turn_files,
                centroids.turn_vectors,
                strict=True,
            )
        ),
    )
    found = {
        batch[code]: (vector.tobytes(), int(turns), int(files))
        for code, vector, turns, files in zip(
            centroids.sessions,
            centroids.session_vectors,
            centroids.session_turns,
            centroids.session_files,
            strict=True,
        )
    }
    patterns.replace_session_patterns(
        conn,
        batch,
        (
            (session_id, version, *_counts(found.get(session_id)), last, _vector(found.get(session_id)), stamp)
            for session_id, last in watermarks
        ),
    )
    return len(centroids.turn_ids)


def _counts(found: tuple[bytes, int, int] | None) -> tuple[int, int]:
    return (found[1], found[2]) if found else (0, 0)


def _vector(found: tuple[bytes, int, int] | None) -> bytes | None:
    return found[0] if found else None
