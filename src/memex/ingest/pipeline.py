"""Incremental ingest of one transcript stream into the store, in one transaction.

Each run reads only what follows the stream's resume point (the start of its provisional turn), deletes
what it is about to rebuild (by cascade), and records where it stopped. A file that shrank or whose
consumed bytes changed is re-ingested from the start.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from memex.config import Config
from memex.ingest.chunks import chunk_text
from memex.ingest.mirrors import refresh_mirror
from memex.ingest.state import StreamState, file_checks, is_append_of, load_state, save_state
from memex.ingest.turns import Turn, TurnBuilder
from memex.sources import adapter, is_incremental
from memex.sources.model import BadLine, Entry, Transcript
from memex.store.db import transaction
from memex.textutil import fts_text, shorten

# Title sources, weakest first: a later or stronger source replaces a weaker one.
TITLE_RANKS = {"prompt": 1, "ai-title": 2, "summary": 3, "custom-title": 4}
TITLE_MAX_CHARS = 100
# Warnings kept per file (the count of bad lines is always complete).
MAX_WARNINGS_PER_FILE = 5


@dataclass
class FileReport:
    """What one transcript's ingest did."""

    path: Path
    session_id: str
    agent_id: str = ""
    status: str = "unchanged"  # new, appended, rewritten, unchanged, missing
    lines: int = 0
    bad_lines: int = 0
    turns: int = 0
    bytes_read: int = 0
    mirror_written: bool = False
    warnings: list[str] = field(default_factory=list)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _path_key(path: Path) -> str:
    return str(path.resolve())


def _resolve_session_id(conn: sqlite3.Connection, transcript: Transcript) -> str:
    """The session id a main transcript is stored under.

    Two different files claiming one session id (copied fixtures, a file written by a resumed session)
    must not overwrite each other: the later one gets an id derived from its path.
    """
    row = conn.execute(
        "SELECT session_id FROM sessions WHERE transcript_path = ?", (_path_key(transcript.path),)
    ).fetchone()
    if row:
        return row["session_id"]
    row = conn.execute("SELECT transcript_path FROM sessions WHERE session_id = ?", (transcript.session_id,)).fetchone()
    if row is None or row["transcript_path"] is None or not Path(row["transcript_path"]).exists():
        return transcript.session_id
    if row["transcript_path"] in {_path_key(alias) for alias in transcript.aliases}:
        return transcript.session_id  # this file supersedes the one the session was read from
    suffix = hashlib.blake2b(_path_key(transcript.path).encode(), digest_size=4).hexdigest()
    return f"{transcript.session_id}-{suffix}"


def _ensure_session(conn: sqlite3.Connection, session_id: str, agent: str, config: Config, now: str) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO sessions (session_id, agent, computer, updated_at) VALUES (?, ?, ?, ?)",
        (session_id, agent, config.computer, now),
    )


def _reset_stream(conn: sqlite3.Connection, session_id: str, agent_id: str) -> None:
    conn.execute("DELETE FROM turns WHERE session_id = ? AND agent_id = ?", (session_id, agent_id))
    conn.execute("DELETE FROM entries WHERE session_id = ? AND agent_id = ?", (session_id, agent_id))
    if not agent_id:
        conn.execute("DELETE FROM pr_links WHERE session_id = ?", (session_id,))
        conn.execute("UPDATE sessions SET title = NULL, title_rank = 0 WHERE session_id = ?", (session_id,))


class _SessionFacts:
    """Session-level facts gathered while reading entries: project, times, title, PRs, compactions."""

    def __init__(self) -> None:
        self.cwd: str | None = None
        self.first_timestamp: str | None = None
        self.last_timestamp: str | None = None
        self.title: tuple[int, str] | None = None
        self.pr_links: list[tuple[int, str | None, str | None]] = []
        self.project_hash: str | None = None  # Gemini names its project only by a hash of its path

    def add(self, entry: Entry) -> None:
        if entry.cwd and self.cwd is None:
            self.cwd = entry.cwd
        if entry.extra.get("project_hash") and self.project_hash is None:
            self.project_hash = entry.extra["project_hash"]
        if entry.timestamp:  # records are not always written in time order (snapshots come late)
            self.first_timestamp = min(self.first_timestamp or entry.timestamp, entry.timestamp)
            self.last_timestamp = max(self.last_timestamp or entry.timestamp, entry.timestamp)
        if entry.kind in ("title", "summary") and entry.extra.get("title"):
            source = entry.extra.get("source", "summary")
            self._offer_title(TITLE_RANKS[source], entry.extra["title"])
        elif entry.kind == "prompt" and entry.text:
            self._offer_title(TITLE_RANKS["prompt"], entry.text, first_only=True)
        elif entry.kind == "pr_link":
            self.pr_links.append((entry.extra["pr_number"], entry.extra["pr_url"], entry.extra["repository"]))

    def _offer_title(self, rank: int, text: str, first_only: bool = False) -> None:
        if self.title is None or rank > self.title[0] or (rank == self.title[0] and not first_only):
            self.title = (rank, shorten(text, TITLE_MAX_CHARS))


