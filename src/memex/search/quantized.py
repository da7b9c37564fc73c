"""A vector level's rows as 8-bit codes: a quarter of the bytes to read per query, the same neighbours.

A search reads every row of its level, and reading memory is what it costs (300k chunk vectors of 384
float32 are 460 MB a query). Each row is kept a second time as int8 codes of its difference to the cache's
center (e5 vectors share a large common direction: what is left varies less, so the codes are finer), with
its scale and two numbers that bound the error: `error` = ‖x − c − x̂‖ and `norm` = ‖x̂‖, where x̂ is the
decoded difference. The query is split in two int8 parts (the second codes what the first missed, so its
own error is ~1e-5), and one SIMD pass (SimSIMD's int8 dot products, two per row) estimates every row's
cosine. By Cauchy-Schwarz the true cosine lies within ‖q‖·error + ‖q − q̂‖·norm of the estimate, so the rows
whose upper bound reaches the n-th best lower bound include the exact n nearest: the caller re-ranks
those few hundred rows by their float32 cosine and gets the neighbours, scores and order an exact scan
of the float32 matrix gives. On 300k chunk vectors: ~5 ms instead of ~40, 600-900 rows re-ranked for 200
wanted (bench/query_latency.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import simsimd

# Added to every bound: the rounding of float32 products (n·u·Σ|xᵢqᵢ| ≤ 384 · 6e-8 for unit vectors) and
# of the estimate's own arithmetic, with room to spare.
ROUNDING = 1e-4
LEVELS = 127  # int8 codes use -127…127 (symmetric)


@dataclass
class Codes:
    """int8 codes of rows minus `center`, and per row (scale, error, norm) as float32 columns."""

    codes: np.ndarray  # (rows, dim) int8
    bounds: np.ndarray  # (rows, 3) float32: scale, ‖x − c − x̂‖, ‖x̂‖
    center: np.ndarray  # (dim,) float32


@dataclass
class Estimate:
    """Every row's estimated cosine to a query and how far its true cosine can be from it."""

    approx: np.ndarray  # (rows,) float64
    slack: np.ndarray  # (rows,) float64


def encode(matrix: np.ndarray, center: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 codes, (rows, 3) float32 scale / error / norm) of the rows of `matrix` minus `center`."""
    rest = matrix.astype(np.float32) - center
    scale = np.abs(rest).max(axis=1) / LEVELS
    scale[scale == 0] = 1.0  # a row equal to the center: all codes 0, exact
    codes = np.rint(rest / scale[:, None]).astype(np.int8)
    decoded = codes * scale[:, None]
    error = np.linalg.norm(rest - decoded, axis=1)
    norm = np.linalg.norm(decoded, axis=1)
    return codes, np.stack([scale, error, norm], axis=1).astype(np.float32)


def _split(query: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """The query as two int8 parts (2, dim), their scales, and the norm of what both miss."""
    parts, scales, rest = [], [], query.astype(np.float64)
    for _ in range(2):
        scale = float(np.abs(rest).max()) / LEVELS or 1.0
        part = np.rint(rest / scale).astype(np.int8)
        rest = rest - part.astype(np.float64) * scale
        parts.append(part)
        scales.append(scale)
    return np.stack(parts), np.array(scales), float(np.linalg.norm(rest))


def estimate(codes: Codes, query: np.ndarray) -> Estimate:
    """Every row's estimated cosine to `query` (one pass over the codes) and its error bound."""
    parts, scales, missed = _split(query)
    if len(codes.codes) == 0:
        return Estimate(np.zeros(0), np.zeros(0))
    dots = np.asarray(simsimd.cdist(codes.codes, parts, metric="dot"), dtype=np.float64)  # exact integers
    scale, error, norm = codes.bounds[:, 0], codes.bounds[:, 1], codes.bounds[:, 2]
    approx = (dots @ scales) * scale + float(query.astype(np.float64) @ codes.center)
    slack = float(np.linalg.norm(query)) * error + missed * norm + ROUNDING
    return Estimate(approx, slack)


def candidates(found: Estimate, count: int, mask: np.ndarray | None = None) -> np.ndarray:
    """Positions (ascending) of rows that hold the `count` rows of highest true cosine (among `mask`'s):
    each row whose upper bound reaches the `count`-th highest lower bound."""
    low = found.approx - found.slack
    if mask is not None:
        low = np.where(mask, low, -np.inf)
    admitted = len(low) if mask is None else int(mask.sum())
    if admitted <= count:
        return np.arange(len(low)) if mask is None else np.flatnonzero(mask)
    floor = np.partition(low, len(low) - count)[len(low) - count]
    keep = found.approx + found.slack >= floor
    return np.flatnonzero(keep if mask is None else keep & mask)
