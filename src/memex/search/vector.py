"""Nearest-neighbour search over the stored vectors of one level and one model.

The `vectors` table is the truth; search reads a cache of it beside the database: a float32 matrix
(memory-mapped, so a fresh process starts at once and the OS keeps it warm between processes), the ids of
its rows, their 8-bit codes (`memex.search.quantized`: the difference to the mean of the first rows cached,
the center) and 1-bit codes (per dimension, whether the vector lies above the center: e5 vectors share a
large common direction, so plain signs would be nearly alike for all of them). Each
search first brings the cache up to date: rows added since its watermark are appended; when many rows
were deleted (turns rebuilt, mirrors replaced) it is rebuilt. Rows deleted meanwhile are filtered out
against the table.

A store this process cannot write (a read-only mount, another user's folder) is searched all the same: an
up-to-date cache is read as it is, and otherwise the process keeps its own copy of the vectors in memory.

Up to `search_binary_above` rows the search is exact: the 8-bit codes bound every row's cosine (384 bytes
read a row), and the few hundred rows that may be among the nearest are re-ranked by their float32 cosine,
which gives the neighbours an exact scan of the float32 matrix gives, at a quarter of the reading. Above
it, Hamming distance over the 1-bit codes picks `search_rerank_candidates` rows that exact cosine
re-ranks, reading 48 bytes a row (bench/search.py measures both). Why not an ANN library: see the README.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson

from memex.config import Config
from memex.plain import Record
from memex.search.quantized import Codes, Estimate, Pass, candidates, encode, estimate
from memex.store.db import is_read_only_error, make_private_folder, open_private

log = logging.getLogger("memex.search")

# Rebuild the cache when more than this share of its rows (and at least MIN_DEAD_ROWS) were deleted.
DEAD_SHARE = 0.2
MIN_DEAD_ROWS = 1_000
FETCH_ROWS = 10_000  # rows read from SQLite per step while filling the cache
MIN_CHECKED = 16  # candidates whose rows are looked up at least at a time (`VectorIndex._alive`)
BLAS_BLOCK = 32  # rows re-ranked are padded to a multiple of this (`_cosines`): any BLAS block size up to it
CACHE_FILES = ("matrix.f32", "ids.i64", "owners.i64", "bits.u8", "center.f32", "codes.i8", "codes.f32")


class Neighbour(Record):
    """An owner (chunk, turn or mirror id) and its cosine similarity to the query."""

    __slots__ = ("cosine", "owner_id")

    owner_id: int
    cosine: float

    def __init__(self, owner_id: int, cosine: float) -> None:
        self.owner_id = owner_id
        self.cosine = cosine


class Scan(Record):
    """A query's estimated cosine to every row of a cache, as it was (rows, generation) when scanned."""

    __slots__ = ("cache", "estimate", "query")

    query: np.ndarray
    cache: tuple[int, int]
    estimate: Estimate

    def __init__(self, query: np.ndarray, cache: tuple[int, int], estimate: Estimate) -> None:
        self.query = query
        self.cache = cache
        self.estimate = estimate


