"""Noticing changed transcripts: a polling scan of the agents' folders, debounced.

Polling the size and modification time of every transcript costs about 30 ms for 5,000 files (1.5% of
a core at one scan every 2 s), needs no dependency, and works where change notifications do not
(network and synced folders, containers, macOS without extra permissions). Where inotify works, the scan
reads the folders from a live tree (`memex.sources.tree`) instead: the same sizes and times, without a
system call for a folder or a file that did not change. A file that changed is
ingested once it has been quiet for `debounce` seconds (an agent writes a burst of lines per answer), or
at the latest `debounce_max` seconds after its first change, so a session that never pauses is still
ingested.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memex.sources import adapter, is_synthetic
from memex.sources.files import safe_resolve
from memex.sources.model import Transcript

if TYPE_CHECKING:
    from memex.sources.tree import LiveTree

# Which files under an agent's folder may be transcripts (the adapter decides for sure): an adapter's
# `WATCH_SUFFIXES`, else these.
_SUFFIXES = (".jsonl", ".json")
# Claude Code keeps large tool outputs beside its transcripts; they are not transcripts.
_SKIPPED_FOLDERS = {"tool-results"}
# A changed file that is not a transcript (Gemini's logs.json, a stray file) makes the watcher list the
# agent's folders again at most this often: a file that becomes a transcript is found within this time.
REDISCOVER_SECONDS = 60.0
_LATER = object()
# Agents whose chats are recognised among their folder's files (every other adapter classifies a file
# given alone exactly as it does in a folder listing).
_LISTED_BY_FOLDER = {"gemini"}


def _candidate(agent: str, path: str) -> bool:
    """Whether a file may be one of `agent`'s transcripts, from its path alone."""
    if agent == "gemini":  # Gemini keeps chats in `chats/` (and subagents' in `chats/<session>/`)
        parts = Path(path).parts
        return "chats" in parts[-3:-1]
    return True


@dataclass
class _Change:
    first: float
    last: float


