"""find-related: the sessions and the stretches of turns that worked on the same files as a given session.

Both rank by a score that combines the files a result shares with the session, each weighted by how rare it
is, with the cosine similarity of their access-pattern centroids (memex.related.rarity has the formula;
the centroids, refreshed first, are memex.related.centroids). Results that share a file of some rarity
come first. `related_sessions` compares whole sessions. `related_turns` works in two stages: stage 1 keeps
the `related_candidate_sessions` best sessions against what the session is doing now (the files of its
last N turns and the mean of their centroids); stage 2 slides a window of N consecutive turn centroids over
each candidate and scores each window the same way. Every result explains itself: the combined score, the
similarity, the shared part, and the files in common with how many sessions touched each. The returned
dicts are the `--json` contract.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import numpy as np

from memex.config import Config
from memex.errors import UserError
from memex.related.centroids import refresh_patterns
from memex.related.rarity import Rarity, combined, order_key, rarity
from memex.related.resources import ProgressFn, counted_tools_sql, weight_sql
from memex.related.windows import best_windows, mean_direction
from memex.store.access_patterns import json_list
from memex.store.queries import Filters, is_indexed, turns_by_ids, where
from memex.textutil import short_id, shorten

_SESSION_FIELDS = "session_id, agent, computer, project_dir, title, started_at, ended_at"


def related_sessions(
    conn: sqlite3.Connection,
    config: Config,
    session_id: str,
    filters: Filters,
    limit: int,
    on_progress: ProgressFn | None = None,
    min_shared: int = 0,
) -> dict[str, Any]:
    """The `limit` sessions (under `filters`, never `session_id` itself, sharing at least `min_shared` of its
    files) ranked by the combined score of memex.related.rarity: those sharing a file of some rarity first."""
    refresh_patterns(conn, config, on_progress)
    query = _query_session(conn, config, session_id)
    mine = _file_weights(conn, config, "t.session_id", [session_id]).get(session_id, {})
    others = filters.replace(exclude_session=session_id)
    ids, matrix = _session_centroids(conn, config, others, len(query["vector"]))
    rare = rarity(conn, config, list(mine), _all_sessions(filters, ids))
    chosen = _rank(ids, matrix @ query["vector"], mine, rare, config, min_shared, limit)
    files = _file_weights(conn, config, "t.session_id", [sid for sid, _, _, _ in chosen])
    info = _sessions_info(conn, [sid for sid, _, _, _ in chosen])
    results = [
        {**info[sid], **_explained(score, similarity, shared, mine, files.get(sid, {}), rare, config)}
        for sid, score, similarity, shared in chosen
    ]
    return {"session": _public(query), "results": results, "warnings": []}


def related_turns(
    conn: sqlite3.Connection,
    config: Config,
    session_id: str,
    filters: Filters,
    limit: int,
    window: int,
    on_progress: ProgressFn | None = None,
    min_shared: int = 0,
) -> dict[str, Any]:
    """The `limit` best windows of `window` consecutive turns, in other sessions (under `filters`), that
    worked on the files of this session's last `window` turns (at least `min_shared` of them); windows
    sharing a file of some rarity first, then by the combined score."""
    refresh_patterns(conn, config, on_progress)
    query = _query_session(conn, config, session_id)
    own_ids, own_vectors = _turn_centroids(conn, config, [session_id])[session_id]
    recent_ids, recent = own_ids[-window:], own_vectors[-window:]
    warnings = []
    if len(recent_ids) < window:
        warnings.append(
            f"session {short_id(session_id)} has only {len(recent_ids)} turn{'s' if len(recent_ids) != 1 else ''} that "
            f"touched files (fewer than the window of {window}): all of them are used"
        )
    target = mean_direction(recent)
    recent_list = [int(t) for t in recent_ids]
    mine = _merge(_file_weights(conn, config, "t.id", recent_list), recent_list)
    # Stage 1: the candidate sessions with the best combined score against what the session is doing now.
    others = filters.replace(exclude_session=session_id)
    ids, matrix = _session_centroids(conn, config, others, len(target))
    rare = rarity(conn, config, list(mine), _all_sessions(filters, ids))
    ranked = _rank(ids, matrix @ target, mine, rare, config, min_shared, config.related_candidate_sessions)
    candidates = [sid for sid, _, _, _ in ranked]
    # Stage 2: windows of consecutive turn centroids in each candidate, scored like sessions.
    windows: list[tuple[str, list[int], float]] = []
    for sid, (turn_ids, vectors) in _turn_centroids(conn, config, candidates).items():
        for w in best_windows(vectors, target, window, config.related_windows_per_session):
            windows.append((sid, [int(t) for t in turn_ids[w.start : w.end]], w.score))
    turn_files = _file_weights(conn, config, "t.id", [t for _, ts, _ in windows for t in ts])
    found: list[tuple[tuple[bool, float], str, list[int], float, float, dict[str, float]]] = []
    for sid, window_turns, similarity in windows:
        theirs = _merge(turn_files, window_turns)
        if len(mine.keys() & theirs.keys()) < min_shared:
            continue
        shared = rare.shared(mine, theirs)
        found.append(
            (order_key(shared, combined(shared, similarity, config)), sid, window_turns, similarity, shared, theirs)
        )
    found.sort(key=lambda item: (not item[0][0], -item[0][1], item[1], item[2][0]))
    found = found[:limit]
    turns = turns_by_ids(conn, [t for _, _, ts, _, _, _ in found for t in ts])
    info = _sessions_info(conn, [sid for _, sid, _, _, _, _ in found])
    results = [
        {
            **info[sid],
            **_explained(key[1], similarity, shared, mine, theirs, rare, config),
            "turns": [_turn(turns[t], config) for t in window_turns],
        }
        for key, sid, window_turns, similarity, shared, theirs in found
    ]
    return {
        "session": _public(query),
        "window": window,
        "query_turns": recent_list,
        "results": results,
        "warnings": warnings,
    }


def _all_sessions(filters: Filters, ids: list[str]) -> int | None:
    """The number of sessions with a centroid when `ids` are all of them but the query's (no filter), so the
    rarity needs not count them again; None otherwise."""
    return len(ids) + 1 if filters == Filters() else None


def _rank(
    ids: list[str],
    similarity: np.ndarray,
    mine: dict[str, float],
    rare: Rarity,
    config: Config,
    min_shared: int,
    limit: int,
) -> list[tuple[str, float, float, float]]:
    """The `limit` best (session, score, similarity, shared) among `ids` sharing at least `min_shared` of
    `mine`: those sharing a file of some rarity first, then the rest, each by the combined score (then id).
    One pass over the sessions for their shared part; the scores and the choice of the best are numpy's."""
    weights = {path: rare.weight(path) for path in mine}
    total = sum(weights.values())
    sharing = rare.sharing()
    shared = np.zeros(len(ids))
    counts = np.zeros(len(ids), dtype=np.int64)
    for i, sid in enumerate(ids):
        files = sharing.get(sid)
        if files:
            counts[i] = len(files)
            shared[i] = sum(weights[path] for path in files) / total if total > 0 else 0.0
    weight = config.related_shared_weight_pct / 100  # rarity.combined, for every session at once
    scores = weight * shared + (1.0 - weight) * similarity.astype(np.float64)
    allowed = counts >= min_shared
    # The best `limit` of each group (sharing a file of some rarity, or not), then those few in order.
    pool = [
        group[_top(scores[group], limit)]
        for group in (np.flatnonzero(allowed & (shared > 0)), np.flatnonzero(allowed & (shared <= 0)))
    ]
    chosen = sorted(np.concatenate(pool).tolist(), key=lambda i: (shared[i] <= 0, -scores[i], ids[i]))[:limit]
    return [(ids[i], float(scores[i]), float(similarity[i]), float(shared[i])) for i in chosen]


