"""Indexing many transcripts: discovery, per-file ingest, and the totals a user sees at the end.

A backfill of many files parses them in worker processes while this process writes: SQLite has one
writer, and parsing (JSON, turns, chunks) is most of the work. Each file is still its own transaction,
checked against the store just before it is written, so an interrupted run resumes where it stopped.

A file fails alone: one that cannot be read or stored (or whose parsing kills a worker) is reported with
its reason, and every other file is indexed.
"""

from __future__ import annotations

import contextlib
import operator
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from memex.config import Config
from memex.ingest.report import IDLE, FileReport
from memex.ingest.state import (
    AGENT_ID,
    FILE_MTIME_NS,
    FILE_SIZE,
    SESSION_ID,
    StoredStream,
    is_copy_id,
    stored_streams,
)
from memex.plain import Record
from memex.sources import ADAPTERS, AGENTS, adapter
from memex.sources.files import Sieve, Skipped
from memex.sources.locations import agent_roots
from memex.sources.model import Transcript
from memex.store import mirrors as store_mirrors
from memex.store import snapshots
from memex.store.archive import pending_streams
from memex.store.db import transaction

if TYPE_CHECKING:
    from concurrent.futures import Future

    from memex.ingest.pipeline import ParsedStream, Plan
    from memex.sources.tree import LiveTree

# The pipeline (parsers, turns, chunks, mirrors) and the worker pool are imported when a file is to be read:
# a run that finds nothing changed never loads them.

# Worker processes take a fraction of a second to start (they import memex afresh): below these amounts of
# work, parsing in this process is faster.
PARALLEL_MIN_FILES = 16
PARALLEL_MIN_BYTES = 4 * 1_048_576
# Workers run at a lower priority than the writer (see `_init_worker`).
WORKER_NICENESS = 10
# Parsed files waiting to be written, per worker: keeps the workers busy while bounding memory.
QUEUE_PER_WORKER = 8
# What counting tens of thousands of unchanged streams reads of each (without a Python-level call).
_SESSION_ID = operator.itemgetter(SESSION_ID)
_AGENT_ID = operator.itemgetter(AGENT_ID)
# Agents are offered files given by hand in the order of `AGENTS` (the most common first).
_AGENT_ORDER = {agent: n for n, agent in enumerate(AGENTS)}