def _stat_tree(root: Path, agent: str, tree: LiveTree | None = None) -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of every file under `root` that may be one of `agent`'s transcripts, by path; the
    folders a live `tree` holds are read from it."""
    suffixes = getattr(adapter(agent), "WATCH_SUFFIXES", _SUFFIXES)
    found: dict[str, tuple[int, int]] = {}
    if root.is_file():  # a database given as the root changes in its write-ahead log first
        stat = root.stat()
        size, mtime = stat.st_size, stat.st_mtime_ns
        wal = Path(f"{root}-wal")
        if wal.is_file():
            log = wal.stat()
            size, mtime = size + log.st_size, max(mtime, log.st_mtime_ns)
        return {str(safe_resolve(root)): (size, mtime)}
    folders = [str(safe_resolve(root))]
    while folders:
        folder = folders.pop()
        held = tree.listing(folder) if tree is not None else None
        try:
            entries = list(os.scandir(folder)) if held is None else list(held)
        except OSError:  # gone, or not readable
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _SKIPPED_FOLDERS:
                        folders.append(entry.path)
                elif entry.name.endswith(suffixes) and _candidate(agent, entry.path):
                    stat = entry.stat()
                    found[entry.path] = (stat.st_size, stat.st_mtime_ns)
            except OSError:  # gone between the listing and the stat
                continue
    return found


class Watcher:
    """Scans the agents' folders and tells which transcripts are ready to ingest."""

    def __init__(
        self,
        roots_by_agent: dict[str, list[Path]],
        clock: Callable[[], float],
        debounce: float,
        debounce_max: float,
        tree: LiveTree | None = None,
    ) -> None:
        self.roots = roots_by_agent
        self.tree = tree  # the folders' live listing, when inotify works here (its owner closes it)
        self.clock = clock
        self.debounce = debounce
        self.debounce_max = debounce_max
        self._seen: dict[str, tuple[int, int]] = {}
        self._agent_of: dict[str, str] = {}
        self._changes: dict[str, _Change] = {}
        self._transcripts: dict[str, list[Transcript]] = {}  # a file may hold several (subagents, sessions)
        self._rediscovered: dict[str, float] = {}  # agent -> when its folders were last listed again
        self._not_before: dict[str, float] = {}  # path -> when a file whose ingest failed may be tried again

    def _scan_files(self) -> dict[str, tuple[int, int]]:
        found: dict[str, tuple[int, int]] = {}
        if self.tree is not None:
            folders = [str(safe_resolve(root)) for roots in self.roots.values() for root in roots if root.is_dir()]
            try:
                self.tree.track(folders)
            except OSError:  # a change may have been read and not applied: listed again from scratch
                self.tree.close()
        for agent, roots in self.roots.items():
            for root in roots:
                try:
                    files = _stat_tree(root, agent, self.tree)
                except OSError:  # a folder that does not exist (yet)
                    continue
                for path in files:
                    self._agent_of.setdefault(path, agent)
                found.update(files)
        return found

    def baseline(self) -> None:
        """Record the current state of every file without reporting it (the start-up index covers it)."""
        self._seen = self._scan_files()

    def scan(self) -> int:
        """Look for changed and new files; returns how many changed since the last scan."""
        now = self.clock()
        current = self._scan_files()
        changed = 0
        for path, state in current.items():
            if self._seen.get(path) != state:
                changed += 1
                change = self._changes.get(path)
                if change is None:
                    self._changes[path] = _Change(now, now)
                else:
                    change.last = now
        self._seen = current
        return changed

    def retry(self, path: Path, after: float = 0.0) -> None:
        """Report a file again (its ingest failed): at the next `ready()`, or once `after` seconds have
        passed; until then its changes wait, and every other file is reported as usual."""
        now = self.clock()
        key = str(safe_resolve(path))
        self._changes[key] = _Change(now - self.debounce_max, now - self.debounce)
        if after > 0:
            self._not_before[key] = now + after
        else:
            self._not_before.pop(key, None)

    @property
    def pending(self) -> int:
        """Changed files waiting for their debounce."""
        return len(self._changes)

    def ready(self) -> list[Transcript]:
        """The transcripts whose changes have settled (or waited long enough), parents before subagents."""
        now = self.clock()
        ready = [
            path
            for path, change in self._changes.items()
            if (now - change.last >= self.debounce or now - change.first >= self.debounce_max)
            and self._not_before.get(path, now) <= now
        ]
        for path in ready:
            self._not_before.pop(path, None)
        transcripts = []
        for path in ready:
            transcript = self._transcript(path)
            if transcript is _LATER:
                continue  # an unknown file, and the folders were listed moments ago: asked again later
            del self._changes[path]
            if isinstance(transcript, list):
                transcripts.extend(transcript)
        return sorted(transcripts, key=lambda t: (t.subagent_id is not None, str(t.path)))

    def _transcript(self, path: str) -> list[Transcript] | object | None:
        """The transcripts a file holds, exactly as `memex index` would see them: most agents' files are
        classified alone (a Copilot file with its inline subagents, a database with its sessions); for
        Gemini (whose chats are recognised among their folder's files) the folders are listed again when an
        unknown file changes, at most every REDISCOVER_SECONDS (`_LATER` until then). None: no transcript."""
        if path in self._transcripts:
            return self._transcripts[path]
        agent = self._agent_of.get(path)
        if agent is None:
            return None
        if agent not in _LISTED_BY_FOLDER:
            source = adapter(agent)
            file = getattr(source, "watched_file", lambda p: p)(Path(path))  # a database's -wal: the database
            found = source.discover([file])
            # A database's sessions, and a Copilot file's subagents, come and go: listed every time.
            if found and not any(is_synthetic(t) for t in found) and not getattr(source, "INLINE_SUBAGENTS", False):
                self._transcripts[path] = found
            return found or None
        now = self.clock()
        if now - self._rediscovered.get(agent, float("-inf")) < REDISCOVER_SECONDS:
            return _LATER
        self._rediscovered[agent] = now
        for transcript in adapter(agent).discover(self.roots[agent]):
            self._transcripts.setdefault(str(safe_resolve(transcript.path)), [transcript])
        return self._transcripts.get(path)
