"""A query's 8-bit scans, shared by the thread that embedded the query and the one waiting for it.

A hybrid search embeds the query on one thread while it searches the words on its own, then waits; once the
vector is known, the scans of the chunk and turn codes (~7 ms on an idle machine, reading 150 MB) are all
that stands before the rest of the search, and the waiting thread would sit idle beside them. Both threads
now take the levels' blocks of rows in turn, each block taken by whichever asks first: on an idle machine
the two cores read at once (a 300k-row level 5.4 → 3.0 ms), and on a busy one a thread the scheduler keeps
waiting leaves its blocks to the other (it can hold up the end by one block, ~0.5 ms), where a fixed split
waited for the late half.
"""

from __future__ import annotations

import itertools
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from memex.search.quantized import Pass
    from memex.search.vector import Scan, VectorIndex

BLOCK_ROWS = 32_768  # rows a thread takes at a time (12 MB of codes, ~0.5 ms)


class SharedScans:
    """The scans of `indexes` for one query: `begin` once the vector is known (the embedding's thread), then
    `help` from both threads; `scans` once `wait` returned."""

    def __init__(self, indexes: dict[str, VectorIndex]) -> None:
        self._indexes = indexes
        self._ready = threading.Event()  # the blocks are known (or the embedding failed: none)
        self._done = threading.Event()  # every block was scanned (or one failed)
        self._lock = threading.Lock()
        self._blocks: list[tuple[Pass, int, int]] = []
        self._taken = itertools.count()  # next() is atomic: each block goes to one thread
        self._left = 0
        self._failed = False
        self._scans: dict[str, Scan] = {}

    def begin(self, vector: np.ndarray) -> None:
        """Lay out the blocks of every level for `vector` and let the waiting thread take them too."""
        blocks: list[tuple[Pass, int, int]] = []
        try:
            for level, index in self._indexes.items():
                scan, work = index.scanning(vector)
                self._scans[level] = scan
                rows = len(scan.estimate.approx)
                blocks += [(work, start, min(start + BLOCK_ROWS, rows)) for start in range(0, rows, BLOCK_ROWS)]
        except BaseException:
            self.abandon()  # no block laid out: the waiting thread scans nothing for nothing
            raise
        self._blocks, self._left = blocks, len(blocks)
        if not self._blocks:
            self._done.set()
        self._ready.set()

    def abandon(self) -> None:
        """No scans after all (the embedding failed): a thread waiting to help goes on."""
        self._failed = True
        self._done.set()
        self._ready.set()

    def help(self) -> None:
        """Once the blocks are known, scan blocks until none is left to take (returns at once when the
        embedding failed)."""
        self._ready.wait()
        while (i := next(self._taken)) < len(self._blocks):
            work, start, stop = self._blocks[i]
            try:
                work.rows(start, stop)
            except BaseException:
                self._failed = True
                raise
            finally:
                with self._lock:
                    self._left -= 1
                    if self._left == 0 or self._failed:
                        self._done.set()

    def scans(self) -> dict[str, Scan]:
        """Each level's scan, once every block is done; none when the embedding or a block failed (the
        thread that met the failure raises it)."""
        self._done.wait()
        return {} if self._failed else self._scans
