"""A vector level's rows as 8-bit codes: a quarter of the bytes to read per query, the same neighbours.

A search reads every row of its level, and reading memory is what it costs (300k chunk vectors of 384
float32 are 460 MB a query). Each row is kept a second time as int8 codes of its difference to the cache's
center (e5 vectors share a large common direction: what is left varies less, so the codes are finer), with
its scale and two numbers that bound the error: `error` = ‖x − c − x̂‖ and `norm` = ‖x̂‖, where x̂ is the
decoded difference. The query is coded to int8 too (q̂), and one SIMD pass (SimSIMD's int8 dot products)
estimates every row's cosine. By Cauchy-Schwarz the true cosine lies within ‖q‖·error + ‖q − q̂‖·norm of
the estimate, so the rows whose upper bound reaches the n-th best lower bound include the exact n
nearest. Those rows (a few thousand of 300k) are estimated again with what the query's codes missed coded
too (a pass over their codes alone), which rules out about half of them, and the caller re-ranks the rest
by their float32 cosine: the neighbours, scores and order an exact scan of the float32 matrix gives.
"""

from __future__ import annotations

import numpy as np
import simsimd

from memex.plain import Record

# Added to every bound: the rounding of float32 products (n·u·Σ|xᵢqᵢ| ≤ 384 · 6e-8 for unit vectors) and
# of the estimate's own arithmetic, with room to spare.
ROUNDING = 1e-4
LEVELS = 127  # int8 codes use -127…127 (symmetric)
# The floor of the candidates is first sought in a sample of this many rows per row wanted.
SAMPLE_PER_WANTED = 32


class Codes(Record):
    """int8 codes of rows minus `center`, and per row its scale, error and norm (float32)."""

    __slots__ = ("center", "codes", "error", "norm", "scale")

    codes: np.ndarray  # (rows, dim) int8
    scale: np.ndarray  # (rows,)
    error: np.ndarray  # (rows,) ‖x − c − x̂‖
    norm: np.ndarray  # (rows,) ‖x̂‖
    center: np.ndarray  # (dim,)

    def __init__(
        self,
        codes: np.ndarray,
        scale: np.ndarray,
        error: np.ndarray,
        norm: np.ndarray,
        center: np.ndarray,
    ) -> None:
        self.codes = codes
        self.scale = scale
        self.error = error
        self.norm = norm
        self.center = center

    @classmethod
    def of(cls, codes: np.ndarray, bounds: np.ndarray, center: np.ndarray) -> Codes:
        """From `encode`'s codes and (rows, 3) bounds, as the cache stores them."""
        scale, error, norm = np.ascontiguousarray(bounds.T, dtype=np.float32)
        return cls(codes, scale, error, norm, center)


class Estimate(Record):
    """Every row's estimated cosine to a query and how far its true cosine can be from it (float32)."""

    __slots__ = ("approx", "slack")

    approx: np.ndarray
    slack: np.ndarray

    def __init__(self, approx: np.ndarray, slack: np.ndarray) -> None:
        self.approx = approx
        self.slack = slack


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


