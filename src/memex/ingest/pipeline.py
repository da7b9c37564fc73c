"""Incremental ingest of one transcript stream into the store, in one transaction.

Each run reads only what follows the stream's resume point (the start of its provisional turn), deletes
what it is about to rebuild (by cascade), and records where it stopped. A file that shrank or whose
consumed bytes changed is re-ingested from the start, and so is any change to a transcript of an agent
that rewrites its files in place (`INCREMENTAL = False` in its source module).

Three steps: `plan_ingest` reads the stored state, `parse_stream` reads the file (no database: it can run
in a worker process), `write_stream` stores the result and rebuilds the session's mirror.
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


def _resolve_session_id(conn: sqlite3.Connection, transcript: Transcript, claimed: dict[str, str] | None = None) -> str:
    """The session id a main transcript is stored under.

    Two different files claiming one session id (copied fixtures, a file written by a resumed session)
    must not overwrite each other: the later one gets an id derived from its path. `claimed` holds the
    ids that files planned earlier in the same run will take (session id -> transcript path).
    """
    key = _path_key(transcript.path)
    row = conn.execute("SELECT session_id FROM sessions WHERE transcript_path = ?", (key,)).fetchone()
    if row:
        return row["session_id"]
    row = conn.execute("SELECT transcript_path FROM sessions WHERE session_id = ?", (transcript.session_id,)).fetchone()
    owner = row["transcript_path"] if row else None
    if owner is None and claimed:
        owner = claimed.get(transcript.session_id)
    if owner is None or owner == key or not Path(owner).exists():
        return transcript.session_id
    if owner in {_path_key(alias) for alias in transcript.aliases}:
        return transcript.session_id  # this file supersedes the one the session was read from
    suffix = hashlib.blake2b(key.encode(), digest_size=4).hexdigest()
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


@dataclass
class PreparedTurn:
    """A turn with everything derived from it for the store: text, tool summary, chunks, files."""

    turn: Turn
    full_text: str
    summary: str
    chunks: list[tuple[str, str | None]]  # (content, CJK-spaced text for FTS or None)
    files: list[tuple[str, str]]


def _worth_storing(prepared: PreparedTurn) -> bool:
    """False for a warm-up run and for a turn with nothing to show (usage-only assistant records)."""
    return not _is_warmup(prepared.turn) and bool(prepared.full_text or prepared.summary or prepared.files)


def prepare_turns(
    turns: list[Turn], project_dir: str | None, max_tokens: int, overlap_tokens: int
) -> list[PreparedTurn]:
    """Derive what the store keeps of each turn (paths are made relative to `project_dir`)."""
    prepared = []
    for turn in turns:
        summary = turn.tool_summary(project_dir)
        full_text = turn.full_text()
        pieces = chunk_text(full_text + ("\n\n" + summary if summary else ""), max_tokens, overlap_tokens)
        chunks = [(piece, fts_text(piece)) for piece in pieces]
        prepared.append(PreparedTurn(turn, full_text, summary, chunks, turn.files(project_dir)))
    return prepared


def _write_turns(conn: sqlite3.Connection, session_id: str, turns: list[PreparedTurn]) -> int:
    """Store the turns worth storing, with their chunks and file mentions; returns how many were stored."""
    written = 0
    for prepared in turns:
        turn = prepared.turn
        if not _worth_storing(prepared):
            continue
        written += 1
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
                prepared.full_text,
                prepared.summary,
                turn.started_at,
                turn.ended_at,
            ),
        ).lastrowid
        conn.executemany(
            "INSERT INTO chunks (turn_id, chunk_index, content, fts_text) VALUES (?, ?, ?, ?)",
            [(turn_id, index, piece, spaced) for index, (piece, spaced) in enumerate(prepared.chunks)],
        )
        conn.executemany(
            "INSERT INTO file_mentions (turn_id, session_id, file_path, tool_name) VALUES (?, ?, ?, ?)",
            [(turn_id, session_id, path, tool) for path, tool in prepared.files],
        )
    return written


# --- one transcript: plan (read the state), parse (read the file), write (one transaction) -----------


@dataclass
class Plan:
    """What the next ingest of one transcript must do, decided from its stored state and the file."""

    transcript: Transcript
    session_id: str
    agent_id: str
    status: str  # new, appended, rewritten, unchanged, missing
    state: StreamState = field(default_factory=StreamState)  # where reading starts
    size: int = 0
    mtime_ns: int = 0
    project_dir: str | None = None  # the session's project folder as stored

    def same_work(self, other: Plan) -> bool:
        """True when `other` (planned later) asks for exactly this work."""
        return (self.session_id, self.status, self.size, self.mtime_ns, self.state) == (
            other.session_id,
            other.status,
            other.size,
            other.mtime_ns,
            other.state,
        )


def plan_ingest(conn: sqlite3.Connection, transcript: Transcript, claimed: dict[str, str] | None = None) -> Plan:
    """Decide (reading only) whether a transcript is new, grew, was rewritten, is unchanged or vanished.

    Planning many files before writing any, pass the same `claimed` dict to each: it records the session
    ids the earlier ones will take.
    """
    agent_id = transcript.subagent_id or ""
    session_id = transcript.session_id if agent_id else _resolve_session_id(conn, transcript, claimed)
    if claimed is not None and not agent_id:
        claimed.setdefault(session_id, _path_key(transcript.path))
    plan = Plan(transcript, session_id, agent_id, "missing")
    try:
        stat = transcript.path.stat()
        plan.size, plan.mtime_ns = stat.st_size, stat.st_mtime_ns
        state = load_state(conn, session_id, agent_id)
        if state and state.file_size == stat.st_size and state.file_mtime_ns == stat.st_mtime_ns:
            plan.status = "unchanged"
            return plan
        with transcript.path.open("rb") as handle:
            if state is None:
                plan.status = "new"
            elif is_incremental(transcript.agent) and is_append_of(handle, stat.st_size, state):
                plan.status, plan.state = "appended", state
            else:
                plan.status = "rewritten"
    except FileNotFoundError:
        plan.status = "missing"
        return plan
    row = conn.execute("SELECT project_dir FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    plan.project_dir = row["project_dir"] if row else None
    return plan


@dataclass
class ParsedStream:
    """What reading a transcript from its resume point produced, ready to write."""

    start_line: int
    start_offset: int
    rows: list[tuple[object, ...]] = field(default_factory=list)  # entries, without their session id
    turns: list[PreparedTurn] = field(default_factory=list)
    facts: _SessionFacts = field(default_factory=lambda: _SessionFacts())
    project_dir: str | None = None  # the folder the turns were prepared for
    lines: int = 0
    bad_lines: int = 0
    warnings: list[str] = field(default_factory=list)
    end_offset: int = 0
    next_line: int = 0
    resume: tuple[int, int] | None = None  # (line index, byte offset) of the provisional turn
    compact_line: int | None = None
    checks: tuple[str, str] = ("", "")  # head and tail hashes of the consumed bytes


def parse_stream(plan: Plan, max_tokens: int, overlap_tokens: int) -> ParsedStream:
    """Read a planned transcript from its resume point into entries and prepared turns.

    Touches no database, so it runs as well in a worker process as in the writer.
    """
    transcript, agent_id, state = plan.transcript, plan.agent_id, plan.state
    source = adapter(transcript.agent)
    parsed = ParsedStream(state.resume_line_index, state.resume_offset)
    parsed.end_offset, parsed.next_line = state.resume_offset, state.resume_line_index
    builder = TurnBuilder(agent_id, is_sidechain=bool(agent_id))
    offsets: dict[int, int] = {}
    for line, entry in source.read_entries(transcript.path, state.resume_offset, state.resume_line_index):
        offsets[line.line_index] = line.start
        parsed.end_offset, parsed.next_line = line.end, line.line_index + 1
        parsed.lines += 1
        if isinstance(entry, BadLine):
            parsed.bad_lines += 1
            if len(parsed.warnings) < MAX_WARNINGS_PER_FILE:
                parsed.warnings.append(f"{transcript.path}:{entry.line_index + 1}: skipped ({entry.reason})")
            continue
        if line.repaired and len(parsed.warnings) < MAX_WARNINGS_PER_FILE:
            parsed.warnings.append(f"{transcript.path}:{line.line_index + 1}: invalid UTF-8 replaced")
        if entry is None:
            continue
        if agent_id:
            entry.agent_id = agent_id
        builder.add(entry)
        parsed.facts.add(entry)
        text = entry.text if entry.kind != "tool_result" else ""
        parsed.rows.append(
            (
                entry.line_index,
                entry.entry_type,
                entry.kind,
                entry.role,
                entry.timestamp,
                entry.uuid,
                entry.parent_uuid,
                entry.message_id,
                text or None,
                int(entry.is_sidechain or bool(agent_id)),
            )
        )
    resume = builder.resume_line_index
    parsed.resume = (resume, offsets[resume]) if resume is not None else None
    parsed.compact_line = builder.compact_lines[-1] if builder.compact_lines else None
    turns = builder.finish()
    for turn in turns:
        turn._seen_blocks.clear()  # only needed while building
    parsed.project_dir = plan.project_dir or parsed.facts.cwd
    parsed.turns = prepare_turns(turns, parsed.project_dir, max_tokens, overlap_tokens)
    try:
        with transcript.path.open("rb") as handle:
            parsed.checks = file_checks(handle, parsed.end_offset)
    except FileNotFoundError:
        pass
    return parsed


def write_stream(conn: sqlite3.Connection, config: Config, plan: Plan, parsed: ParsedStream) -> FileReport:
    """Store a parsed transcript (inside the caller's transaction) and rebuild its session's mirror."""
    session_id, agent_id, transcript = plan.session_id, plan.agent_id, plan.transcript
    report = FileReport(transcript.path, session_id, agent_id, plan.status)
    report.lines, report.bad_lines, report.warnings = parsed.lines, parsed.bad_lines, list(parsed.warnings)
    now = _now()
    _ensure_session(conn, session_id, transcript.agent, config, now)
    if plan.status == "rewritten":
        _reset_stream(conn, session_id, agent_id)
    # What follows the resume point is rebuilt: its entries, and the provisional turn (by cascade).
    for table in ("entries", "turns"):
        conn.execute(
            f"DELETE FROM {table} WHERE session_id = ? AND agent_id = ? AND line_index >= ?",
            (session_id, agent_id, parsed.start_line),
        )
    conn.executemany(
        "INSERT INTO entries (session_id, agent_id, line_index, entry_type, kind, role, timestamp, uuid, "
        "parent_uuid, message_id, text, is_sidechain) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(session_id, agent_id, *row) for row in parsed.rows],
    )
    facts = parsed.facts
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
    turns = parsed.turns
    if project_dir != parsed.project_dir:  # the folder became known since parsing: paths change
        turns = prepare_turns(
            [t.turn for t in turns], project_dir, config.chunk_max_tokens, config.chunk_overlap_tokens
        )
    report.turns = _write_turns(conn, session_id, turns)
    if agent_id:
        facts.title = None  # a subagent's prompt is not its session's title
    _write_session_facts(conn, session_id, facts, from_main_start=not agent_id and parsed.start_line == 0)
    report.bytes_read = parsed.end_offset - parsed.start_offset
    state = plan.state
    state.last_line_index, state.last_offset = parsed.next_line, parsed.end_offset
    state.resume_line_index, state.resume_offset = parsed.resume or (parsed.next_line, parsed.end_offset)
    state.provisional_turn_start = turns[-1].turn.line_index if turns else None
    if parsed.compact_line is not None:
        state.last_compact_line_index = parsed.compact_line
    state.bad_lines += parsed.bad_lines
    state.file_size, state.file_mtime_ns = plan.size, plan.mtime_ns
    state.head_hash, state.tail_hash = parsed.checks
    save_state(conn, session_id, agent_id, _path_key(transcript.path), state, now)
    if not agent_id:  # the mirror holds the main conversation only
        since = parsed.start_line if plan.status == "appended" else 0
        report.mirror_written = refresh_mirror(conn, session_id, since)
    return report


def idle_report(plan: Plan) -> FileReport:
    """The report of a transcript that needs no work (unchanged) or cannot get any (missing)."""
    report = FileReport(plan.transcript.path, plan.session_id, plan.agent_id, plan.status)
    if plan.status == "missing":
        report.warnings.append(f"{plan.transcript.path}: the file disappeared before it could be read")
    return report


def ingest_planned(conn: sqlite3.Connection, config: Config, plan: Plan, parsed: ParsedStream | None) -> FileReport:
    """Write `parsed` for `plan` in one transaction, after checking the plan still holds; a plan that no
    longer does (another writer got there first, the file changed) is redone from scratch, in-process."""
    with transaction(conn):
        current = plan_ingest(conn, plan.transcript)
        if current.status in ("unchanged", "missing"):
            return idle_report(current)
        if parsed is None or not current.same_work(plan):
            parsed = parse_stream(current, config.chunk_max_tokens, config.chunk_overlap_tokens)
        return write_stream(conn, config, current, parsed)


def ingest_transcript(conn: sqlite3.Connection, config: Config, transcript: Transcript) -> FileReport:
    """Bring the store up to date with one transcript (a session's main file or one subagent's file).

    Everything happens in one transaction: killed at any moment, the next run redoes the same work.
    """
    with transaction(conn):
        plan = plan_ingest(conn, transcript)
        if plan.status in ("unchanged", "missing"):
            return idle_report(plan)
        try:
            parsed = parse_stream(plan, config.chunk_max_tokens, config.chunk_overlap_tokens)
        except FileNotFoundError:
            plan.status = "missing"
            return idle_report(plan)
        return write_stream(conn, config, plan, parsed)
