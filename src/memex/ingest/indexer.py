"""Indexing many transcripts: discovery, per-file ingest, and the totals a user sees at the end."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from memex.config import Config
from memex.ingest.mirrors import refresh_mirror, sessions_without_mirror
from memex.ingest.pipeline import FileReport, ingest_transcript
from memex.sources import ADAPTERS, adapter
from memex.sources.model import Transcript
from memex.store.db import transaction


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
    """The folders each agent writes its transcripts to."""
    folders = {"claude": config.claude_dir, "codex": config.codex_dir, "gemini": config.gemini_dir}
    return {agent: [folders[agent]] for agent in agents}


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
) -> IndexReport:
    """Ingest each transcript incrementally and total what was done."""
    report = IndexReport()
    started = time.perf_counter()
    for transcript in transcripts:
        file_report = ingest_transcript(conn, config, transcript)
        report.add(file_report)
        if on_file:
            on_file(transcript, file_report)
    report.mirrors += backfill_mirrors(conn)
    report.seconds = time.perf_counter() - started
    return report


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