class IndexReport(Record):
    """Totals of one `memex index` run."""

    __slots__ = (
        "bad_lines",
        "bytes_read",
        "failed",
        "files",
        "files_changed",
        "lines",
        "mirrors",
        "missing_files",
        "refused",
        "seconds",
        "sessions",
        "subagents",
        "tool_output_streams",
        "turns",
        "warnings",
    )

    files: int
    files_changed: int
    sessions: set[str]
    subagents: int
    turns: int
    lines: int
    bad_lines: int
    missing_files: int
    bytes_read: int
    mirrors: int
    tool_output_streams: int  # transcripts indexed before tool output was, whose outputs were read now
    seconds: float
    warnings: list[str]
    failed: list[Skipped]  # files that could not be read or stored
    refused: list[Skipped]  # files given by hand that are no transcript

    def __init__(
        self,
        files: int = 0,
        files_changed: int = 0,
        sessions: set[str] | None = None,
        subagents: int = 0,
        turns: int = 0,
        lines: int = 0,
        bad_lines: int = 0,
        missing_files: int = 0,
        bytes_read: int = 0,
        mirrors: int = 0,
        tool_output_streams: int = 0,
        seconds: float = 0.0,
        warnings: list[str] | None = None,
        failed: list[Skipped] | None = None,
        refused: list[Skipped] | None = None,
    ) -> None:
        self.files = files
        self.files_changed = files_changed
        self.sessions = set() if sessions is None else sessions
        self.subagents = subagents
        self.turns = turns
        self.lines = lines
        self.bad_lines = bad_lines
        self.missing_files = missing_files
        self.bytes_read = bytes_read
        self.mirrors = mirrors
        self.tool_output_streams = tool_output_streams
        self.seconds = seconds
        self.warnings = [] if warnings is None else warnings
        self.failed = [] if failed is None else failed
        self.refused = [] if refused is None else refused

    def add(self, file: FileReport) -> None:
        self.files += 1
        self.files_changed += file.status not in IDLE
        self.missing_files += file.status == "missing"
        if file.status == "failed":
            self.failed.append(Skipped(file.path, file.error or "failed"))
        elif file.status not in ("missing", "forgotten"):
            self.sessions.add(file.session_id)
            self.subagents += bool(file.agent_id)
        self.turns += file.turns
        self.lines += file.lines
        self.bad_lines += file.bad_lines
        self.bytes_read += file.bytes_read
        self.mirrors += file.mirror_written
        self.warnings.extend(file.warnings)

    def add_unchanged(self, streams: list[StoredStream]) -> None:
        """Count transcripts found on disk as the store holds them (never read: see `discover`)."""
        self.files += len(streams)
        self.sessions.update(map(_SESSION_ID, streams))
        self.subagents += len(streams) - list(map(_AGENT_ID, streams)).count("")

    def merge(self, other: IndexReport) -> None:
        """Add another run's totals to these (its time included)."""
        self.files += other.files
        self.files_changed += other.files_changed
        self.sessions |= other.sessions
        names = ("subagents", "turns", "lines", "bad_lines", "missing_files", "bytes_read", "mirrors")
        for name in (*names, "tool_output_streams"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.seconds += other.seconds
        self.warnings.extend(other.warnings)
        self.failed.extend(f for f in other.failed if f not in self.failed)
        self.refused.extend(other.refused)

    def to_json(self) -> dict[str, object]:
        """The report as `memex index --json` prints it (sessions as a count)."""
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
            "tool_output_streams": self.tool_output_streams,
            "seconds": round(self.seconds, 3),
            "warnings": self.warnings,
            "failed_files": len(self.failed),
            "failed": [{"path": str(f.path), "reason": f.reason} for f in self.failed],
            "refused": [{"path": str(f.path), "reason": f.reason} for f in self.refused],
        }


def default_roots(
    config: Config, agents: Iterable[str], projects: Iterable[str] = (), env: Mapping[str, str] | None = None
) -> dict[str, list[Path]]:
    """The folders each agent writes its transcripts to (see `memex.sources.locations`); `projects` are the
    project folders memex knows, where some agents keep their history (Aider)."""
    return {agent: agent_roots(config, agent, projects, env) for agent in agents}


def discover(
    roots_by_agent: dict[str, list[Path]],
    skipped: list[Skipped] | None = None,
    known: Mapping[str, StoredStream] | None = None,
    unchanged: dict[str, StoredStream] | None = None,
    tree: LiveTree | None = None,
) -> list[Transcript]:
    """Every transcript under the given roots, parents before subagents. Files named like transcripts that
    are not regular readable files (a FIFO, a device, a link loop, no permission) go to `skipped`, once.

    With `known` (`stored_streams`) and `unchanged`: the files of an agent whose adapter sieves (`SIEVES`)
    that the store holds at their very size and time are not returned but added to `unchanged` (their
    paths, each with its stored row; see `memex.sources.files.Sieve`); the folders a live `tree` holds are
    read from it. An agent none of whose roots exists is not even imported.

    A file given as a root that one agent claims is not offered to the others (each adapter claims only its
    own files): `memex index PATH` of a Claude transcript imports the Claude adapter alone, not twelve."""
    found: list[Transcript] = []
    passed_over: list[Skipped] = []
    claimed: set[str] = set()  # the file roots an agent claimed
    for agent in sorted(roots_by_agent, key=lambda agent: _AGENT_ORDER.get(agent, len(AGENTS))):
        roots = [root for root in roots_by_agent[agent] if str(root) not in claimed]
        if not any(os.path.lexists(root) for root in roots):
            continue
        source = adapter(agent)
        if known is not None and unchanged is not None and getattr(source, "SIEVES", False):
            theirs = source.discover(roots, passed_over, Sieve(known, agent, unchanged, tree))  # type: ignore[call-arg]
        else:
            theirs = source.discover(roots, passed_over)
        found.extend(theirs)
        if theirs:
            claimed |= _claimed_files(roots, theirs)
    if unchanged and found:  # a file also given by hand, or reached through a link: read as found
        for transcript in found:
            unchanged.pop(str(transcript.path), None)
    if skipped is not None:
        seen = {s.path for s in skipped}
        for item in passed_over:
            if item.path not in seen:
                seen.add(item.path)
                skipped.append(item)
    return sorted(found, key=lambda t: t.subagent_id is not None)