def _explained(
    score: float,
    similarity: float,
    shared_score: float,
    mine: dict[str, float],
    theirs: dict[str, float],
    rare: Rarity,
    config: Config,
) -> dict[str, Any]:
    """A result's reasons: its score and what it is made of, and the files behind it (the `--json` contract)."""
    shared = _shared(mine, theirs)
    listed = shared[: config.related_reason_files]
    return {
        "score": round(score, 4),
        "similarity": round(similarity, 4),
        "shared_score": round(shared_score, 4),
        "file_count": len(theirs),
        "files": _ranked(theirs)[: config.related_reason_files],
        "shared_count": len(shared),
        "shared_files": listed,
        "shared": [{"path": path, "sessions": rare.session_count(path)} for path in listed],
    }


# --- reading centroids ---------------------------------------------------------------------------------


def _query_session(conn: sqlite3.Connection, config: Config, session_id: str) -> dict[str, Any]:
    """The session's facts and centroid; a UserError when it touched no file that counts."""
    row = conn.execute(
        "SELECT p.embedding, p.turns, p.files FROM session_access_patterns p "
        "WHERE p.session_id = ? AND p.model_version = ?",
        (session_id, config.resource_model_version),
    ).fetchone()
    if row is None and not is_indexed(conn, session_id):
        # Known here by its mirror only: the conversation came, the files it worked on did not.
        computer = conn.execute("SELECT computer FROM mirrors WHERE session_id = ? LIMIT 1", (session_id,)).fetchone()
        raise UserError(
            f"session {short_id(session_id)} ran on {computer[0] if computer else 'another computer'}: only its "
            "conversation is here, not the files it worked on; find related work on that computer"
        )
    if row is None or row[0] is None:
        raise UserError(
            f"session {short_id(session_id)} touched no files (no read, edit or @-mention of a file): "
            "there is nothing to find related work by"
        )
    info = _sessions_info(conn, [session_id])[session_id]
    return {**info, "turn_count": row[1], "file_count": row[2], "vector": np.frombuffer(row[0], dtype="<f4")}