def _write_session_facts(
    conn: sqlite3.Connection, session_id: str, facts: _SessionFacts, from_main_start: bool
) -> None:
    """Record what the entries said about their session.

    The start time is the main transcript's first timestamp (a subagent only fills it in when the main
    transcript is not known yet); the end time is the latest timestamp of any stream.
    """
    started = "started_at = coalesce(?, started_at)" if from_main_start else "started_at = coalesce(started_at, ?)"
    conn.execute(
        f"UPDATE sessions SET project_dir = coalesce(project_dir, ?), {started}, "
        "ended_at = CASE WHEN ended_at IS NULL OR ended_at < ? THEN ? ELSE ended_at END "
        "WHERE session_id = ?",
        (facts.cwd, facts.first_timestamp, facts.last_timestamp, facts.last_timestamp, session_id),
    )
    if facts.title:
        rank, title = facts.title
        conn.execute(
            "UPDATE sessions SET title = ?, title_rank = ? WHERE session_id = ? AND "
            "(title_rank < ? OR (title_rank = ? AND ? > 1))",
            (title, rank, session_id, rank, rank, rank),
        )
    conn.executemany(
        "INSERT INTO pr_links (session_id, pr_number, pr_url, repository) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (session_id, pr_number) DO UPDATE SET pr_url = excluded.pr_url, "
        "repository = excluded.repository",
        [(session_id, *link) for link in facts.pr_links],
    )


def project_from_hash(conn: sqlite3.Connection, digest: str) -> str | None:
    """A known project folder (of any indexed session) whose SHA-256 is `digest` (Gemini's projectHash)."""
    for (project_dir,) in conn.execute("SELECT DISTINCT project_dir FROM sessions WHERE project_dir IS NOT NULL"):
        for candidate in (project_dir, project_dir.lower()):
            if hashlib.sha256(candidate.encode("utf-8")).hexdigest() == digest.lower():
                return project_dir
    return None


def _is_warmup(turn: Turn) -> bool:
    """Claude Code 2.0 primed subagents with a "Warmup" prompt: no conversation worth recalling."""
    return turn.is_sidechain and turn.prompt_text.strip() == "Warmup"


def _write_turns(
    conn: sqlite3.Connection, session_id: str, turns: list[Turn], project_dir: str | None, config: Config
) -> None:
    for turn in turns:
        if _is_warmup(turn):
            continue
        summary = turn.tool_summary(project_dir)
        turn_id = conn.execute(
            "INSERT INTO turns (session_id, agent_id, line_index, end_line_index, kind, is_sidechain, "
            "provisional, prompt_text, full_text, tool_summary, started_at, ended_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                session_id,
                turn.agent_id,
                turn.line_index,
                max(turn.end_line_index, turn.line_index),
                turn.kind,
                int(turn.is_sidechain),
                int(turn.provisional),
                turn.prompt_text,
                turn.full_text(),
                summary,
                turn.started_at,
                turn.ended_at,
            ),
        ).lastrowid
        text = turn.full_text() + ("\n\n" + summary if summary else "")
        pieces = chunk_text(text, config.chunk_max_tokens, config.chunk_overlap_tokens)
        conn.executemany(
            "INSERT INTO chunks (turn_id, chunk_index, content, fts_text) VALUES (?, ?, ?, ?)",
            [(turn_id, index, piece, fts_text(piece)) for index, piece in enumerate(pieces)],
        )
        conn.executemany(
            "INSERT INTO file_mentions (turn_id, session_id, file_path, tool_name) VALUES (?, ?, ?, ?)",
            [(turn_id, session_id, path, tool) for path, tool in turn.files(project_dir)],
        )


