"""A query's scans shared by two threads: the same estimates as one thread's scan, and no thread left
waiting when the embedding or a block fails."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from test_vector_index import DIM, _clustered, _insert

import memex.search.sharedscan as sharedscan
from memex.search.quantized import Pass
from memex.search.sharedscan import SharedScans
from memex.search.vector import VectorIndex


def _indexes(conn, config) -> dict[str, VectorIndex]:
    rng = np.random.default_rng(21)
    _insert(conn, config, range(1, 2_001), _clustered(rng, 2_000), "chunk")
    _insert(conn, config, range(1, 701), _clustered(rng, 700), "turn")
    indexes = {level: VectorIndex(config, level, DIM) for level in ("chunk", "turn")}
    for index in indexes.values():
        index.prepare(conn)
    return indexes


def test_two_threads_taking_blocks_give_each_levels_scan(conn, config, monkeypatch) -> None:
    """Blocks of 96 rows (21 of the chunks', 8 of the turns'), taken by the embedding's thread and the one
    waiting for it: every estimate is the one scanning the level on one thread gives, and searches given
    them find what searches without them find."""
    monkeypatch.setattr(sharedscan, "BLOCK_ROWS", 96)
    indexes = _indexes(conn, config)
    query = _clustered(np.random.default_rng(22), 1)[0]
    shared = SharedScans(indexes)
    taken: dict[str, int] = {}
    rows = Pass.rows

    both = threading.Barrier(2, timeout=30)  # each thread's first block waits for the other's: both take some

    def counted(self: Pass, start: int, stop: int) -> None:  # the real pass, its thread noted
        name = threading.current_thread().name
        if name not in taken:
            taken[name] = 0
            both.wait()
        taken[name] += 1
        rows(self, start, stop)

    monkeypatch.setattr(Pass, "rows", counted)

    def embedding_thread() -> None:
        shared.begin(query)
        shared.help()

    other = threading.Thread(target=embedding_thread, name="embedding")
    other.start()
    shared.help()
    scans = shared.scans()
    other.join()
    assert sum(taken.values()) == 21 + 8 and len(taken) == 2 and set(scans) == {"chunk", "turn"}
    for level, index in indexes.items():
        alone = index.scanned(query).estimate
        assert np.array_equal(scans[level].estimate.approx, alone.approx)
        assert np.array_equal(scans[level].estimate.slack, alone.slack)
        assert index.search(conn, query, 10, scanned=scans[level]) == index.search(conn, query, 10)


def test_a_failed_embedding_or_block_leaves_nobody_waiting_and_no_scans(conn, config, monkeypatch) -> None:
    indexes = _indexes(conn, config)
    failed = SharedScans(indexes)
    failed.abandon()  # the embedding raised
    failed.help()  # returns at once
    assert _scans_within(failed, 10) == [{}]

    def broken(self: Pass, start: int, stop: int) -> None:
        raise MemoryError("no room")

    monkeypatch.setattr(Pass, "rows", broken)
    shared = SharedScans(indexes)
    shared.begin(_clustered(np.random.default_rng(23), 1)[0])
    with pytest.raises(MemoryError):
        shared.help()
    assert _scans_within(shared, 10) == [{}]  # the embedding's thread goes on; a search given none scans anew


def _scans_within(shared: SharedScans, seconds: float) -> list[dict]:
    """`shared.scans()`, waited for at most `seconds` (nothing when it never came)."""
    found: list[dict] = []
    waiter = threading.Thread(target=lambda: found.append(shared.scans()), daemon=True)
    waiter.start()
    waiter.join(seconds)
    return found
