"""The vector cache beside the database: exact and two-stage search, appends, rebuilds, deleted rows."""

from __future__ import annotations

import os

import numpy as np

from memex.config import load_config
from memex.search.vector import VectorIndex
from memex.store.db import transaction

DIM = 384


def _insert(conn, config, owners: range, vectors: np.ndarray, level: str = "turn") -> None:
    with transaction(conn):
        conn.executemany(
            "INSERT INTO vectors (level, owner_id, model_name, model_version, text_hash, embedding, created_at) "
            "VALUES (?, ?, ?, ?, '', ?, '2026-01-01T00:00:00.000Z')",
            [
                (level, o, config.embed_model, config.model_version, v.astype("<f4").tobytes())
                for o, v in zip(owners, vectors, strict=True)
            ],
        )


def _clustered(rng: np.random.Generator, count: int) -> np.ndarray:
    """Unit vectors around a shared direction, as an embedding model's are (cosines mostly 0.7-0.9)."""
    common = rng.standard_normal(DIM)
    centers = rng.standard_normal((40, DIM))
    vectors = 3 * common + centers[rng.integers(0, 40, count)] + 0.5 * rng.standard_normal((count, DIM))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_exact_search_finds_the_nearest_and_respects_allowed_owners(conn, config) -> None:
    rng = np.random.default_rng(1)
    vectors = _clustered(rng, 500)
    _insert(conn, config, range(1, 501), vectors)
    index = VectorIndex(config, "turn", DIM)
    query = vectors[41]
    found = index.search(conn, query, 5)
    assert found[0].owner_id == 42 and abs(found[0].cosine - 1.0) < 1e-5
    assert [n.cosine for n in found] == sorted((n.cosine for n in found), reverse=True)
    truth = np.argsort(-(vectors @ query))[:5] + 1
    assert [n.owner_id for n in found] == list(truth)
    allowed = np.arange(100, 200)
    assert {n.owner_id for n in index.search(conn, query, 5, allowed)} <= set(range(100, 200))
    assert index.search(conn, query, 5, np.array([9999])) == []


def test_new_rows_are_appended_and_deleted_rows_never_returned(conn, config) -> None:
    rng = np.random.default_rng(2)
    first = _clustered(rng, 300)
    _insert(conn, config, range(1, 301), first)
    index = VectorIndex(config, "turn", DIM)
    index.search(conn, first[0], 3)
    generation = index.generation
    added = _clustered(rng, 50)
    _insert(conn, config, range(301, 351), added)
    assert index.search(conn, added[7], 1)[0].owner_id == 308
    assert index.rows == 350 and index.generation == generation  # appended, not rebuilt
    with transaction(conn):
        conn.execute("DELETE FROM vectors WHERE owner_id = 308")
    assert 308 not in {n.owner_id for n in index.search(conn, added[7], 10)}
    # Another process (a fresh index object) reads the same cache files.
    other = VectorIndex(config, "turn", DIM)
    assert other.search(conn, first[3], 1)[0].owner_id == 4 and other.rows == 350


def test_rows_deleted_among_the_nearest_are_passed_over_batch_after_batch(conn, config) -> None:
    """The candidates' rows are looked up best first, as many as owners are still wanted: when the first
    batch holds deleted rows, the next ones fill the place, and the result is the nearest of what is left."""
    rng = np.random.default_rng(4)
    vectors = _clustered(rng, 500)
    _insert(conn, config, range(1, 501), vectors)
    index = VectorIndex(config, "turn", DIM)
    query = vectors[41]
    nearest = [int(i) + 1 for i in np.argsort(-(vectors @ query))]
    index.search(conn, query, 1)  # the cache holds every row
    with transaction(conn):
        conn.executemany("DELETE FROM vectors WHERE owner_id = ?", [(o,) for o in nearest[:12]])
    assert [n.owner_id for n in index.search(conn, query, 20)] == nearest[12:32]


