"""The memex daemon: one loop that keeps this computer's memory current and shares it.

Each pass (`Daemon.run_once`):
1. scan the agents' transcript folders; ingest the transcripts whose changes have settled;
2. take Stop-hook notifications;
3. put due mirrors in the outbox: a session's mirror is due when the session closed (no writes for
   `mirror_idle_seconds`, or a Stop notification), every `mirror_refresh_seconds` while it stays active,
   and at once for a session the daemon did not see being written (the first backfill, a restart);
4. with Redis reachable: send the outbox, announce this computer (heartbeat), run the extra tasks
   (the hook point for draining an embedding queue), and read other computers' mirrors, waiting up to
   `block_ms` for them (that wait is the loop's pause).

The clock is injected: tests drive the loop in-process with a fake clock, one pass at a time. The daemon
never stops on an error: a Redis outage is the link's business (logged once), anything else is logged
(at most every few minutes per kind) and the next pass tries again. A transcript that cannot be ingested
fails alone: it is logged and tried again later, each time twice as late (up to an hour), while every
other file is ingested as usual; the start-up index, when it cannot finish (a locked store), is retried
at the next pass, and the daemon starts anyway.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import memex
from memex.api import Memex
from memex.config import Config
from memex.errors import UserError, interrupt_behind
from memex.ingest.indexer import default_roots
from memex.ingest.pipeline import failed_report, ingest_transcript, is_store_failure
from memex.signals import PID_FILE, take_stops
from memex.sources import ADAPTERS
from memex.sources.files import safe_resolve
from memex.sources.tree import LiveTree
from memex.sources.tree import available as tree_available
from memex.store.db import connect
from memex.store.queries import known_projects, session_count, session_of_transcript
from memex.sync import forgets, outbox
from memex.sync.heartbeat import ComputerInfo, announce, iso, registry, remember, withdraw
from memex.sync.inbox import Consumer
from memex.sync.keys import Keys
from memex.sync.link import OUTAGE_ERRORS, RedisLink
from memex.sync.server import ApiServer
from memex.sync.token import ensure_token
from memex.sync.watch import Watcher

log = logging.getLogger("memex.daemon")

LOCK_FILE = "daemon.lock"
# Batches of other computers' mirrors read in one pass before the loop turns to its other work.
MAX_BATCHES_PER_PASS = 50
# With nothing held back, due mirrors are looked for again this often anyway (a mirror changed by
# `memex index` on a folder the daemon does not watch).
DUE_RECHECK_SECONDS = 60.0
# The agents' folders are looked for again this often: a project first seen since (where Aider and SpecStory
# keep their histories) or an editor extension installed since is watched from then on.
ROOTS_REFRESH_SECONDS = 60.0
# The same error is logged again after this long, not at every pass.
ERROR_LOG_INTERVAL_S = 300.0
# A transcript whose ingest failed is tried again after this long, twice as long after each further
# failure, up to the maximum: a file that can never be read costs one attempt an hour, and a file that was
# only briefly unreadable (permissions being fixed, a copy in progress) is caught up within a minute.
RETRY_FIRST_SECONDS = 30.0
RETRY_MAX_SECONDS = 3_600.0

Task = Callable[[], Any]


@dataclass
class PassReport:
    """What one pass of the loop did."""

    ingested: int = 0  # transcripts ingested
    queued: int = 0  # mirrors put in the outbox
    sent: int = 0  # mirrors published to Redis
    received: int = 0  # other computers' mirrors written here
    waiting: int = 0  # mirrors in the outbox after the pass


class Daemon:
    """This computer's daemon: watch and ingest, publish and receive mirrors, heartbeat, HTTP API."""

    def __init__(
        self,
        config: Config,
        *,
        clock: Callable[[], float] = time.time,
        serve_api: bool = True,
        tasks: Iterable[Task] = (),
    ) -> None:
        self.config = config
        self.clock = clock
        self.serve_api = serve_api
        # Callables run once per pass while Redis or not: the embedding queue's drain belongs here.
        self.tasks: list[Task] = list(tasks)
        self.conn: sqlite3.Connection = connect(config.db_path, config.busy_timeout_ms)
        self.keys = Keys(config.redis_prefix)
        self.link = (
            RedisLink(config.redis_url, self.keys, clock, config.redis_retry_seconds) if config.redis_url else None
        )
        self.consumer = Consumer(self.conn, self.keys, config.computer, config.sync_batch, config)
        self.roots = default_roots(config, sorted(ADAPTERS), known_projects(self.conn))
        self.tree = LiveTree() if tree_available() else None  # the scans read unchanged folders from it
        self.watcher = Watcher(
            self.roots, clock, config.daemon_debounce_seconds, config.daemon_debounce_max_seconds, self.tree
        )
        self.api: ApiServer | None = None
        self.started_at = clock()
        self._active: dict[str, float] = {}  # session id -> when a write to it was last seen
        self._refresh_from: dict[str, float] = {}  # session id -> start of its current refresh period
        self._stopped: set[str] = set()  # sessions a Stop hook announced
        self._dirty = True  # look for due mirrors at the next pass
        self._next_due_check = 0.0
        self._next_scan = 0.0
        self._next_roots = clock() + ROOTS_REFRESH_SECONDS
        self._next_beat = 0.0
        self._connection_seen = 0
        self._errors: dict[str, float] = {}
        self._lock: IO[str] | None = None
        self._failures: dict[str, int] = {}  # transcript path -> ingest failures in a row
        self._index_pending = False  # the start-up index has yet to complete

    # --- life cycle --------------------------------------------------------------------------------

    def start(self, index: bool = True) -> None:
        """Take the daemon lock (and write its pid file), make sure the API token exists, index what changed
        while no daemon ran, and start the API."""
        self._take_lock()
        # At once, not after the start-up index (the first one, a backfill, takes minutes): meanwhile the
        # daemon runs for `memex doctor`, for a second daemon, and for the Stop hook (whose notifications
        # the first pass takes).
        (self.config.home / PID_FILE).write_text(str(os.getpid()))
        token = ensure_token(self.config)
        self.watcher.baseline()  # before the index: a change made during it is seen by the next scan
        renamed = self._guard("rename", lambda: Memex(self.config, self.conn).follow_rename()) or {}
        for old, moved in renamed.items():
            log.warning("the computer %r is now %r: %d sessions follow the new name", old, self.config.computer, moved)
        if index:
            self._index_pending = True
            self._guard("index", self.index_all)  # a locked store: the next pass tries again
        if self.serve_api:
            self.api = ApiServer(self.config, token)
            self.api.start()

    def index_all(self) -> None:
        """Ingest every transcript that changed since the last run (the first run is the backfill)."""
        report = Memex(self.config, self.conn).index(workers=self.config.index_workers)
        self._index_pending = False
        for failed in report.failed:
            self._file_failed(failed.path, failed.reason)
        if report.files_changed:
            log.info(
                "indexed %d changed transcripts of %d (%d turns) in %.1f s",
                report.files_changed,
                report.files,
                report.turns,
                report.seconds,
            )
        self._dirty = True

    def close(self) -> None:
        """Stop the API, withdraw the heartbeat, release the lock."""
        if self.tree is not None:
            self.tree.close()
        if self.api is not None:
            self.api.stop()
            self.api = None
        started = self._lock is not None  # a daemon refused its lock leaves the running one's files alone
        if self.link is not None:
            if self.link.up and started:
                with contextlib.suppress(*OUTAGE_ERRORS):
                    withdraw(self.link.redis, self.keys, self.config.computer)
            self.link.close()
        if started:
            with contextlib.suppress(OSError):
                (self.config.home / PID_FILE).unlink()
            assert self._lock is not None
            self._lock.close()
            self._lock = None
        self.conn.close()

    def _take_lock(self) -> None:
        import fcntl

        self.config.home.mkdir(parents=True, exist_ok=True)
        handle = open(self.config.home / LOCK_FILE, "a+")  # noqa: SIM115 (held while the daemon runs)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            pid = (self.config.home / PID_FILE).read_text().strip() if (self.config.home / PID_FILE).exists() else "?"
            raise UserError(f"a memex daemon already runs for {self.config.home} (pid {pid})") from None
        self._lock = handle

    def run(self, should_stop: Callable[[], bool], tick_ms: int = 1000) -> None:
        """Pass after pass until `should_stop()`; each pass waits up to `tick_ms` for other computers."""
        while not should_stop():
            self.run_once(block_ms=tick_ms)

    # --- one pass ----------------------------------------------------------------------------------

    def run_once(self, block_ms: int | None = None) -> PassReport:
        """One pass of the loop (see the module's description); `block_ms` waits for incoming mirrors
        (or sleeps, when Redis is away)."""
        report = PassReport()
        now = self.clock()
        if self._index_pending:
            self._guard("index", self.index_all)
        if now >= self._next_roots:
            self._guard("roots", self._refresh_roots)
            self._next_roots = now + ROOTS_REFRESH_SECONDS
        if now >= self._next_scan:
            self._guard("scan", self.watcher.scan)
            self._next_scan = now + self.config.daemon_scan_seconds
        report.ingested = self._guard("ingest", self._ingest_ready) or 0
        self._guard("signals", self._take_signals)
        client = self.link.client() if self.link is not None else None
        if self.link is not None and self.link.connections != self._connection_seen:
            self._connection_seen = self.link.connections
            self._dirty = True  # the data generation may have changed
        if client is not None and self.clock() >= self._next_beat:
            self._guard("heartbeat", self._heartbeat)
        report.queued = self._guard("publish", self._queue_due) or 0
        if self.link is not None and self.link.up and self.link.epoch is not None:
            report.sent = self._guard("send", self._send) or 0
            report.sent += self._guard("forget", self._send_forgets) or 0
        for task in self.tasks:
            self._guard(getattr(task, "__name__", "task"), task)
        if self.link is not None and self.link.up:
            caught_up = self.consumer.caught_up
            report.received = self._guard("receive", lambda: self._receive(block_ms)) or 0
            if report.received or self.consumer.caught_up != caught_up:
                self._dirty = True  # a forgetting of this computer itself has its mirrors published again
        elif block_ms:
            time.sleep(block_ms / 1000)
        report.waiting = self._guard("outbox", lambda: outbox.waiting(self.conn)) or 0
        if report.ingested or report.sent or report.received:
            log.debug("pass: %s", report)
        return report

    def _guard(self, what: str, action: Callable[[], Any]) -> Any:
        """Run one step of the pass; a Redis outage goes to the link, any other error to the log."""
        try:
            return action()
        except OUTAGE_ERRORS as exc:
            if self.link is not None:
                self.link.failed(exc)
            return None
        except Exception as exc:
            interrupt = interrupt_behind(exc)
            if interrupt is not None:  # SIGTERM during the start-up index, re-raised by the code it landed in
                raise interrupt from None
            key = f"{what}: {type(exc).__name__}: {exc}"
            now = self.clock()
            if now - self._errors.get(key, float("-inf")) >= ERROR_LOG_INTERVAL_S:
                self._errors[key] = now
                log.error("%s failed: %s", what, exc, exc_info=True)
            return None

    def _touch(self, session_id: str, now: float) -> None:
        self._active[session_id] = now
        self._refresh_from.setdefault(session_id, now)
        self._dirty = True

    def _refresh_roots(self) -> None:
        """Find the agents' folders again, with the projects of the sessions indexed since the start: the
        files under a folder new to the watcher are reported by its next scan (no index ever read them)."""
        roots = default_roots(self.config, sorted(ADAPTERS), known_projects(self.conn))
        if roots != self.watcher.roots:
            self.watcher.roots = roots

    def _ingest_ready(self) -> int:
        count = 0
        ready = self.watcher.ready()
        for number, transcript in enumerate(ready):
            try:
                report = ingest_transcript(self.conn, self.config, transcript)
            except Exception as exc:
                if is_store_failure(exc):  # locked, full: every file waits for the next pass
                    for waiting in ready[number:]:
                        self.watcher.retry(waiting.path)
                    raise
                report = failed_report(transcript, exc)  # this file alone: tried again later
            if report.status == "failed":
                self._file_failed(transcript.path, report.error or "failed")
                continue
            self._failures.pop(str(safe_resolve(transcript.path)), None)
            if report.status not in ("missing", "forgotten"):
                self._touch(report.session_id, self.clock())
            count += report.status not in ("unchanged", "missing", "forgotten")
        return count

    def _file_failed(self, path: Path, reason: str) -> None:
        """Log a transcript that could not be ingested and ask for it again later, with back-off."""
        key = str(safe_resolve(path))
        failures = self._failures.get(key, 0) + 1
        self._failures[key] = failures
        delay = min(RETRY_MAX_SECONDS, RETRY_FIRST_SECONDS * 2 ** min(failures - 1, 20))
        log.warning("cannot ingest %s: %s (attempt %d; next in %.0f s)", path, reason, failures, delay)
        self.watcher.retry(path, after=delay)

    def _take_signals(self) -> None:
        for stop in take_stops(self.config.home):
            found = None
            if stop["transcript_path"]:
                found = session_of_transcript(self.conn, str(safe_resolve(Path(stop["transcript_path"]))))
            self._stopped.add(found or str(stop["session_id"]))
            self._dirty = True

    def _queue_due(self) -> int:
        """Put the mirrors that are due in the outbox (see the module's description)."""
        if self.link is None:
            return 0  # nowhere to publish to
        now = self.clock()
        if not self._dirty and now < self._next_due_check:
            return 0
        self._dirty = False
        due: list[str] = []
        next_check = now + DUE_RECHECK_SECONDS
        idle, refresh = self.config.mirror_idle_seconds, self.config.mirror_refresh_seconds
        for item in outbox.unpublished(self.conn, self.config.computer, self.link.epoch):
            session_id = item.session_id
            last_write = self._active.get(session_id)
            if session_id in self._stopped or last_write is None or now - last_write >= idle:
                due.append(session_id)  # closed (or never seen active)
                self._active.pop(session_id, None)
                self._refresh_from.pop(session_id, None)
            elif now - self._refresh_from.get(session_id, now) >= refresh:
                due.append(session_id)  # a long session: its periodic refresh
                self._refresh_from[session_id] = now
            else:
                next_check = min(next_check, last_write + idle, self._refresh_from.get(session_id, now) + refresh)
        self._stopped.clear()
        # Sessions that went quiet with nothing new to publish are forgotten.
        for session_id, last_write in list(self._active.items()):
            if now - last_write >= idle:
                self._active.pop(session_id)
                self._refresh_from.pop(session_id, None)
        self._next_due_check = next_check
        return outbox.enqueue(self.conn, self.config.computer, due, self.config.sync_batch) if due else 0

    def _send_forgets(self) -> int:
        """Tell the other computers what the user forgot here (`memex forget`, `memex computers forget`)."""
        assert self.link is not None
        sent = forgets.publish(
            self.conn, self.link.redis, self.keys, self.config.computer, self.config.stream_max_entries
        )
        if sent:
            log.info("published %d forgettings", sent)
        return sent

    def _send(self) -> int:
        assert self.link is not None and self.link.epoch is not None
        c = self.config
        sent = outbox.flush(
            self.conn, self.link.redis, self.keys, c.computer, self.link.epoch, c.sync_batch, c.stream_max_entries
        )
        if sent:
            log.info("published %d mirrors", sent)
        return sent

    def _heartbeat(self) -> None:
        assert self.link is not None
        now = self.clock()
        if self.link.refresh_epoch():
            self._dirty = True
        sessions = session_count(self.conn)
        info = ComputerInfo(
            computer=self.config.computer,
            version=memex.__version__,
            api_url=self.api.url if self.api is not None else None,
            sessions=sessions,
            started_at=iso(self.started_at),
            last_seen=iso(now),
        )
        announce(self.link.redis, self.keys, info, self.config.heartbeat_ttl_seconds)
        remember(self.conn, registry(self.link.redis, self.keys))
        self._next_beat = now + self.config.heartbeat_seconds

    def _receive(self, block_ms: int | None) -> int:
        """Read what other computers published, batch after batch; when there was nothing, wait up to
        `block_ms` for something (the loop's pause)."""
        assert self.link is not None
        written = read = 0
        for _ in range(MAX_BATCHES_PER_PASS):
            result = self.consumer.step(self.link.redis, self.link.connections)
            written += result.written
            read += result.read
            if result.read < self.consumer.batch and not self.consumer.reading_pending:
                break
        if block_ms and not read:
            written += self.consumer.step(self.link.redis, self.link.connections, block_ms).written
        return written