def _claimed_files(roots: list[Path], transcripts: list[Transcript]) -> set[str]:
    """The roots that one of `transcripts` is (a file: a folder is never a transcript's path), or holds (the
    file of a synthetic `<file>#<key>` one)."""
    found = {str(t.path).partition("#")[0] for t in transcripts} | {str(t.path) for t in transcripts}
    return {str(root) for root in roots} & found


def sieve_known(
    conn: sqlite3.Connection, known: dict[str, StoredStream], archive: bool = True
) -> dict[str, StoredStream]:
    """The part of `known` a walk may take out unchanged: not the streams whose tool outputs are still to be
    read (`backfill_tool_outputs` reads them from their transcripts), nor, with `archive`, those whose copy
    is pending (`index_transcripts` makes it)."""
    pending = {(r[0], r[1]) for r in conn.execute("SELECT session_id, agent_id FROM tool_output_backfill")}
    if archive:
        pending |= pending_streams(conn)
    if not pending:
        return known
    return {path: s for path, s in known.items() if (s[SESSION_ID], s[AGENT_ID]) not in pending}


def index_transcripts(
    conn: sqlite3.Connection,
    config: Config,
    transcripts: list[Transcript],
    on_file: Callable[[Transcript, FileReport], None] | None = None,
    workers: int = 1,
    skipped: Iterable[Skipped] = (),
    on_total: Callable[[int], None] | None = None,
    unchanged: Mapping[str, StoredStream] | None = None,
    known: dict[str, StoredStream] | None = None,
) -> IndexReport:
    """Ingest each transcript incrementally and total what was done.

    With `workers` > 1 and enough work, files are parsed by that many worker processes. A file that
    fails is reported (`failed`, with `skipped`: the files discovery could not read) and the others are
    indexed; only an error of the store itself stops the run. `on_total` is told the bytes of all the
    transcripts before the first is ingested; `on_file` is told of each one (its report's `size`).
    `unchanged` are the paths discovery found as the store holds them, with their rows (`discover`): only
    counted. `known`
    is `stored_streams(conn)` when the caller has it already. An unchanged transcript whose archive copy is
    pending (a run killed after indexing it, before copying it) gets its copy now.
    """
    report = IndexReport()
    report.failed.extend(skipped)
    started = time.perf_counter()

    copy_pending = pending_streams(conn) if config.archive_enabled and transcripts else set()

    def done(transcript: Transcript, file_report: FileReport) -> None:
        key = (file_report.session_id, file_report.agent_id)
        if file_report.status == "unchanged" and key in copy_pending:
            from memex.ingest.pipeline import archived

            copy_pending.discard(key)
            file_report = archived(conn, config, transcript, file_report)
        report.add(file_report)
        if on_file:
            on_file(transcript, file_report)

    claimed: dict[str, str] = {}
    known = stored_streams(conn) if known is None else known
    report.add_unchanged(list(unchanged.values()) if unchanged else [])
    stats = [_stat(t.path) for t in transcripts]
    if on_total:
        on_total(sum(s.st_size for s in stats if s is not None))
    quick = [unchanged_report(t, s, known, claimed) for t, s in zip(transcripts, stats, strict=True)]
    to_read = any(q is None for q in quick)
    if to_read:  # the pipeline only for a file to read (a file named unchanged, as the walk's, needs none)
        from memex.ingest.pipeline import Plan, ingest_isolated, plan_ingest
    plans = (
        [
            plan_ingest(conn, t, claimed) if q is None else Plan(t, q.session_id, q.agent_id, q.status, size=q.size)
            for t, q in zip(transcripts, quick, strict=True)
        ]
        if workers > 1 and to_read
        else []
    )
    work = [p for p in plans if p.status not in IDLE]
    moved = [p for p in plans if p.moved is not None]
    _record_moves(conn, moved)
    if config.archive_enabled:  # their copies' headers name the old paths (`memex.ingest.moves`)
        copy_pending.update((p.session_id, p.agent_id) for p in moved)
    if len(work) >= PARALLEL_MIN_FILES and sum(p.size - p.state.resume_offset for p in work) >= PARALLEL_MIN_BYTES:
        _index_in_parallel(conn, config, plans, work, workers, done)
    else:
        planned: list[Plan | None] = list(plans) or [None] * len(transcripts)
        for transcript, unchanged_file, plan in zip(transcripts, quick, planned, strict=True):
            if unchanged_file is None and plan is not None and plan.status in IDLE:
                unchanged_file = _idle(conn, config, plan)  # planned already: not planned again
            done(transcript, unchanged_file or ingest_isolated(conn, config, transcript))
    report.mirrors += backfill_mirrors(conn)
    report.tool_output_streams += backfill_tool_outputs(conn, config, transcripts, known)
    report.seconds = time.perf_counter() - started
    return report


