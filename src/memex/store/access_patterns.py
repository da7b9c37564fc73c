"""Queries of find-related's derived tables: the path vectors (`resource_embeddings`), the turn and session
centroids (`turn_access_patterns`, `session_access_patterns`) and the watermark of the last refresh
(`access_pattern_state`). How centroids are computed is `memex.related`'s business."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

import orjson


def json_list(values: Sequence[object]) -> str:
    """A JSON array for `json_each(?)`: one parameter however many values (no SQLite variable limit)."""
    return orjson.dumps(list(values)).decode()


# --- refresh state ----------------------------------------------------------------------------------------


def watermark(conn: sqlite3.Connection, version: str) -> int:
    """The last turn id the centroids of `version` were refreshed up to (-1: never)."""
    row = conn.execute("SELECT turn_watermark FROM access_pattern_state WHERE model_version = ?", (version,)).fetchone()
    return int(row[0]) if row else -1


def set_watermark(conn: sqlite3.Connection, version: str, top: int, stamp: str | None) -> None:
    """Record a refresh up to turn `top` (other versions' state goes; inside a transaction)."""
    conn.execute("DELETE FROM access_pattern_state WHERE model_version != ?", (version,))
    conn.execute(
        "INSERT INTO access_pattern_state (model_version, turn_watermark, updated_at) VALUES (?, ?, ?) "
        "ON CONFLICT (model_version) DO UPDATE SET turn_watermark = excluded.turn_watermark, "
        "updated_at = excluded.updated_at WHERE excluded.turn_watermark > turn_watermark",
        (version, top, stamp),
    )


def newest_turn(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM turns").fetchone()[0])


def marked_stale(conn: sqlite3.Connection) -> set[str]:
    """Sessions whose centroids a deleted turn made stale."""
    return {r[0] for r in conn.execute("SELECT session_id FROM session_access_patterns WHERE stale != 0")}


def last_turns_since(conn: sqlite3.Connection, after: int) -> list[tuple[str, int]]:
    """(session, its last turn id) of the sessions with a turn newer than `after`."""
    rows = conn.execute("SELECT session_id, max(id) FROM turns WHERE id > ? GROUP BY session_id", (after,))
    return [(r[0], r[1]) for r in rows]


def last_turns_of(conn: sqlite3.Connection, session_ids: Sequence[str]) -> list[tuple[str, int]]:
    """(session, its last turn id) of these sessions."""
    rows = conn.execute(
        "SELECT session_id, max(id) FROM turns WHERE session_id IN (SELECT value FROM json_each(?)) "
        "GROUP BY session_id",
        (json_list(session_ids),),
    )
    return [(r[0], r[1]) for r in rows]


def computed_up_to(conn: sqlite3.Connection, session_ids: Sequence[str], version: str) -> dict[str, int]:
    """Per session, the last turn id its stored centroid of `version` covers."""
    rows = conn.execute(
        "SELECT session_id, max_turn_id FROM session_access_patterns "
        "WHERE session_id IN (SELECT value FROM json_each(?)) AND model_version = ?",
        (json_list(session_ids), version),
    )
    return {r[0]: r[1] for r in rows}


# --- centroids --------------------------------------------------------------------------------------------


def replace_turn_patterns(
    conn: sqlite3.Connection, session_ids: Sequence[str], rows: Iterable[tuple[int, str, str, float, int, bytes]]
) -> None:
    """Replace these sessions' turn centroids: (turn_id, session_id, version, weight, files, embedding) rows."""
    conn.execute(
        "DELETE FROM turn_access_patterns WHERE session_id IN (SELECT value FROM json_each(?))",
        (json_list(session_ids),),
    )
    conn.executemany(
        "INSERT INTO turn_access_patterns (turn_id, session_id, model_version, weight, files, embedding) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )


def replace_session_patterns(
    conn: sqlite3.Connection, session_ids: Sequence[str], rows: Iterable[tuple[Any, ...]]
) -> None:
    """Replace these sessions' centroids: (session_id, version, turns, files, max_turn_id, embedding or None,
    computed_at) rows."""
    conn.execute(
        "DELETE FROM session_access_patterns WHERE session_id IN (SELECT value FROM json_each(?))",
        (json_list(session_ids),),
    )
    conn.executemany(
        "INSERT INTO session_access_patterns (session_id, model_version, turns, files, max_turn_id, embedding, "
        "computed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )


# --- path vectors -----------------------------------------------------------------------------------------


def paths_of_mentions(conn: sqlite3.Connection, mention_ids: Sequence[int]) -> list[str]:
    """The distinct paths these file mentions name."""
    rows = conn.execute(
        "SELECT DISTINCT file_path FROM file_mentions WHERE id IN (SELECT value FROM json_each(?))",
        (json_list(mention_ids),),
    )
    return [r[0] for r in rows]


def put_path_vectors(conn: sqlite3.Connection, rows: Sequence[tuple[str, str, bytes, str | None]]) -> int:
    """Cache (path, version, embedding, created_at) rows, keeping a path already cached; how many were new."""
    return conn.executemany(
        "INSERT OR IGNORE INTO resource_embeddings (resource, model_version, embedding, created_at) "
        "VALUES (?, ?, ?, ?)",
        rows,
    ).rowcount


def path_vectors(conn: sqlite3.Connection, resource_ids: Sequence[int]) -> dict[int, bytes]:
    """The cached vectors of these resource rows, by id."""
    rows = conn.execute(
        "SELECT id, embedding FROM resource_embeddings WHERE id IN (SELECT value FROM json_each(?))",
        (json_list(resource_ids),),
    )
    return {r[0]: r[1] for r in rows}