def ingest_transcript(conn: sqlite3.Connection, config: Config, transcript: Transcript) -> FileReport:
    """Bring the store up to date with one transcript (a session's main file or one subagent's file).

    Everything happens in one transaction: killed at any moment, the next run redoes the same work.
    """
    agent_id = transcript.subagent_id or ""
    report = FileReport(transcript.path, transcript.session_id, agent_id)
    source = adapter(transcript.agent)
    with transaction(conn):
        now = _now()
        try:
            stat = transcript.path.stat()
        except FileNotFoundError:
            report.status = "missing"
            report.warnings.append(f"{transcript.path}: the file disappeared before it could be read")
            return report
        session_id = transcript.session_id if agent_id else _resolve_session_id(conn, transcript)
        report.session_id = session_id
        _ensure_session(conn, session_id, transcript.agent, config, now)
        state = load_state(conn, session_id, agent_id)
        if state and state.file_size == stat.st_size and state.file_mtime_ns == stat.st_mtime_ns:
            return report
        try:
            handle = transcript.path.open("rb")
        except FileNotFoundError:
            report.status = "missing"
            report.warnings.append(f"{transcript.path}: the file disappeared before it could be read")
            return report
        with handle:
            if state is None:
                report.status, state = "new", StreamState()
            elif is_incremental(transcript.agent) and is_append_of(handle, stat.st_size, state):
                report.status = "appended"
            else:
                report.status, state = "rewritten", StreamState()
                _reset_stream(conn, session_id, agent_id)
            _ingest_stream(conn, config, transcript, source, session_id, agent_id, state, report, now)
            state.file_size, state.file_mtime_ns = stat.st_size, stat.st_mtime_ns
            state.head_hash, state.tail_hash = file_checks(handle, state.last_offset)
        save_state(conn, session_id, agent_id, _path_key(transcript.path), state, now)
        if not agent_id:  # the mirror holds the main conversation only
            report.mirror_written = refresh_mirror(conn, session_id)
    return report


def _ingest_stream(
    conn: sqlite3.Connection,
    config: Config,
    transcript: Transcript,
    source: object,
    session_id: str,
    agent_id: str,
    state: StreamState,
    report: FileReport,
    now: str,
) -> None:
    start_line, start_offset = state.resume_line_index, state.resume_offset
    # What follows the resume point is rebuilt: its entries, and the provisional turn (by cascade).
    conn.execute(
        "DELETE FROM entries WHERE session_id = ? AND agent_id = ? AND line_index >= ?",
        (session_id, agent_id, start_line),
    )
    conn.execute(
        "DELETE FROM turns WHERE session_id = ? AND agent_id = ? AND line_index >= ?",
        (session_id, agent_id, start_line),
    )
    builder = TurnBuilder(agent_id, is_sidechain=bool(agent_id))
    facts = _SessionFacts()
    offsets: dict[int, int] = {}
    rows = []
    end_offset, next_line = start_offset, start_line
    for line, parsed in source.read_entries(transcript.path, start_offset, start_line):  # type: ignore[attr-defined]
        offsets[line.line_index] = line.start
        end_offset, next_line = line.end, line.line_index + 1
        report.lines += 1
        if isinstance(parsed, BadLine):
            report.bad_lines += 1
            if len(report.warnings) < MAX_WARNINGS_PER_FILE:
                report.warnings.append(f"{transcript.path}:{parsed.line_index + 1}: skipped ({parsed.reason})")
            continue
        if line.repaired and len(report.warnings) < MAX_WARNINGS_PER_FILE:
            report.warnings.append(f"{transcript.path}:{line.line_index + 1}: invalid UTF-8 replaced")
        if parsed is None:
            continue
        if agent_id:
            parsed.agent_id = agent_id
        builder.add(parsed)
        facts.add(parsed)
        text = parsed.text if parsed.kind != "tool_result" else ""
        rows.append(
            (
                session_id,
                agent_id,
                parsed.line_index,
                parsed.entry_type,
                parsed.kind,
                parsed.role,
                parsed.timestamp,
                parsed.uuid,
                parsed.parent_uuid,
                parsed.message_id,
                text or None,
                int(parsed.is_sidechain or bool(agent_id)),
            )
        )
    conn.executemany(
        "INSERT INTO entries (session_id, agent_id, line_index, entry_type, kind, role, timestamp, uuid, "
        "parent_uuid, message_id, text, is_sidechain) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    resume = builder.resume_line_index
    turns = builder.finish()
    if facts.cwd is None and facts.project_hash and not agent_id:
        facts.cwd = project_from_hash(conn, facts.project_hash)
        if facts.cwd is None:
            report.warnings.append(
                f"{transcript.path}: project folder unknown (only its hash {facts.project_hash[:12]}… is recorded; "
                "index another agent's session of that project, or keep ~/.gemini/projects.json, to recover it)"
            )
    project_dir = conn.execute(
        "SELECT coalesce(project_dir, ?) FROM sessions WHERE session_id = ?", (facts.cwd, session_id)
    ).fetchone()[0]
    _write_turns(conn, session_id, turns, project_dir, config)
    if agent_id:
        facts.title = None  # a subagent's prompt is not its session's title
    _write_session_facts(conn, session_id, facts, from_main_start=not agent_id and start_line == 0)
    report.turns = len(turns)
    report.bytes_read = end_offset - start_offset
    state.last_line_index, state.last_offset = next_line, end_offset
    if resume is not None:
        state.resume_line_index, state.resume_offset = resume, offsets[resume]
    else:
        state.resume_line_index, state.resume_offset = next_line, end_offset
    state.provisional_turn_start = turns[-1].line_index if turns else None
    if builder.compact_lines:
        state.last_compact_line_index = builder.compact_lines[-1]
    state.bad_lines += report.bad_lines
