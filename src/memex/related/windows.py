"""Windows of consecutive turn centroids scored against a query vector (`find-related turns`, stage 2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Window:
    """Turns [start, end) of a session's ordered turn centroids, and the window's cosine to the query."""

    start: int
    end: int
    score: float


def mean_direction(vectors: np.ndarray) -> np.ndarray:
    """The unit vector of the mean of `vectors` (rows)."""
    total = vectors.astype(np.float64).sum(axis=0)
    return (total / max(float(np.linalg.norm(total)), 1e-12)).astype(np.float32)


def best_windows(vectors: np.ndarray, query: np.ndarray, size: int, count: int) -> list[Window]:
    """The `count` best non-overlapping windows of `size` consecutive rows of `vectors` (unit turn centroids in
    time order), each scored by the cosine of its mean to `query` (a unit vector), best first. A session
    with fewer rows than `size` is one window of all of them."""
    rows = len(vectors)
    if rows == 0 or count <= 0:
        return []
    if rows <= size:
        return [Window(0, rows, float(mean_direction(vectors) @ query))]
    # Sliding sums from one cumulative sum: window i is sums[i + size] - sums[i].
    sums = np.concatenate([np.zeros((1, vectors.shape[1])), np.cumsum(vectors, axis=0, dtype=np.float64)])
    windows = sums[size:] - sums[:-size]
    scores = (windows @ query.astype(np.float64)) / np.maximum(np.linalg.norm(windows, axis=1), 1e-12)
    chosen: list[Window] = []
    for start in np.argsort(-scores, kind="stable"):
        start = int(start)
        if all(start + size <= w.start or start >= w.end for w in chosen):
            chosen.append(Window(start, start + size, float(scores[start])))
            if len(chosen) == count:
                break
    return chosen
