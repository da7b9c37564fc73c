"""How rare each file is, and the score that combines the files two pieces of work share with their centroids.

The centroid similarity alone says little: the paths of one project read alike, so any two of its sessions
score 0.85–0.96 by cosine, and a session that shares no file can outrank one that edited the same files.
Files in common are the stronger evidence, but not all files are equal: a `README.md` or a `pyproject.toml`
that every session opens says nothing about what a session did. So:

- rarity(f) = ln(N / n_f), with N the sessions that touched a file that counts (those with a centroid)
  and n_f those that touched f. A file every session touched weighs 0; one only two sessions touched weighs
  most. (An inverse document frequency, over sessions.)
- shared(q, r) = Σ rarity(f) over the files both touched / Σ rarity(f) over the files of q: the share of
  what distinguishes the work q did that r also did, in [0, 1] (0 when q's files are all everywhere).
- score = w · shared + (1 − w) · similarity, w = `related_shared_weight_pct` / 100, similarity the centroids' cosine.

Results that share a file of some rarity (shared > 0) come first, by score; the others follow, by score
(then it is their similarity that orders them).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from memex.config import Config
from memex.related.resources import counted_tools_sql
from memex.store.access_patterns import json_list


@dataclass(frozen=True)
class Rarity:
    """The sessions that touched each of a query's files, and how many sessions touched any file."""

    sessions: int  # N: sessions with a centroid
    touched_by: dict[str, frozenset[str]]  # file -> the sessions that touched it

    def weight(self, path: str) -> float:
        """ln(N / n_f): 0 for a file every session touched (and for one no session is known to have)."""
        count = len(self.touched_by.get(path, ()))
        return math.log(self.sessions / count) if count and self.sessions > count else 0.0

    def session_count(self, path: str) -> int:
        return len(self.touched_by.get(path, ()))

    def shared(self, mine: Iterable[str], theirs: Iterable[str]) -> float:
        """The rarity-weighted share of `mine` (the query's files) that `theirs` also holds, in [0, 1]."""
        mine = set(mine)
        total = sum(self.weight(path) for path in mine)
        if total <= 0:
            return 0.0
        return sum(self.weight(path) for path in mine.intersection(theirs)) / total

    def sharing(self) -> dict[str, set[str]]:
        """Per session, the query's files it touched."""
        found: dict[str, set[str]] = {}
        for path, sessions in self.touched_by.items():
            for session_id in sessions:
                found.setdefault(session_id, set()).add(path)
        return found


def rarity(conn: sqlite3.Connection, config: Config, paths: Sequence[str], sessions: int | None = None) -> Rarity:
    """The rarity of `paths` (counted files) over the whole store, whatever filters a search has: how rare a
    file is does not depend on which results one asks for. `sessions`: N when the caller knows it."""
    condition, params = counted_tools_sql()
    total = sessions
    if total is None:
        total = conn.execute(
            "SELECT count(*) FROM session_access_patterns WHERE embedding IS NOT NULL AND model_version = ?",
            (config.resource_model_version,),
        ).fetchone()[0]
    rows = conn.execute(
        "SELECT DISTINCT fm.file_path, fm.session_id FROM file_mentions fm "
        f"WHERE fm.file_path IN (SELECT value FROM json_each(?)) AND {condition}",
        [json_list(list(dict.fromkeys(paths))), *params],
    ).fetchall()
    touched: dict[str, set[str]] = {}
    for path, session_id in rows:
        touched.setdefault(path, set()).add(session_id)
    return Rarity(max(int(total), 1), {path: frozenset(ids) for path, ids in touched.items()})


def combined(shared: float, similarity: float, config: Config) -> float:
    """The score of a result: `related_shared_weight_pct`% of shared + the rest of similarity."""
    weight = config.related_shared_weight_pct / 100
    return weight * shared + (1.0 - weight) * similarity


def order_key(shared: float, score: float) -> tuple[bool, float]:
    """Sort key, descending: results sharing a file of some rarity first, then by score."""
    return (shared > 0, score)