def _record_moves(conn: sqlite3.Connection, plans: list[Plan]) -> None:
    """Record the new paths of the unchanged transcripts that moved (`memex.ingest.moves`), in one
    transaction: a store copied from elsewhere moves every one of them at once."""
    if plans:
        from memex.ingest.pipeline import record_moved

        with transaction(conn):
            for plan in plans:
                record_moved(conn, plan)


def _idle(conn: sqlite3.Connection, config: Config, plan: Plan) -> FileReport:
    """The report of a file planned as needing no work, as `ingest_transcript` gives it (its move is
    recorded: `_record_moves`)."""
    from memex.ingest.pipeline import archived, idle_report

    return archived(conn, config, plan.transcript, idle_report(plan))


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def unchanged_report(
    transcript: Transcript, stat: os.stat_result | None, known: dict[str, StoredStream], claimed: dict[str, str]
) -> FileReport | None:
    """The report of a transcript the store holds at this very size and time (`unchanged`), decided from
    the file's `stat` without a query; None when that cannot be told so cheaply (`plan_ingest` decides)."""
    stored = known.get(str(transcript.path))  # stored paths are real paths, as discovery names files
    agent_id = transcript.subagent_id or ""
    if stored is None or stored[AGENT_ID] != agent_id:
        return None
    if agent_id and not is_copy_id(stored[SESSION_ID], transcript.session_id):  # a subagent of a copy: `<id>-…`
        return None
    if stat is None or (stat.st_size, stat.st_mtime_ns) != (stored[FILE_SIZE], stored[FILE_MTIME_NS]):
        return None
    if not agent_id:
        claimed.setdefault(stored[SESSION_ID], str(transcript.path))
    return FileReport(transcript.path, stored[SESSION_ID], agent_id, "unchanged", size=stat.st_size)


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
    import multiprocessing
    import multiprocessing.connection

    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ctrl-C ignored meanwhile (only the main thread may change a signal's handler; others leave it)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _index_in_parallel(
    conn: sqlite3.Connection,
    config: Config,
    plans: list[Plan],
    work: list[Plan],
    workers: int,
    done: Callable[[Transcript, FileReport], None],
) -> None:
    """Parse `work` in worker processes and write each result here, in the order of `plans`."""
    import multiprocessing
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from memex.ingest.pipeline import (
        SEGMENT_BYTES,
        failed_report,
        idle_report,
        ingest_planned,
        is_store_failure,
        parse_stream,
    )

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
                future = pool.submit(
                    parse_stream,
                    plan,
                    config.chunk_max_tokens,
                    config.chunk_overlap_tokens,
                    config.max_line_bytes,
                    config.tool_output_max_chars,
                    SEGMENT_BYTES,
                )
            except (BrokenProcessPool, RuntimeError):  # workers cannot start: the rest is parsed here
                broken = True
        queued.append((plan, future))

    interrupted = False
    try:
        # Workers start while Ctrl-C is ignored, so they ignore it for good (the user's Ctrl-C reaches the
        # whole process group): this process alone stops and says so once, without worker tracebacks.
        with _sigint_ignored():
            for _ in range(workers * QUEUE_PER_WORKER):
                submit_next()
        for plan in plans:
            if plan.status in IDLE:
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
            try:
                file_report = ingest_planned(conn, config, plan, parsed)
            except Exception as exc:
                if is_store_failure(exc):
                    raise
                file_report = failed_report(plan.transcript, exc)
            done(plan.transcript, file_report)
    except KeyboardInterrupt:
        # Files not started are dropped; the few being parsed finish (milliseconds for most transcripts)
        # while the interrupt is reported, and the workers then exit. Terminating them instead could cut
        # a result in the middle of the pipe it travels on, and hang this process at exit.
        interrupted = True
        raise
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=True)