def _coded(query: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """`query` (float32) as int8 codes, their scale, and what they miss (query − decoded)."""
    scale = float(np.abs(query).max()) / LEVELS or 1.0
    coded = np.rint(query / np.float32(scale)).astype(np.int8)
    return coded, scale, query - coded * np.float32(scale)


def _dots(codes: np.ndarray, coded: np.ndarray) -> np.ndarray:
    """Each row's integer dot product with `coded`, as float32 (at most 384 · 127² < 2²⁴: exact)."""
    return np.asarray(simsimd.cdist(codes, coded[None], metric="dot", out_dtype="float32")).reshape(-1)


class Pass:
    """A query's `estimate` of every row of `codes`, made rows by rows (`rows`), by any thread: two threads
    may take a level's blocks in turn. Until every row was done, `estimate` holds garbage."""

    __slots__ = ("coded", "codes", "estimate", "missed_norm", "offset", "query_norm", "scale")

    def __init__(self, codes: Codes, query: np.ndarray) -> None:
        query = query.astype(np.float32)
        self.codes = codes
        self.coded, scale, missed = _coded(query)
        self.scale = np.float32(scale)
        self.offset = np.float32(query @ codes.center)
        self.query_norm = np.float32(np.linalg.norm(query))
        self.missed_norm = np.float32(np.linalg.norm(missed))
        rows = len(codes.codes)
        self.estimate = Estimate(np.empty(rows, np.float32), np.empty(rows, np.float32))

    def rows(self, start: int, stop: int) -> None:
        """Estimate rows `start` to `stop` (one pass over their codes)."""
        if stop <= start:
            return
        approx, slack = self.estimate.approx[start:stop], self.estimate.slack[start:stop]
        simsimd.cdist(
            self.codes.codes[start:stop], self.coded[None], metric="dot", out_dtype="float32", out=approx[:, None]
        )
        approx *= self.scale
        approx *= self.codes.scale[start:stop]
        approx += self.offset
        np.multiply(self.codes.error[start:stop], self.query_norm, out=slack)
        slack += self.codes.norm[start:stop] * self.missed_norm
        slack += np.float32(ROUNDING)


def estimate(codes: Codes, query: np.ndarray) -> Estimate:
    """Every row's estimated cosine to `query` (one pass over the codes) and its error bound."""
    work = Pass(codes, query)
    work.rows(0, len(codes.codes))
    return work.estimate


def _refined(codes: Codes, query: np.ndarray, rows: np.ndarray, found: Estimate) -> Estimate:
    """`found` for `rows` only, with what the query's codes missed coded and added too: the query's
    share of the bound falls from ~0.006 to ~3e-5, leaving the rows' own coding error."""
    query = query.astype(np.float32)
    _, _, missed = _coded(query)
    coded, scale, rest = _coded(missed)
    approx = _dots(codes.codes[rows], coded)
    approx *= np.float32(scale)
    approx *= codes.scale[rows]
    approx += found.approx[rows]
    slack = codes.error[rows] * np.float32(np.linalg.norm(query))
    slack += codes.norm[rows] * np.float32(np.linalg.norm(rest))
    slack += np.float32(ROUNDING)
    return Estimate(approx, slack)


def candidates(
    codes: Codes, query: np.ndarray, count: int, mask: np.ndarray | None = None, found: Estimate | None = None
) -> np.ndarray:
    """Positions (ascending) of rows that hold the `count` rows of highest true cosine to `query` (among
    `mask`'s). `found`: the query's `estimate`, when made beforehand. The rows the estimate cannot rule
    out are estimated again, finer (a second pass over their codes alone), which rules most of them out:
    the caller reads fewer float32 rows (200 wanted of 300k: ~4,000 rows, then ~1,000)."""
    found = estimate(codes, query) if found is None else found
    rows = _reaching(found, count, mask)
    if len(rows) <= count:
        return rows
    return rows[_reaching(_refined(codes, query, rows, found), count)]


def _reaching(found: Estimate, count: int, mask: np.ndarray | None = None) -> np.ndarray:
    """Positions (ascending) of the rows (among `mask`'s) whose upper bound reaches the `count`-th highest
    lower bound: they hold the `count` rows of highest true cosine."""
    low = found.approx - found.slack
    if mask is not None:
        low[~mask] = -np.inf
    admitted = len(low) if mask is None else int(mask.sum())
    if admitted <= count:
        return np.arange(len(low)) if mask is None else np.flatnonzero(mask)
    # Rows whose upper bound reaches a value below that floor (found from a sample) include every row whose
    # lower bound does, so the floor is found among them alone.
    rows = np.flatnonzero(found.approx + found.slack >= _below_floor(low, count))
    if mask is not None:
        rows = rows[mask[rows]]
    floor = np.partition(low[rows], len(rows) - count)[len(rows) - count]
    return rows[found.approx[rows] + found.slack[rows] >= floor]


def _below_floor(low: np.ndarray, count: int) -> float:
    """A value at most the `count`-th highest of `low`: from a strided sample when enough rows reach it
    (expected ~2 × `count`), else the value itself."""
    step = len(low) // (SAMPLE_PER_WANTED * count)
    if step >= 2:
        sample = low[::step]
        rank = min(len(sample), 2 * count // step + 1)
        guess = float(np.partition(sample, len(sample) - rank)[len(sample) - rank])
        if np.count_nonzero(low >= guess) >= count:
            return guess
    return float(np.partition(low, len(low) - count)[len(low) - count])
