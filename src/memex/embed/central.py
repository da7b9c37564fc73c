"""A session's vector taken from its turns' vectors: no model call.

A session indexed here has its turns embedded one by one; the vector of its most central turn (the one
nearest the mean of them all) says what the session is about as well as an extractive summary read by the
model, and costs nothing. Not the mean itself: a mean of unit vectors, made unit length again, sits nearer
every query than any text does, so it passed the content-free anchors for questions no session answers (on
the real transcripts, 42% of LoCoMo's daily-life questions got a result instead of 4%). Another
computer's session (known here only by its mirror) has no turns here: its vector is still computed from
its summary (`texts.session_summary`), as is every session's when an LLM writes the summaries.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from memex.config import Config


def central_turn_vectors(
    conn: sqlite3.Connection, mirror_ids: Iterable[int], config: Config
) -> dict[int, tuple[str, bytes]]:
    """For each mirror of a session indexed here whose turns have vectors (this model version): the text
    hash and the vector of its most central turn (nearest the mean of its turns' vectors)."""
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
    central = {}
    for mirror_id, turns in members.items():
        matrix = np.stack([np.frombuffer(blob, dtype="<f4") for _, blob in turns])
        central[mirror_id] = turns[int(np.argmax(matrix @ matrix.mean(axis=0)))]
    return central