class VectorIndex:
    """The cached vectors of one level of one model, with exact or two-stage (1-bit, then exact) search."""

    def __init__(self, config: Config, level: str, dimension: int) -> None:
        self.config, self.level, self.dimension = config, level, dimension
        self.folder = config.home / "vectors" / config.embed_model / level
        self.rows = 0
        self.max_id = 0
        self.generation = 0
        self._matrix: np.ndarray | None = None
        self._ids: np.ndarray | None = None
        self._owners: np.ndarray | None = None
        self._bits: np.ndarray | None = None
        self._center: np.ndarray | None = None
        self._codes: Codes | None = None
        self._loaded: tuple[int, int] | None = None
        self._in_memory = False  # the cache cannot be written here: this process holds its own copy

    # --- the cache on disk ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _lock(self, exclusive: bool) -> Iterator[None]:
        if exclusive:
            make_private_folder(self.folder)
            descriptor = open_private(self.folder / "lock")
        else:  # a reader needs no write access: a read-only store's cache is read under a shared lock
            try:
                descriptor = os.open(self.folder / "lock", os.O_RDONLY)
            except FileNotFoundError:
                yield  # no lock file: no writer ever wrote this cache
                return
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield
        finally:
            os.close(descriptor)  # releases the lock

    def _manifest(self) -> tuple[int, int, int]:
        """(rows, highest vector id, generation) of the cache; zeros when there is none."""
        try:
            data = orjson.loads((self.folder / "manifest.json").read_bytes())
            if data.get("dimension") == self.dimension:
                return int(data["rows"]), int(data["max_id"]), int(data["generation"])
        except (FileNotFoundError, ValueError, KeyError, TypeError):
            pass
        return 0, 0, 0

    def _save_manifest(self, rows: int, max_id: int, generation: int) -> None:
        temporary = self.folder / "manifest.json.tmp"
        _write(
            temporary,
            orjson.dumps({"rows": rows, "max_id": max_id, "generation": generation, "dimension": self.dimension}),
            truncate=True,
        )
        os.replace(temporary, self.folder / "manifest.json")

    def _append(self, conn: sqlite3.Connection, after_id: int, suffix: str) -> tuple[int, int]:
        """Append rows with id > `after_id` to the cache files (named with `suffix`); (rows added, last id)."""
        added, last = 0, after_id
        for batch in self._rows_after(conn, after_id):
            matrix = np.frombuffer(b"".join(r[2] for r in batch), dtype="<f4").reshape(len(batch), self.dimension)
            ids = np.array([r[0] for r in batch], dtype=np.int64)
            owners = np.array([r[1] for r in batch], dtype=np.int64)
            center_file = self.folder / ("center.f32" + suffix)
            if not center_file.exists():  # the first rows of a (re)build set the center for good
                _write(center_file, matrix.mean(axis=0).astype("<f4").tobytes(), truncate=True)
            center = np.fromfile(center_file, dtype="<f4")
            codes, bounds = encode(matrix, center)
            for name, array in (
                ("matrix.f32", matrix),
                ("ids.i64", ids),
                ("owners.i64", owners),
                ("bits.u8", np.packbits(matrix > center, axis=1)),
                ("codes.i8", codes),
                ("codes.f32", bounds.astype("<f4")),
            ):
                _write(self.folder / (name + suffix), np.ascontiguousarray(array).tobytes())
            added += len(batch)
            last = int(ids[-1])
        return added, last

    def _rows_after(self, conn: sqlite3.Connection, after_id: int) -> Iterator[list[sqlite3.Row]]:
        last = after_id
        while batch := conn.execute(
            "SELECT id, owner_id, embedding FROM vectors WHERE model_name = ? AND level = ? AND id > ? "
            "ORDER BY id LIMIT ?",
            (self.config.embed_model, self.level, last, FETCH_ROWS),
        ).fetchall():
            yield batch
            last = batch[-1][0]

    def _too_many_dead(self, dead: int, rows: int) -> bool:
        return dead > MIN_DEAD_ROWS and dead > DEAD_SHARE * rows

    def sync(self, conn: sqlite3.Connection) -> None:
        """Bring the cache up to date with the `vectors` table (one indexed lookup when nothing was added).

        New rows are appended (a process that mapped the shorter files keeps reading them safely); a
        rebuild writes new files and renames them into place, so no mapped file ever shrinks. When the
        cache cannot be written (a read-only store), this process keeps the vectors in memory instead.
        """
        newest = conn.execute(
            "SELECT coalesce(max(id), 0) FROM vectors WHERE model_name = ? AND level = ?",
            (self.config.embed_model, self.level),
        ).fetchone()[0]
        if not self._in_memory:
            try:
                self._sync_files(conn, newest)
                return
            except OSError as exc:
                if not is_read_only_error(exc):
                    raise
                log.debug("vector cache %s is read-only (%s): kept in memory", self.folder, exc)
                self._in_memory = True
                self.rows = self.max_id = 0
                self.generation = -1
        self._sync_memory(conn, newest)

    def _sync_memory(self, conn: sqlite3.Connection, newest: int) -> None:
        """Append the rows this process has not read yet to its own copy (nothing is written)."""
        if newest <= self.max_id and self._matrix is not None:
            return
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for batch in self._rows_after(conn, self.max_id):
            matrix = np.frombuffer(b"".join(r[2] for r in batch), dtype="<f4").reshape(len(batch), self.dimension)
            parts.append((matrix, np.array([r[0] for r in batch]), np.array([r[1] for r in batch])))
        if self._matrix is None or self.rows == 0:
            self._matrix = np.zeros((0, self.dimension), dtype=np.float32)
            self._ids = self._owners = np.zeros(0, dtype=np.int64)
        assert self._ids is not None and self._owners is not None
        if parts:
            self._matrix = np.concatenate([self._matrix, *(p[0] for p in parts)])
            self._ids = np.concatenate([self._ids, *(p[1] for p in parts)]).astype(np.int64)
            self._owners = np.concatenate([self._owners, *(p[2] for p in parts)]).astype(np.int64)
        self.rows = len(self._ids)
        self.max_id = int(self._ids[-1]) if self.rows else 0
        self._center = (
            self._matrix.mean(axis=0).astype(np.float32) if self.rows else np.zeros(self.dimension, np.float32)
        )
        self._codes = Codes.of(*encode(self._matrix, self._center), self._center)
        if self.rows > self.config.search_binary_above:
            self._bits = np.packbits(self._matrix > self._center, axis=1)
        else:
            self._bits = None
        self._loaded = (self.rows, self.generation)

    def _sync_files(self, conn: sqlite3.Connection, newest: int) -> None:
        rows, max_id, generation = self._manifest()
        complete = rows == 0 or self._files_complete(rows)
        if newest <= max_id and complete:  # nothing added (rows deleted meanwhile are filtered out at search time)
            self.rows, self.max_id, self.generation = rows, max_id, generation
            return
        with self._lock(exclusive=True):
            rows, max_id, generation = self._manifest()  # another process may have done it meanwhile
            ids_file = self.folder / "ids.i64"
            on_disk = ids_file.stat().st_size // 8 if ids_file.exists() else 0
            kept = conn.execute(
                "SELECT count(*) FROM vectors WHERE model_name = ? AND level = ? AND id <= ?",
                (self.config.embed_model, self.level, max_id),
            ).fetchone()[0]
            complete = on_disk == rows and self._files_complete(rows)
            if rows == 0 or not complete or self._too_many_dead(rows - kept, rows):
                for name in CACHE_FILES:
                    (self.folder / (name + ".new")).unlink(missing_ok=True)
                rows, max_id = self._append(conn, 0, ".new")
                for name in CACHE_FILES:
                    new = self.folder / (name + ".new")
                    if new.exists():
                        os.replace(new, self.folder / name)
                    else:
                        (self.folder / name).unlink(missing_ok=True)
                generation += 1
            elif newest > max_id:
                added, max_id = self._append(conn, max_id, "")
                rows += added
            self._save_manifest(rows, max_id, generation)
        self.rows, self.max_id, self.generation = rows, max_id, generation

    def _files_complete(self, rows: int) -> bool:
        """True when the center and the 8-bit codes of `rows` rows are there: a cache written before the codes
        existed (or appended to by such a version of memex) is rebuilt."""
        sizes = {"center.f32": 1, "codes.i8": rows * self.dimension, "codes.f32": rows * 12}
        try:
            return all((self.folder / name).stat().st_size >= size for name, size in sizes.items())
        except FileNotFoundError:
            return False

    def _load(self) -> None:
        if self._loaded == (self.rows, self.generation) or self._in_memory:
            return
        if self.rows == 0:
            self._matrix = np.zeros((0, self.dimension), dtype=np.float32)
            self._ids = self._owners = np.zeros(0, dtype=np.int64)
            self._bits = np.zeros((0, (self.dimension + 7) // 8), dtype=np.uint8)
            self._center = np.zeros(self.dimension, dtype=np.float32)
            self._codes = Codes.of(np.zeros((0, self.dimension), np.int8), np.zeros((0, 3), np.float32), self._center)
        else:
            with self._lock(exclusive=False):
                # Mapped, and read as plain arrays: a memmap's slices are memmaps, each dressed by numpy's
                # Python subclass (0.3 ms per search of a level in gathering its candidates' rows).
                self._matrix = np.asarray(
                    np.memmap(self.folder / "matrix.f32", dtype="<f4", mode="r", shape=(self.rows, self.dimension))
                )
                self._ids = np.fromfile(self.folder / "ids.i64", dtype=np.int64, count=self.rows)
                self._owners = np.fromfile(self.folder / "owners.i64", dtype=np.int64, count=self.rows)
                self._center = np.fromfile(self.folder / "center.f32", dtype="<f4")
                self._codes = Codes.of(
                    np.asarray(
                        np.memmap(self.folder / "codes.i8", dtype=np.int8, mode="r", shape=(self.rows, self.dimension))
                    ),
                    np.fromfile(self.folder / "codes.f32", dtype="<f4", count=self.rows * 3).reshape(self.rows, 3),
                    self._center,
                )
                self._bits = (
                    np.fromfile(
                        self.folder / "bits.u8", dtype=np.uint8, count=self.rows * (self.dimension + 7) // 8
                    ).reshape(self.rows, -1)
                    if self.rows > self.config.search_binary_above
                    else None
                )
        self._loaded = (self.rows, self.generation)

    # --- search ---------------------------------------------------------------------------------------

    def prepare(self, conn: sqlite3.Connection) -> None:
        """Bring the cache up to date and map it (what a search does first)."""
        self.sync(conn)
        self._load()

    def scanned(self, query: np.ndarray) -> Scan:
        """Every row's estimated cosine to `query`, as the cache is now (`prepare` first): a search given it
        need not scan again. Reads nothing but the codes, so another thread may run it meanwhile."""
        assert self._codes is not None and self._loaded is not None
        return Scan(query, self._loaded, estimate(self._codes, query))

    def scanning(self, query: np.ndarray) -> tuple[Scan, Pass]:
        """A scan of `query` whose estimate the `Pass` fills block by block (any thread, `Pass.rows`): it
        is `scanned`'s once every row was done."""
        assert self._codes is not None and self._loaded is not None
        work = Pass(self._codes, query)
        return Scan(query, self._loaded, work.estimate), work

    def scan_once(self, conn: sqlite3.Connection, query: np.ndarray) -> Scan | None:
        """`scanned` brought up to date first, for a caller about to search more than once with `query`;
        None when the search would not read the codes (past `search_binary_above` rows)."""
        self.prepare(conn)
        return None if self._bits is not None else self.scanned(query)

    def search(
        self,
        conn: sqlite3.Connection,
        query: np.ndarray,
        k: int,
        allowed: np.ndarray | None = None,
        verify: bool = True,
        scanned: Scan | None = None,
    ) -> list[Neighbour]:
        """The `k` owners nearest to `query` (a unit vector), best first; only `allowed` owners if given.

        `verify=False` skips checking that each row still exists (for a caller that checks its owners).
        `scanned`: this query's scan of the codes, made beforehand (used when the cache has not changed since).
        The cache as it was scanned is searched then: it was brought up to date moments before the scan, and
        doing it again costs a lookup of the newest row and a read of the manifest (~0.15 ms a level).
        """
        if scanned is None or scanned.cache != self._loaded:
            self.prepare(conn)
        assert self._matrix is not None and self._ids is not None and self._owners is not None
        if self.rows == 0 or k <= 0:
            return []
        mask = np.isin(self._owners, allowed) if allowed is not None else None
        if mask is not None and not mask.any():
            return []
        wanted = k * 2  # room for rows deleted since the cache was written, and owners seen twice
        if self._bits is not None and (mask is None or mask.sum() > self.config.search_binary_above):
            positions = self._binary_candidates(query, max(wanted, self.config.search_rerank_candidates), mask)
        else:
            assert self._codes is not None
            fresh = scanned is not None and scanned.cache == self._loaded and scanned.query is query
            found = scanned.estimate if scanned is not None and fresh else None
            positions = candidates(self._codes, query, wanted, mask, found)
        scores = _cosines(self._matrix, positions, query)
        top = min(wanted, len(scores))
        best = np.argpartition(-scores, top - 1)[:top]
        # Best first, equal cosines (the same text embedded twice) by row: a search for fewer neighbours
        # lists the first of a search for more, in the same order (`hybrid.filtered_search` relies on it).
        best = best[np.lexsort((positions[best], -scores[best]))]
        return self._alive(conn, [(int(positions[i]), float(scores[i])) for i in best], k, verify)

    def _binary_candidates(self, query: np.ndarray, count: int, mask: np.ndarray | None) -> np.ndarray:
        assert self._bits is not None
        code = np.packbits(query > self._center)
        bits = self._bits
        if bits.shape[1] % 8 == 0:  # 64 bits at a time: ten times faster than byte by byte
            bits, code = bits.view(np.uint64), code.view(np.uint64)
        distances = np.bitwise_count(np.bitwise_xor(bits, code)).sum(axis=1, dtype=np.int32)
        if mask is not None:
            distances[~mask] = np.iinfo(np.int32).max
        count = min(count, len(distances))
        return np.argpartition(distances, count - 1)[:count]

    def _alive(
        self, conn: sqlite3.Connection, candidates: list[tuple[int, float]], k: int, verify: bool
    ) -> list[Neighbour]:
        """Candidates whose vector row still exists (if `verify`), one per owner, at most `k`.

        The rows are checked best first, as many at a time as owners are still wanted: the first `k` of the
        twice as many candidates are nearly always all there (two lookups of 100 owners: 0.4 ms, one of 200:
        1.4 ms at 100k turns)."""
        assert self._ids is not None and self._owners is not None
        ids = self._ids[[p for p, _ in candidates]].tolist()
        owners = self._owners[[p for p, _ in candidates]].tolist()
        existing = set() if verify else set(ids)
        checked = 0  # candidates whose owners were looked up
        found: dict[int, float] = {}
        for i, ((_, score), vector_id, owner) in enumerate(zip(candidates, ids, owners, strict=True)):
            if i == checked < len(candidates) and verify:
                checked = min(len(candidates), i + max(k - len(found), MIN_CHECKED))
                existing |= self._existing(conn, owners[i:checked])
            if vector_id in existing and owner not in found:
                found[owner] = score
                if len(found) == k:
                    break
        return [Neighbour(owner, score) for owner, score in found.items()]

    def _existing(self, conn: sqlite3.Connection, owners: list[int]) -> set[int]:
        """The ids of this level's vector rows of `owners`. By (level, owner) the unique index covers the
        lookup: the rows themselves (a vector each, 1.5 KB) are never read; 200 candidates at 100k turns:
        19 ms by id, 1 ms so."""
        distinct = sorted(set(owners))
        sql = f"SELECT id FROM vectors WHERE level = ? AND owner_id IN ({','.join('?' * len(distinct))})"
        return {r[0] for r in conn.execute(sql, [self.level, *distinct])}


def _cosines(matrix: np.ndarray, positions: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The float32 products of rows `positions` of `matrix` with `query`, each the value the whole product
    `matrix @ query` gives that row, whoever its companions: BLAS takes rows in blocks, and a partial last
    block rounds differently (OpenBLAS: the last 2 or 3 rows, by ~1e-7), which made a row's cosine, and the
    order of near-equal ones, depend on how many rows were re-ranked with it. Padded to whole blocks."""
    if len(positions) == 0:
        return np.zeros(0, np.float32)
    padded = np.concatenate([positions, np.full(-len(positions) % BLAS_BLOCK, positions[0], positions.dtype)])
    return (matrix[padded] @ query)[: len(positions)]


def _write(path: os.PathLike[str], data: bytes, truncate: bool = False) -> None:
    """Append `data` to `path` (or replace its content), the file created private (0600)."""
    flags = os.O_WRONLY | (os.O_TRUNC if truncate else os.O_APPEND)
    descriptor = open_private(Path(path), flags)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)


_indexes: dict[tuple[str, str, str], VectorIndex] = {}


def searched_index(config: Config, level: str) -> VectorIndex | None:
    """The index of one level when this process has searched it before (None otherwise)."""
    index = _indexes.get((str(config.home), config.embed_model, level))
    return index if index is not None and index._loaded is not None else None


def vector_index(config: Config, level: str, dimension: int) -> VectorIndex:
    """The process's index of one level (kept, so a long-lived process maps its files once)."""
    key = (str(config.home), config.embed_model, level)
    index = _indexes.get(key)
    if index is None or index.dimension != dimension:
        index = _indexes[key] = VectorIndex(config, level, dimension)
    return index
