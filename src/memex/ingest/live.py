"""`memex index` over the agents' folders through the warm server, whose live tree replaces the walk.

A walk of 20,000 transcripts where one changed costs ~140 ms of CPU, most of it listing folders and
`stat`ing files that did not change. The warm server (`memex.hooks.warm`) lives between runs: it holds a
`memex.sources.tree.LiveTree` of the folders of the agents whose files are sieved (`SIEVES`), kept exact by
inotify, and runs the index itself over it: the same discovery and ingest code as `memex index`, only
its folder listings and `stat`s come from the tree. `memex index` with no PATHS asks the server
(`ask_index`) and prints its report; it walks itself when no server answers, when the server lists other
folders (another environment), or when there is much to read (at least `PARALLEL_MIN_FILES` files or
`PARALLEL_MIN_BYTES`: worker processes, a progress bar and Ctrl-C are the client's). A run that walked
starts a server for the next when the run before it was recent (within `warm_idle_seconds`): a server is
worth its start and its listing of the folders to runs that come often, not to a nightly one.
Settings: `index_warm` (0: always walk), `warm_idle_seconds` (0: no warm server).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memex.config import Config

if TYPE_CHECKING:
    from memex.api import Discovery, Memex
    from memex.ingest.state import StoredStream
    from memex.sources.tree import LiveTree

# The server may wait for another writer (up to `busy_timeout_ms`) or list the folders for the first time: a
# client waits that long and this much more before walking itself.
READ_MARGIN_MS = 10_000
# Touched by every run that walked the default folders itself (in $MEMEX_HOME): when the one before was that
# recent, a server is started for the next.
WALKED = "index-walked"


def _roots(config: Config, agents: Sequence[str]) -> dict[str, list[str]]:
    """The default folders of `agents` (all when empty), as the client and the server each see them."""
    from memex.sources import ADAPTERS
    from memex.sources.locations import agent_roots

    chosen = list(agents) or sorted(ADAPTERS)
    # Absolute: a relative folder of the environment (`CODEX_HOME=.codex`) is another folder in the server.
    return {agent: [os.path.abspath(p) for p in agent_roots(config, agent)] for agent in chosen}


def _enabled(config: Config) -> bool:
    """Whether `memex index` goes through a warm server here (`index_warm`, a warm server allowed, Linux)."""
    return bool(config.index_warm and config.warm_idle_seconds and sys.platform.startswith("linux"))


def ask_index(config: Config, agents: Sequence[str]) -> dict[str, Any] | None:
    """The warm server's index run over `agents`' default folders (`LiveIndex.run`'s answer), or None when
    this process must walk itself (`walked` afterwards). StoreError when the server could not write to the
    store (what the run would have met here too)."""
    if not _enabled(config):
        return None
    from memex.hooks import warm

    payload = {"agents": list(agents), "roots": _roots(config, agents)}
    reply = warm.ask(config, "index", payload, read_timeout_ms=config.busy_timeout_ms + READ_MARGIN_MS)
    answer = reply.answer
    if answer is not None and "store_error" in answer:
        from memex.errors import StoreError

        raise StoreError(str(answer["store_error"]))
    if answer is None or "report" not in answer:
        return None
    return answer


def walked(config: Config) -> None:
    """Note that this process walked the default folders; start a warm server for the next run when the run
    before was recent too, and no server serves these settings."""
    if not _enabled(config):
        return
    import time

    from memex.hooks import warm

    marker = config.home / WALKED
    try:
        before = marker.stat().st_mtime
    except OSError:
        before = None
    with contextlib.suppress(OSError):
        marker.touch()
    if before is not None and time.time() - before < config.warm_idle_seconds and warm.server_pid(config) is None:
        warm.spawn(config, for_index=True)


class LiveIndex:
    """The warm server's index runs: a live tree of the sieved agents' folders, and a store connection
    that writes (one run at a time)."""

    def __init__(self, config: Config) -> None:
        from memex.sources.tree import LiveTree

        self.config = config
        self.tree: LiveTree = LiveTree()
        self.lock = threading.Lock()
        self._memex: Memex | None = None
        self._identity: int | None = None
        # The stored streams as of change `_last` of their log, kept between runs (`stored_streams_since`):
        # the rows that did not change stay the same objects, which the tree's sieve memo relies on.
        self._stored: dict[str, StoredStream] | None = None
        self._last = 0

    def prepare(self) -> None:
        """List and watch the folders now, not on the first run."""
        with self.lock:
            self.tree.track(self._folders(_roots(self.config, ())))

    def drain(self) -> None:
        """Apply the changes the kernel has queued, unless a run is under way (it applies them itself)."""
        if self.lock.acquire(blocking=False):
            try:
                self.tree.refresh()
            except OSError:  # the queue unreadable: dropped, the next run lists the folders again
                self.tree.close()
            finally:
                self.lock.release()

    def run(self, payload: dict[str, Any]) -> dict[str, Any]:
        """Index the default folders of `payload["agents"]` as `memex index` would; `{"walk": why}` when the
        client must walk itself, else `{"report": IndexReport.to_json(), "nothing": …, "where": …, "notes": […]}`
        (the notes of a renamed computer followed, as the client's own run would have followed it)."""
        agents = [str(agent) for agent in payload.get("agents") or ()]
        roots = _roots(self.config, agents)
        if payload.get("roots") != roots:
            return {"walk": "the client's folders are not the server's"}
        from memex.computers import rename_notes
        from memex.errors import StoreError
        from memex.ingest.indexer import PARALLEL_MIN_BYTES, PARALLEL_MIN_FILES
        from memex.ingest.state import stored_streams_since

        with self.lock:
            try:
                self.tree.track(self._folders(roots))
            except OSError as exc:  # a change may have been read and not applied: the tree is not trusted
                self.tree.close()
                return {"walk": f"the folders' changes could not be read: {exc}"}
            memex = self._writer()
            try:
                notes = rename_notes(memex.follow_rename(), self.config.computer)
                self._stored, self._last = stored_streams_since(memex.conn, self._stored, self._last)
                found = memex.discover(agents=agents, tree=self.tree, stored=self._stored)
                files, size = _to_read(found)
                # Not the indexer's rule for worker processes (both at once): either is enough to want the
                # client's progress bar and its Ctrl-C.
                if files >= PARALLEL_MIN_FILES or size >= PARALLEL_MIN_BYTES:
                    return {"walk": f"{files} files to read"}
                report = memex.index(found, workers=1)
            except StoreError as exc:  # the client says it as its own run would (no second wait for the lock)
                return {"store_error": str(exc)}
        return {
            "report": report.to_json(),
            "nothing": found.found_nothing(report),
            "where": found.where,
            "notes": notes,
        }

    def close(self) -> None:
        with self.lock:
            self.tree.close()
            if self._memex is not None:
                self._memex.close()
                self._memex = None

    def _folders(self, roots: dict[str, list[str]]) -> list[str]:
        """The real paths of the folders that the sieving agents' roots are."""
        from memex.sources import ADAPTERS
        from memex.sources.files import safe_resolve

        return [
            str(safe_resolve(Path(root)))
            for agent, paths in roots.items()
            if getattr(ADAPTERS[agent], "SIEVES", False)
            for root in paths
            if os.path.isdir(root)
        ]

    def _writer(self) -> Memex:
        """The store's writing face, opened again when the database file was replaced (a rebuild)."""
        from memex.api import Memex

        try:
            identity: int | None = os.stat(self.config.db_path).st_ino
        except OSError:
            identity = None
        if self._memex is not None and identity != self._identity:
            self._memex.close()
            self._memex = None
            self._stored = None
        if self._memex is None:
            self._memex = Memex(self.config, readonly=False)
        self._identity = identity
        return self._memex


def _to_read(found: Discovery) -> tuple[int, int]:
    """How many of the transcripts found are not as the store holds them, and about how many new bytes."""
    from memex.ingest.state import FILE_MTIME_NS, FILE_SIZE

    known = found.known or {}
    files = size = 0
    for transcript in found.transcripts:
        try:
            now = os.stat(transcript.read_path)
        except OSError:
            continue
        stored = known.get(str(transcript.path))
        if stored is not None and (now.st_size, now.st_mtime_ns) == (stored[FILE_SIZE], stored[FILE_MTIME_NS]):
            continue
        files += 1
        size += now.st_size - (stored[FILE_SIZE] if stored is not None and now.st_size >= stored[FILE_SIZE] else 0)
    return files, size