def test_many_deletions_then_new_rows_rebuild_the_cache(conn, config) -> None:
    import memex.search.vector as vector

    rng = np.random.default_rng(3)
    _insert(conn, config, range(1, 401), _clustered(rng, 400))
    index = VectorIndex(config, "turn", DIM)
    index.search(conn, _clustered(rng, 1)[0], 1)
    generation = index.generation
    with transaction(conn):
        conn.execute("DELETE FROM vectors WHERE owner_id <= 300")
    _insert(conn, config, range(401, 411), _clustered(rng, 10))
    old = vector.MIN_DEAD_ROWS
    vector.MIN_DEAD_ROWS = 10
    try:
        index.search(conn, _clustered(rng, 1)[0], 1)
    finally:
        vector.MIN_DEAD_ROWS = old
    assert index.generation == generation + 1 and index.rows == 110


def test_two_stage_search_agrees_with_exact_search(conn, home) -> None:
    exact_config = load_config({**os.environ, "MEMEX_SEARCH_BINARY_ABOVE": "1000000"})
    binary_config = load_config(
        {**os.environ, "MEMEX_SEARCH_BINARY_ABOVE": "100", "MEMEX_SEARCH_RERANK_CANDIDATES": "600"}
    )
    rng = np.random.default_rng(4)
    common = rng.standard_normal(DIM)  # a shared direction, which the 1-bit codes must see past
    vectors = 3 * common + rng.standard_normal((3000, DIM))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    _insert(conn, exact_config, range(1, 3001), vectors)
    exact, binary = VectorIndex(exact_config, "turn", DIM), VectorIndex(binary_config, "turn", DIM)
    queries = vectors[:30] + 0.05 * rng.standard_normal((30, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    overlap = []
    for query in queries:
        truth = {n.owner_id for n in exact.search(conn, query, 10)}
        found = binary.search(conn, query, 10)
        overlap.append(len(truth & {n.owner_id for n in found}) / 10)
        assert len(found) == 10
    assert binary._bits is not None and exact._bits is None  # the two-stage path did run
    assert np.mean(overlap) >= 0.8


def test_codes_search_gives_the_exact_neighbours_scores_and_order(conn, config) -> None:
    """The search reads 8-bit codes and re-ranks the rows they cannot rule out: its neighbours, their
    cosines and their order are those of the float32 matrix, unfiltered and filtered, also for rows with
    near-equal cosines (a cluster of near-duplicates around the query)."""
    rng = np.random.default_rng(8)
    vectors = _clustered(rng, 3000)
    near = vectors[7] + 0.003 * rng.standard_normal((200, DIM))
    vectors[1000:1200] = near / np.linalg.norm(near, axis=1, keepdims=True)
    _insert(conn, config, range(1, 3001), vectors)
    index = VectorIndex(config, "turn", DIM)
    allowed = np.arange(1, 3001, 3)
    for query in [vectors[7], vectors[2500], *_clustered(rng, 20)]:
        exact = vectors @ query
        order = np.argsort(-exact, kind="stable")
        found = index.search(conn, query, 50)
        assert [n.owner_id for n in found] == list(order[:50] + 1)
        assert np.allclose([n.cosine for n in found], exact[order[:50]], atol=1e-6)
        admitted = [int(i) + 1 for i in order if (i + 1) % 3 == 1][:20]
        assert [n.owner_id for n in index.search(conn, query, 20, allowed)] == admitted
    assert index._codes is not None and index._codes.codes.dtype == np.int8  # the codes were read


def test_a_scan_made_beforehand_gives_the_same_neighbours(conn, config) -> None:
    rng = np.random.default_rng(9)
    vectors = _clustered(rng, 400)
    _insert(conn, config, range(1, 401), vectors)
    index = VectorIndex(config, "turn", DIM)
    index.prepare(conn)
    query = vectors[3]
    scanned = index.scanned(query)
    assert index.search(conn, query, 10, scanned=scanned) == index.search(conn, query, 10)
    allowed = np.arange(200, 401)
    assert index.search(conn, query, 10, allowed, scanned=scanned) == index.search(conn, query, 10, allowed)


def test_a_cache_without_codes_is_rebuilt(conn, config) -> None:
    """A cache written before the 8-bit codes existed is rebuilt once, then searched by its codes."""
    rng = np.random.default_rng(10)
    vectors = _clustered(rng, 100)
    _insert(conn, config, range(1, 101), vectors)
    index = VectorIndex(config, "turn", DIM)
    index.prepare(conn)
    generation = index.generation
    for name in ("codes.i8", "codes.f32"):
        (index.folder / name).unlink()
    other = VectorIndex(config, "turn", DIM)
    assert other.search(conn, vectors[5], 1)[0].owner_id == 6
    assert other.generation == generation + 1 and (other.folder / "codes.i8").stat().st_size == 100 * DIM
    # Rows appended by a memex that writes no codes: the codes are short of the rows, so it is rebuilt too.
    with open(other.folder / "codes.i8", "r+b") as handle:
        handle.truncate(90 * DIM)
    again = VectorIndex(config, "turn", DIM)
    assert again.search(conn, vectors[95], 1)[0].owner_id == 96 and again.generation == generation + 2


def test_a_cache_this_process_cannot_write_is_searched_from_memory_alike(conn, config) -> None:
    """A read-only store's vectors are coded in memory (their center is the mean of them all, not of the
    first rows written): the neighbours are still the exact ones, also after rows are added."""
    rng = np.random.default_rng(11)
    vectors = _clustered(rng, 600)
    _insert(conn, config, range(1, 601), vectors)
    on_disk = VectorIndex(config, "turn", DIM)
    in_memory = VectorIndex(config, "turn", DIM)
    in_memory._in_memory, in_memory.generation = True, -1
    for query in _clustered(rng, 5):
        assert in_memory.search(conn, query, 30) == on_disk.search(conn, query, 30)
    added = _clustered(rng, 50)
    _insert(conn, config, range(601, 651), added)
    assert in_memory.search(conn, added[3], 5) == on_disk.search(conn, added[3], 5)
    assert in_memory.search(conn, added[3], 1)[0].owner_id == 604 and in_memory.rows == 650


def test_a_search_for_fewer_lists_the_first_of_a_search_for_more_also_among_equal_cosines(conn, config) -> None:
    """The same texts embedded in many sessions ("continue", "yes") give equal cosines: they come by row, so
    a search for k neighbours is the start of one for more (a filtered search asks twice as many first)."""
    rng = np.random.default_rng(9)
    distinct = _clustered(rng, 60)
    vectors = np.concatenate([np.repeat(distinct, 8, axis=0), _clustered(rng, 300)])
    vectors = vectors[rng.permutation(len(vectors))]
    _insert(conn, config, range(1, len(vectors) + 1), vectors)
    index = VectorIndex(config, "turn", DIM)
    for query in (distinct[0], distinct[17], distinct[33], vectors[5]):
        longest = index.search(conn, query, 200, verify=False)
        for k in (1, 7, 20, 40, 100):
            assert index.search(conn, query, k, verify=False) == longest[:k]
        ties = [(n.cosine, n.owner_id) for n in longest[:8]]
        assert ties == sorted(ties, key=lambda tie: (-tie[0], tie[1]))  # equal cosines by row (owner = row here)


def test_each_cosine_is_the_whole_products_whatever_rows_are_re_ranked_with_it(conn, config) -> None:
    """BLAS rounds the rows of a partial last block differently: a re-ranked row's cosine is still the value
    the product of the whole matrix gives it, for any number of neighbours asked."""
    rng = np.random.default_rng(12)
    vectors = _clustered(rng, 700)
    _insert(conn, config, range(1, 701), vectors)
    index = VectorIndex(config, "turn", DIM)
    index.prepare(conn)
    for query_row in (0, 99, 350):
        whole = index._matrix @ vectors[query_row]
        for k in (1, 2, 3, 5, 6, 7, 11, 30, 61, 150):
            found = index.search(conn, vectors[query_row], k, verify=False)
            assert [n.cosine for n in found] == [float(whole[n.owner_id - 1]) for n in found]


def test_a_search_given_its_scan_searches_the_cache_as_scanned(conn, config) -> None:
    """The scan was made just after the cache was brought up to date: the search does not ask the store for
    its newest row again (only whether its candidates' rows still exist), and gives what a search without the
    scan gives."""
    rng = np.random.default_rng(14)
    vectors = _clustered(rng, 300)
    _insert(conn, config, range(1, 301), vectors)
    index = VectorIndex(config, "turn", DIM)
    index.prepare(conn)
    scanned = index.scanned(vectors[8])
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        found = index.search(conn, vectors[8], 5, scanned=scanned)
    finally:
        conn.set_trace_callback(None)
    assert found == index.search(conn, vectors[8], 5) and found[0].owner_id == 9
    assert statements and all("owner_id IN" in sql for sql in statements)