def _public(query: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in query.items() if key != "vector"}


def _session_centroids(
    conn: sqlite3.Connection, config: Config, filters: Filters, dimension: int
) -> tuple[list[str], np.ndarray]:
    """(session ids, their centroids as rows) of the sessions matching `filters`."""
    clauses, params = filters.session_clauses("s")
    clauses = ["p.embedding IS NOT NULL", "p.model_version = ?", *clauses]
    rows = conn.execute(
        "SELECT p.session_id, p.embedding FROM session_access_patterns p "
        f"JOIN sessions s ON s.session_id = p.session_id{where(clauses)}",
        [config.resource_model_version, *params],
    ).fetchall()
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype="<f4").reshape(len(rows), dimension)
    return [r[0] for r in rows], matrix


def _turn_centroids(
    conn: sqlite3.Connection, config: Config, session_ids: Sequence[str]
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per session, (turn ids, turn centroids) in the order the turns happened (subagents' included)."""
    rows = conn.execute(
        "SELECT p.session_id, p.turn_id, p.embedding FROM turn_access_patterns p JOIN turns t ON t.id = p.turn_id "
        "WHERE p.session_id IN (SELECT value FROM json_each(?)) AND p.model_version = ? "
        "ORDER BY p.session_id, coalesce(t.started_at, ''), t.agent_id != '', t.line_index",
        (json_list(session_ids), config.resource_model_version),
    ).fetchall()
    grouped: dict[str, tuple[list[int], list[bytes]]] = {}
    for session_id, turn_id, blob in rows:
        ids, blobs = grouped.setdefault(session_id, ([], []))
        ids.append(turn_id)
        blobs.append(blob)
    result = {
        sid: (np.array(ids, dtype=np.int64), np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(ids), -1))
        for sid, (ids, blobs) in grouped.items()
    }
    empty = (np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32))
    return {sid: result.get(sid, empty) for sid in session_ids}


def _top(scores: np.ndarray, k: int) -> list[int]:
    """Positions of the `k` highest scores, best first."""
    k = min(k, len(scores))
    if k <= 0:
        return []
    best = np.argpartition(-scores, k - 1)[:k]
    return [int(i) for i in best[np.argsort(-scores[best], kind="stable")]]


# --- reasons: the files behind a result ----------------------------------------------------------------


def _file_weights(
    conn: sqlite3.Connection, config: Config, key: str, ids: Sequence[object]
) -> dict[Any, dict[str, float]]:
    """Per session (`key` "t.session_id") or turn ("t.id"), each counted file with its weight: the heaviest
    mention's weight times the number of turns that touched it."""
    weight, weight_params = weight_sql(config)
    condition, condition_params = counted_tools_sql()
    rows = conn.execute(
        f"SELECT {key}, fm.file_path, max({weight}) * count(DISTINCT t.id) FROM turns t "
        "JOIN file_mentions fm ON fm.turn_id = t.id "
        "JOIN resource_embeddings r ON r.resource = fm.file_path AND r.model_version = ? "
        f"WHERE {key} IN (SELECT value FROM json_each(?)) AND {condition} GROUP BY {key}, fm.file_path",
        [*weight_params, config.resource_model_version, json_list(list(dict.fromkeys(ids))), *condition_params],
    ).fetchall()
    found: dict[Any, dict[str, float]] = {}
    for owner, path, value in rows:
        found.setdefault(owner, {})[path] = float(value)
    return found


def _merge(per_turn: dict[Any, dict[str, float]], turn_ids: Sequence[int]) -> dict[str, float]:
    merged: dict[str, float] = {}
    for turn_id in turn_ids:
        for path, value in per_turn.get(turn_id, {}).items():
            merged[path] = merged.get(path, 0.0) + value
    return merged


def _ranked(files: dict[str, float]) -> list[str]:
    return sorted(files, key=lambda path: (-files[path], path))


def _shared(mine: dict[str, float], theirs: dict[str, float]) -> list[str]:
    """The files both touched, the most worked on (by both together) first."""
    both = {path: mine[path] + theirs[path] for path in mine.keys() & theirs.keys()}
    return _ranked(both)


# --- facts shown with a result -------------------------------------------------------------------------


def _sessions_info(conn: sqlite3.Connection, session_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    rows = conn.execute(
        f"SELECT {_SESSION_FIELDS} FROM sessions WHERE session_id IN (SELECT value FROM json_each(?))",
        (json_list(session_ids),),
    ).fetchall()
    return {row["session_id"]: dict(row) for row in rows}


def _turn(turn: dict[str, Any], config: Config) -> dict[str, Any]:
    prompt = turn["prompt_text"] or turn["full_text"]
    return {
        "turn_id": turn["id"],
        "agent_id": turn["agent_id"],
        "subagent_name": turn["subagent_name"],
        "subagent_description": turn["subagent_description"],
        "line_index": turn["line_index"],
        "started_at": turn["started_at"],
        "prompt": shorten(prompt, config.related_prompt_chars),
    }
