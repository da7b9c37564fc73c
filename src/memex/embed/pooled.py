"""A session's vector pooled from its turns' vectors: no model call.

A session indexed here has its turns embedded one by one; the mean of their vectors (made unit length)
says what the session is about as well as an extractive summary read by the model, and costs nothing.
Another computer's session (known here only by its mirror) has no turns here: its vector is still computed
from its summary (`texts.session_summary`), as is every session's when an LLM writes the summaries.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from memex.config import Config
from memex.embed.texts import text_hash


def pooled_session_vectors(
    conn: sqlite3.Connection, mirror_ids: Iterable[int], config: Config
) -> dict[int, tuple[str, bytes]]:
    """For each mirror of a session indexed here whose turns have vectors (this model version): the hash
    naming what it was pooled from (never a text's hash) and the unit-length mean of those vectors."""
    import numpy as np

    ids = list(mirror_ids)
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(
        "SELECT m.id, v.text_hash, v.embedding FROM mirrors m "
        "JOIN sessions s ON s.session_id = m.session_id AND s.computer = m.computer "
        "JOIN turns t ON t.session_id = s.session_id "
        "JOIN vectors v ON v.level = 'turn' AND v.owner_id = t.id AND v.model_version = ? "
        f"WHERE m.id IN ({marks}) ORDER BY m.id, t.id",
        [config.model_version, *ids],
    ).fetchall()
    members: dict[int, list[tuple[str, bytes]]] = {}
    for mirror_id, digest, blob in rows:
        members.setdefault(mirror_id, []).append((digest, blob))
    pooled = {}
    for mirror_id, turns in members.items():
        mean = np.mean([np.frombuffer(blob, dtype="<f4") for _, blob in turns], axis=0)
        norm = float(np.linalg.norm(mean))
        if norm > 0:
            name = text_hash("turns:" + ",".join(digest for digest, _ in turns))
            pooled[mirror_id] = (name, (mean / norm).astype("<f4").tobytes())
    return pooled