def backfill_mirrors(conn: sqlite3.Connection) -> int:
    """Build the mirrors of sessions holding conversation without one (indexed before mirrors existed);
    returns how many were written. Only the sessions the stream log names since the last check are looked
    at (`memex.store.snapshots.sessions_to_check`): 20,000 sessions' mirrors and entries probed on every run
    cost a run that finds nothing new 7% of its instructions."""
    among, last = snapshots.sessions_to_check(conn)
    written = 0
    for session_id in store_mirrors.sessions_without_mirror(conn, among):
        from memex.mirrors.build import refresh_mirror

        with transaction(conn):
            written += refresh_mirror(conn, session_id)
    if among is None or among:
        snapshots.sessions_checked(conn, last)
    return written


def backfill_tool_outputs(
    conn: sqlite3.Connection, config: Config, transcripts: list[Transcript], known: dict[str, StoredStream]
) -> int:
    """Read the tool outputs of transcripts indexed before tool output was (`tool_output_backfill`, migration
    9) and store them with their turns, which stay as they are (their vectors too); returns how many
    transcripts were read. A transcript that cannot be read now stays pending for the next run."""
    pending = {(r[0], r[1]) for r in conn.execute("SELECT session_id, agent_id FROM tool_output_backfill")}
    if not pending or not transcripts:
        return 0
    from memex.ingest.pipeline import Plan, is_store_failure, parse_with, write_tool_outputs

    done = 0
    for transcript in transcripts:
        stored = known.get(str(transcript.path))
        if stored is None or (stored[SESSION_ID], stored[AGENT_ID]) not in pending:
            continue
        session_id, agent_id = stored[SESSION_ID], stored[AGENT_ID]
        row = conn.execute("SELECT project_dir FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        plan = Plan(transcript, session_id, agent_id, "new", project_dir=row[0] if row else None)
        try:
            parsed = parse_with(config, plan)
        except Exception as exc:
            if is_store_failure(exc):
                raise
            continue
        with transaction(conn):
            turn_ids = dict(
                conn.execute(
                    "SELECT line_index, id FROM turns WHERE session_id = ? AND agent_id = ?", (session_id, agent_id)
                ).fetchall()
            )
            conn.execute(
                "DELETE FROM tool_outputs WHERE turn_id IN "
                "(SELECT id FROM turns WHERE session_id = ? AND agent_id = ?)",
                (session_id, agent_id),
            )
            for prepared in parsed.turns:
                if prepared.turn.line_index in turn_ids:
                    write_tool_outputs(conn, turn_ids[prepared.turn.line_index], prepared.turn)
            conn.execute(
                "DELETE FROM tool_output_backfill WHERE session_id = ? AND agent_id = ?", (session_id, agent_id)
            )
        done += 1
    return done


def session_transcripts(path: Path, agent: str = "claude") -> list[Transcript]:
    """One session's transcript and its subagents' (what a Stop hook ingests)."""
    source = ADAPTERS[agent]
    main = source.discover([path])
    return main + source.subagent_transcripts(path)
