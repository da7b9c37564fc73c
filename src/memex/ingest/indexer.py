"""Indexing many transcripts: discovery, per-file ingest, and the totals a user sees at the end.

A backfill of many files parses them in worker processes while this process writes: SQLite has one
writer, and parsing (JSON, turns, chunks) is most of the work. Each file is still its own transaction,
checked against the store just before it is written, so an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

from memex.config import Config
from memex.ingest.mirrors import refresh_mirror, sessions_without_mirror
from memex.ingest.pipeline import (
    FileReport,
    ParsedStream,
    Plan,
    idle_report,
    ingest_planned,
    ingest_transcript,
    parse_stream,
    plan_ingest,
)
from memex.sources import ADAPTERS, adapter
from memex.sources.model import Transcript
from memex.store.db import transaction

# Worker processes take a fraction of a second to start (they import memex afresh): below these amounts of
# work, parsing in this process is faster.
PARALLEL_MIN_FILES = 16
PARALLEL_MIN_BYTES = 4 * 1_048_576
# Workers run at a lower priority than the writer (see `_init_worker`).
WORKER_NICENESS = 10
# Parsed files waiting to be written, per worker: keeps the workers busy while bounding memory.
QUEUE_PER_WORKER = 8
_IDLE = ("unchanged", "missing")


@dataclass
class IndexReport:
    """Totals of one `memex index` run."""

    files: int = 0
    files_changed: int = 0
    sessions: set[str] = field(default_factory=set)
    subagents: int = 0
    turns: int = 0
    lines: int = 0
    bad_lines: int = 0
    missing_files: int = 0
    bytes_read: int = 0
    mirrors: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def add(self, file: FileReport) -> None:
        self.files += 1
        self.files_changed += file.status not in ("unchanged", "missing")
        self.missing_files += file.status == "missing"
        if file.status != "missing":
            self.sessions.add(file.session_id)
            self.subagents += bool(file.agent_id)
        self.turns += file.turns
        self.lines += file.lines
        self.bad_lines += file.bad_lines
        self.bytes_read += file.bytes_read
        self.mirrors += file.mirror_written
        self.warnings.extend(file.warnings)

    def as_dict(self) -> dict[str, object]:
        return {
            "files": self.files,
            "files_changed": self.files_changed,
            "sessions": len(self.sessions),
            "subagents": self.subagents,
            "turns": self.turns,
            "lines": self.lines,
            "bad_lines": self.bad_lines,
            "missing_files": self.missing_files,
            "bytes_read": self.bytes_read,
            "mirrors": self.mirrors,
            "seconds": round(self.seconds, 3),
            "warnings": self.warnings,
        }


def default_roots(config: Config, agents: Iterable[str]) -> dict[str, list[Path]]:
    """The folders each agent writes its transcripts to (Codex also moves old rollouts to an archive)."""
    folders = {"claude": [config.claude_dir], "codex": [config.codex_dir], "gemini": [config.gemini_dir]}
    archive = config.codex_dir.parent / "archived_sessions"
    if config.codex_dir.name == "sessions" and archive.is_dir():
        folders["codex"].append(archive)
    return {agent: folders[agent] for agent in agents}


def discover(roots_by_agent: dict[str, list[Path]]) -> list[Transcript]:
    """Every transcript under the given roots, parents before subagents."""
    found: list[Transcript] = []
    for agent, roots in roots_by_agent.items():
        found.extend(adapter(agent).discover(roots))
    return sorted(found, key=lambda t: t.subagent_id is not None)


def index_transcripts(
    conn: sqlite3.Connection,
    config: Config,
    transcripts: list[Transcript],
    on_file: Callable[[Transcript, FileReport], None] | None = None,
    workers: int = 1,
) -> IndexReport:
    """Ingest each transcript incrementally and total what was done.

    With `workers` > 1 and enough work, files are parsed by that many worker processes.
    """
    report = IndexReport()
    started = time.perf_counter()

    def done(transcript: Transcript, file_report: FileReport) -> None:
        report.add(file_report)
        if on_file:
            on_file(transcript, file_report)

    claimed: dict[str, str] = {}
    plans = [plan_ingest(conn, t, claimed) for t in transcripts] if workers > 1 else []
    work = [p for p in plans if p.status not in _IDLE]
    if len(work) >= PARALLEL_MIN_FILES and sum(p.size - p.state.resume_offset for p in work) >= PARALLEL_MIN_BYTES:
        _index_in_parallel(conn, config, plans, work, workers, done)
    else:
        for transcript in transcripts:
            done(transcript, ingest_transcript(conn, config, transcript))
    report.mirrors += backfill_mirrors(conn)
    report.seconds = time.perf_counter() - started
    return report


def _init_worker() -> None:
    """In a worker: yield the CPU to the writer, and end with the indexing process."""
    # The single writer is the bottleneck: a parser must never slow it down. When cores are busy, the
    # writer parses the files the workers have not started (see `_index_in_parallel`).
    with contextlib.suppress(OSError, AttributeError):
        os.nice(WORKER_NICENESS)
    _exit_with_parent()


def _exit_with_parent() -> None:
    """End this process as soon as the indexing process ends, even by `kill -9` (a pool's workers
    otherwise wait forever on a queue nobody will write to)."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


def _index_in_parallel(
    conn: sqlite3.Connection,
    config: Config,
    plans: list[Plan],
    work: list[Plan],
    workers: int,
    done: Callable[[Transcript, FileReport], None],
) -> None:
    """Parse `work` in worker processes and write each result here, in the order of `plans`."""
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init_worker
    )
    queued: deque[tuple[Plan, Future[ParsedStream] | None]] = deque()
    pending = iter(work)
    broken = False

    def submit_next() -> None:
        nonlocal broken
        plan = next(pending, None)
        if plan is None:
            return
        future = None
        if not broken:
            try:
                future = pool.submit(parse_stream, plan, config.chunk_max_tokens, config.chunk_overlap_tokens)
            except (BrokenProcessPool, RuntimeError):  # workers cannot start: the rest is parsed here
                broken = True
        queued.append((plan, future))

    try:
        for _ in range(workers * QUEUE_PER_WORKER):
            submit_next()
        for plan in plans:
            if plan.status in _IDLE:
                done(plan.transcript, idle_report(plan))
                continue
            queued_plan, future = queued.popleft()
            assert queued_plan is plan
            submit_next()
            parsed = None
            if future is not None and (future.done() or not future.cancel()):  # not started: parsed here
                try:
                    parsed = future.result()
                except Exception:  # the file vanished, a worker died: redone here, where errors surface
                    parsed = None
            done(plan.transcript, ingest_planned(conn, config, plan, parsed))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def backfill_mirrors(conn: sqlite3.Connection) -> int:
    """Build the mirrors of sessions indexed before mirrors existed; returns how many were written."""
    written = 0
    for session_id in sessions_without_mirror(conn):
        with transaction(conn):
            written += refresh_mirror(conn, session_id)
    return written


def session_transcripts(path: Path, agent: str = "claude") -> list[Transcript]:
    """One session's transcript and its subagents' (what a Stop hook ingests)."""
    source = ADAPTERS[agent]
    main = source.discover([path])
    return main + source.subagent_transcripts(path)
