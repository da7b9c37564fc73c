"""8-bit codes of vectors: every row's true cosine lies within its bound, so the candidates hold the nearest."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from memex.search.quantized import Codes, _reaching, candidates, encode, estimate

DIM = 384


def _codes(matrix: np.ndarray) -> Codes:
    center = matrix[: max(1, len(matrix) // 2)].mean(axis=0).astype(np.float32)
    return Codes.of(*encode(matrix, center), center)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 400),
    spread=st.sampled_from([0.0, 0.001, 0.1, 1.0, 10.0]),
    count=st.integers(1, 60),
)
def test_true_cosines_lie_within_the_bounds_and_the_nearest_are_candidates(seed, rows, spread, count) -> None:
    """Any rows (from near-duplicates to unrelated directions, unit or not, some zero): the estimate is
    within its slack of the float32 product, and the candidates include every row of the `count` best."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(DIM)
    matrix = (3 * common + spread * rng.standard_normal((rows, DIM))).astype(np.float32)
    matrix[rng.random(rows) < 0.05] = 0.0
    query = rng.standard_normal(DIM) + 3 * common
    query = (query / np.linalg.norm(query)).astype(np.float32)
    codes = _codes(matrix)
    found = estimate(codes, query)
    exact = (matrix @ query).astype(np.float64)
    assert np.all(np.abs(exact - found.approx) <= found.slack)
    chosen = set(candidates(codes, query, count, found=found).tolist())
    threshold = np.sort(exact)[::-1][min(count, rows) - 1]
    assert set(np.flatnonzero(exact > threshold).tolist()) <= chosen
    assert len(chosen) >= min(count, rows)
    mask = rng.random(rows) < 0.5
    if mask.any():
        masked = set(candidates(codes, query, count, mask).tolist())
        assert masked <= set(np.flatnonzero(mask).tolist())
        admitted = np.where(mask, exact, -np.inf)
        cut = np.sort(admitted)[::-1][min(count, int(mask.sum())) - 1]
        assert set(np.flatnonzero(admitted > cut).tolist()) <= masked


def _clustered(rng: np.random.Generator, count: int, noise: float) -> np.ndarray:
    common = rng.standard_normal(DIM)
    centers = rng.standard_normal((40, DIM))
    matrix = 3 * common + centers[rng.integers(0, 40, count)] + noise * rng.standard_normal((count, DIM))
    return (matrix / np.linalg.norm(matrix, axis=1, keepdims=True)).astype(np.float32)


def test_codes_rule_out_most_rows_of_clustered_vectors() -> None:
    """On vectors clustered as an embedding model's are, a few percent of the rows remain to re-rank."""
    matrix = _clustered(np.random.default_rng(3), 20_000, 0.5)
    codes = _codes(matrix)
    assert codes.codes.dtype == np.int8 and codes.codes.shape == (20_000, DIM)
    chosen = candidates(codes, matrix[11], 200)
    exact = matrix @ matrix[11]
    assert set(np.argsort(-exact)[:200].tolist()) <= set(chosen.tolist())
    assert len(chosen) < 2_000


def test_the_finer_second_estimate_rules_out_more_rows() -> None:
    """The rows the first estimate keeps are estimated again with the query's coding error coded too:
    fewer remain, and still every one of the nearest."""
    matrix = _clustered(np.random.default_rng(5), 20_000, 2.0)
    codes = _codes(matrix)
    first = _reaching(estimate(codes, matrix[11]), 200)
    chosen = candidates(codes, matrix[11], 200)
    assert set(chosen.tolist()) < set(first.tolist())
    assert set(np.argsort(-(matrix @ matrix[11]))[:200].tolist()) <= set(chosen.tolist())


def test_no_rows() -> None:
    empty = Codes.of(np.zeros((0, DIM), np.int8), np.zeros((0, 3), np.float32), np.zeros(DIM, np.float32))
    found = estimate(empty, np.ones(DIM, np.float32) / np.sqrt(DIM))
    assert len(candidates(empty, np.ones(DIM, np.float32), 10, found=found)) == 0
