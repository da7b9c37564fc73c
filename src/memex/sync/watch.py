"""Noticing changed transcripts: a polling scan of the agents' folders, debounced.

Polling the size and modification time of every transcript costs a few milliseconds for thousands of
files, needs no dependency, and works where change notifications do not (network and synced folders,
containers, macOS without extra permissions). A file that changed is ingested once it has been quiet
for `debounce` seconds (an agent writes a burst of lines per answer), or at the latest `debounce_max`
seconds after its first change, so a session that never pauses is still ingested.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memex.sources import adapter
from memex.sources.model import Transcript

# Which files under an agent's folder may be transcripts (the adapter decides for sure).
_SUFFIXES = {"claude": (".jsonl",), "codex": (".jsonl",), "gemini": (".json", ".jsonl")}
# Claude Code keeps large tool outputs beside its transcripts; they are not transcripts.
_SKIPPED_FOLDERS = {"tool-results"}


@dataclass
class _Change:
    first: float
    last: float


def _stat_tree(root: Path, suffixes: tuple[str, ...]) -> dict[Path, tuple[int, int]]:
    """(size, mtime_ns) of every candidate file under `root`."""
    found: dict[Path, tuple[int, int]] = {}
    if root.is_file():
        stat = root.stat()
        return {root.resolve(): (stat.st_size, stat.st_mtime_ns)}
    for folder, dirs, files in os.walk(root.resolve()):
        dirs[:] = [d for d in dirs if d not in _SKIPPED_FOLDERS]
        for name in files:
            if name.endswith(suffixes):
                path = os.path.join(folder, name)
                try:
                    stat = os.stat(path)
                except OSError:  # gone between the listing and the stat
                    continue
                found[Path(path)] = (stat.st_size, stat.st_mtime_ns)
    return found


class Watcher:
    """Scans the agents' folders and tells which transcripts are ready to ingest."""

    def __init__(
        self,
        roots_by_agent: dict[str, list[Path]],
        clock: Callable[[], float],
        debounce: float,
        debounce_max: float,
    ) -> None:
        self.roots = roots_by_agent
        self.clock = clock
        self.debounce = debounce
        self.debounce_max = debounce_max
        self._seen: dict[Path, tuple[int, int]] = {}
        self._agent_of: dict[Path, str] = {}
        self._changes: dict[Path, _Change] = {}
        self._transcripts: dict[Path, Transcript] = {}

    def _scan_files(self) -> dict[Path, tuple[int, int]]:
        found: dict[Path, tuple[int, int]] = {}
        for agent, roots in self.roots.items():
            for root in roots:
                try:
                    files = _stat_tree(root, _SUFFIXES[agent])
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
            if now - change.last >= self.debounce or now - change.first >= self.debounce_max
        ]
        transcripts = []
        for path in ready:
            del self._changes[path]
            transcript = self._transcript(path)
            if transcript is not None:
                transcripts.append(transcript)
        return sorted(transcripts, key=lambda t: (t.subagent_id is not None, str(t.path)))

    def _transcript(self, path: Path) -> Transcript | None:
        """The transcript a file is, as the agent's adapter sees it (its folders are listed again when a
        new file appears, so a file is classified exactly as `memex index` would)."""
        if path not in self._transcripts:
            agent = self._agent_of.get(path)
            if agent is None:
                return None
            for transcript in adapter(agent).discover(self.roots[agent]):
                self._transcripts[transcript.path.resolve()] = transcript
        return self._transcripts.get(path)
