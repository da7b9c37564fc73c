"""Incremental ingest of one transcript stream into the store, in one transaction.

Each run reads only what follows the stream's resume point (the start of its provisional turn), deletes
what it is about to rebuild (by cascade), and records where it stopped. A file that shrank or whose
consumed bytes changed is re-ingested from the start, and so is any change to a transcript of an agent
that rewrites its files in place (`INCREMENTAL = False` in its source module).

Three steps: `plan_ingest` reads the stored state, `parse_stream` reads the file (no database: it can run
in a worker process), `write_stream` stores the result and rebuilds the session's mirror.

A large append-only transcript is read a segment at a time (`SEGMENT_BYTES`), each segment written in a
transaction of its own as if the file ended there, and the next read as its append: memory stays bounded
by the segment, not the file (a 300 MB transcript held 540 MB), and a run killed midway keeps the
segments it wrote.

A file that cannot be read or stored fails alone: `ingest_isolated` turns its error into a report with
status `failed` and the reason, and nothing of it is written. Only an error of the store itself (locked,
full, damaged), which every other file would meet too, goes up to the caller.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from memex.config import Config
from memex.digest import blake2b
from memex.errors import StoreError, interrupt_behind
from memex.ingest.chunks import chunk_text
from memex.ingest.moves import record_move, stored_path
from memex.ingest.order import ParentOrder
from memex.ingest.prs import pull_requests
from memex.ingest.report import IDLE, FileReport
from memex.ingest.state import StreamState, file_checks, is_append_of, is_copy_id, load_state, save_state
from memex.ingest.turns import Turn, TurnBuilder
from memex.mirrors.build import refresh_mirror
from memex.plain import Record
from memex.sources import adapter, fingerprint, is_incremental, is_synthetic, stream_entries
from memex.sources.files import open_regular, reason_of, safe_resolve
from memex.sources.model import BadLine, Entry, Transcript
from memex.store.db import transaction
from memex.textutil import fts_text, plain_title, shorten

# Title sources, weakest first: a later or stronger source replaces a weaker one. The agent's own title
# records beat the first prompt; a subagent's task names a session only known through its subagents (a
# parent not indexed yet, or an orphan subagent folder whose session file is gone).
TITLE_RANKS = {"subagent": 1, "prompt": 2, "ai-title": 3, "summary": 4, "custom-title": 5}
# Ranks where the first offer stands (the first prompt, the first subagent), not the latest.
_FIRST_ONLY_RANK = TITLE_RANKS["prompt"]
TITLE_MAX_CHARS = 100
# Warnings kept per file (the count of bad lines is always complete).
MAX_WARNINGS_PER_FILE = 5
# An append-only transcript is read at most this many bytes past where the last read stopped per
# transaction (a whole turn still comes whole: a segment ends at a line, and its provisional turn is read
# again with the next one).
SEGMENT_BYTES = 32 << 20


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _path_key(path: Path) -> str:
    return str(safe_resolve(path))


def _still_there(transcript_path: str) -> bool:
    """Whether a stored transcript is still on disk (a session of a database: that database)."""
    path = Path(transcript_path)
    if path.exists():  # a file (its name may hold a `#`)
        return True
    name, separator, _ = path.name.rpartition("#")
    return bool(separator and name) and path.with_name(name).exists()


def _resolve_session_id(
    conn: sqlite3.Connection, transcript: Transcript, key: str, claimed: dict[str, str] | None = None
) -> str:
    """The session id a main transcript is stored under.

    Two different files claiming one session id (copied fixtures, a file written by a resumed session)
    must not overwrite each other: the later one gets an id derived from its path. `claimed` holds the
    ids that files planned earlier in the same run will take (session id -> transcript path). `key` is the
    file's real path.
    """
    row = conn.execute("SELECT session_id FROM sessions WHERE transcript_path = ?", (key,)).fetchone()
    if row:
        return row["session_id"]
    row = conn.execute("SELECT transcript_path FROM sessions WHERE session_id = ?", (transcript.session_id,)).fetchone()
    owner = row["transcript_path"] if row else None
    if owner is None and claimed:
        owner = claimed.get(transcript.session_id)
    if owner is None or owner == key or not _still_there(owner):
        return transcript.session_id
    if owner in {_path_key(alias) for alias in transcript.aliases}:
        return transcript.session_id  # this file supersedes the one the session was read from
    suffix = blake2b(key.encode(), digest_size=4).hexdigest()
    return f"{transcript.session_id}-{suffix}"


def _shared_parts(one: str, other: str) -> int:
    """How many leading path components two paths share."""
    count = 0
    for a, b in zip(Path(one).parts, Path(other).parts, strict=False):
        if a != b:
            break
        count += 1
    return count


def _subagent_session_id(
    conn: sqlite3.Connection, transcript: Transcript, key: str, claimed: dict[str, str] | None
) -> str:
    """The session a subagent transcript is stored under: of the sessions that claim its session id (the
    session itself, and copies of it found in other folders, whose ids `_resolve_session_id` derived from
    their path), the one whose main transcript lies nearest to it. Taken by the id it names, a copy's
    subagent replaced the original's subagent stream, and the two took turns at every `memex index`."""
    rows = conn.execute(
        "SELECT session_id, transcript_path FROM sessions WHERE agent = ? AND session_id >= ? AND session_id < ?",
        (transcript.agent, transcript.session_id, transcript.session_id + "."),  # the id and `<id>-…`
    ).fetchall()
    mains = {r["session_id"]: r["transcript_path"] for r in rows if r["transcript_path"]}
    mains.update({sid: path for sid, path in (claimed or {}).items() if sid not in mains})
    near = [(sid, path) for sid, path in mains.items() if is_copy_id(sid, transcript.session_id)]
    if len(near) < 2:
        return transcript.session_id
    return max(near, key=lambda item: (_shared_parts(item[1], key), item[0] == transcript.session_id))[0]


def _ensure_session(conn: sqlite3.Connection, session_id: str, agent: str, config: Config, now: str) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO sessions (session_id, agent, computer, updated_at) VALUES (?, ?, ?, ?)",
        (session_id, agent, config.computer, now),
    )


# Tables holding rows of one stream (session_id, agent_id, line_index): a re-read rebuilds them from its start.
_STREAM_TABLES = ("entries", "turns", "pr_links", "unknown_records")


def _reset_stream(conn: sqlite3.Connection, session_id: str, agent_id: str) -> None:
    for table in _STREAM_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE session_id = ? AND agent_id = ?", (session_id, agent_id))
    if not agent_id:
        conn.execute("UPDATE sessions SET title = NULL, title_rank = 0 WHERE session_id = ?", (session_id,))


def _forget_superseded_session(conn: sqlite3.Connection, path: str, session_id: str, computer: str) -> None:
    """Remove a session stored from the file that is now read as a subagent of `session_id` (a Codex
    spawned agent's rollout, which memex indexed as a session of its own before Codex 0.169's format)."""
    for (stale,) in conn.execute(
        "SELECT session_id FROM sessions WHERE transcript_path = ? AND session_id != ?", (path, session_id)
    ).fetchall():
        conn.execute("DELETE FROM sessions WHERE session_id = ?", (stale,))
        conn.execute("DELETE FROM mirror_records WHERE session_id = ? AND computer = ?", (stale, computer))


class _SessionFacts:
    """Session-level facts gathered while reading entries: project, times, title, PRs, version, drift."""

    def __init__(self) -> None:
        self.cwd: str | None = None
        self.first_timestamp: str | None = None
        self.last_timestamp: str | None = None
        self.title: tuple[int, str] | None = None
        # (line, number, url, repository, source): the agent's records ('record') and URLs in text ('text').
        self.pr_links: list[tuple[int, int, str | None, str | None, str]] = []
        self.project_hash: str | None = None  # Gemini names its project only by a hash of its path
        self.version: str | None = None  # the agent's version on the latest record that says
        self.unknown: list[tuple[int, str, str | None]] = []  # (line, record type, version)

    def add(self, entry: Entry) -> None:
        if entry.cwd and self.cwd is None:
            self.cwd = entry.cwd
        if entry.extra.get("project_hash") and self.project_hash is None:
            self.project_hash = entry.extra["project_hash"]
        if entry.timestamp:  # records are not always written in time order (snapshots come late)
            self.first_timestamp = min(self.first_timestamp or entry.timestamp, entry.timestamp)
            self.last_timestamp = max(self.last_timestamp or entry.timestamp, entry.timestamp)
        if entry.version:
            self.version = entry.version
        if entry.unknown:
            self.unknown.append((entry.line_index, entry.entry_type, entry.version or self.version))
        if entry.kind in ("title", "summary") and entry.extra.get("title"):
            rank = TITLE_RANKS.get(entry.extra.get("source", "summary"), TITLE_RANKS["summary"])
            self._offer_title(rank, entry.extra["title"])
        elif entry.kind == "prompt" and entry.text:
            self._offer_title(TITLE_RANKS["prompt"], entry.text, first_only=True)
        elif entry.kind == "pr_link":
            link = entry.extra
            self.pr_links.append((entry.line_index, link["pr_number"], link["pr_url"], link["repository"], "record"))
        for block in entry.blocks:
            if block.kind == "tool_result" or (block.kind == "text" and entry.kind == "assistant"):
                for pr in pull_requests(block.text):
                    self.pr_links.append((entry.line_index, pr.number, pr.url, pr.repository, "text"))

    def _offer_title(self, rank: int, text: str, first_only: bool = False) -> None:
        """Keep `text` as the title (plain text: a prompt's Markdown dropped) if it outranks the one kept."""
        if self.title is None or rank > self.title[0] or (rank == self.title[0] and not first_only):
            title = _title(text)
            if title:
                self.title = (rank, title)


def _title(text: str) -> str:
    """A session's title from a prompt or a title record: plain text (its Markdown dropped), on one line, cut.
    Only the head of a long prompt is read: the title shows a hundred-odd characters of it."""
    return shorten(plain_title(text[: TITLE_MAX_CHARS * 20]), TITLE_MAX_CHARS)


def _link_key(url: str | None, repository: str | None, number: int) -> str:
    """What makes two links one: the URL (as written by the agent, or canonical), else repository#number."""
    return url.rstrip("/") if url else f"{repository or ''}#{number}"


# The earlier and the later of two timestamps, either of which may be NULL.
_EARLIER = "min(coalesce({0}, {1}), coalesce({1}, {0}))"
_LATER = "max(coalesce({0}, {1}), coalesce({1}, {0}))"


def _write_session_times(
    conn: sqlite3.Connection, session_id: str, agent_id: str, facts: _SessionFacts, appended_from: int | None
) -> None:
    """Record when the session started and ended: the earliest timestamp of its main transcript's stored
    entries (of any stream's while the main transcript has none) and the latest of any stream's. Records
    are not written in time order, and the result must not depend on how the files were read (at once, or
    a few lines at a time, in whatever order).

    A stream read whole is recomputed from the stored entries; a stream appended to from line
    `appended_from` (the lines before it unchanged, the ones after it all in `facts`) is folded in, so a
    long session's ingest does not read all its entries again.
    """
    if appended_from is None:
        conn.execute(
            "UPDATE sessions SET (started_at, ended_at) = (SELECT coalesce(min(CASE WHEN agent_id = '' "
            "THEN timestamp END), min(timestamp)), max(timestamp) FROM entries WHERE session_id = ?) "
            "WHERE session_id = ?",
            (session_id, session_id),
        )
        return
    # Whether the start is the main transcript's already (a timestamp of it outside what was just read).
    main_dated = conn.execute(
        "SELECT 1 FROM entries WHERE session_id = ? AND agent_id = '' AND timestamp IS NOT NULL "
        "AND (? != '' OR line_index < ?) LIMIT 1",
        (session_id, agent_id, appended_from),
    ).fetchone()
    if agent_id:  # a subagent moves the start only while the main transcript has no time
        started = "started_at" if main_dated else _EARLIER.format("started_at", ":first")
    else:  # the main transcript's earlier lines count, the subagents' no more once it has a time
        started = _EARLIER.format("started_at", ":first") if main_dated else "coalesce(:first, started_at)"
    conn.execute(
        f"UPDATE sessions SET started_at = {started}, ended_at = {_LATER.format('ended_at', ':last')} "
        "WHERE session_id = :session",
        {"first": facts.first_timestamp, "last": facts.last_timestamp, "session": session_id},
    )


def _write_session_facts(conn: sqlite3.Connection, session_id: str, agent_id: str, facts: _SessionFacts) -> None:
    """Record what the entries said about their session (its times: `_write_session_times`). The agent's
    version is the main transcript's (a subagent only fills it in when the main transcript is not known yet)."""
    version = "agent_version = coalesce(agent_version, ?)" if agent_id else "agent_version = coalesce(?, agent_version)"
    conn.execute(
        f"UPDATE sessions SET project_dir = coalesce(project_dir, ?), {version} WHERE session_id = ?",
        (facts.cwd, facts.version, session_id),
    )
    if facts.title:
        rank, title = facts.title
        conn.execute(
            "UPDATE sessions SET title = ?, title_rank = ? WHERE session_id = ? AND "
            f"(title_rank < ? OR (title_rank = ? AND ? > {_FIRST_ONLY_RANK}))",
            (title, rank, session_id, rank, rank, rank),
        )
    # One row per link and stream: the agent's own record wins over a URL seen in text.
    conn.executemany(
        "INSERT INTO pr_links (session_id, agent_id, link_key, pr_number, pr_url, repository, source, line_index) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, agent_id, link_key) DO UPDATE SET "
        "pr_url = coalesce(excluded.pr_url, pr_url), repository = coalesce(excluded.repository, repository), "
        "source = CASE WHEN excluded.source = 'record' THEN 'record' ELSE source END, "
        "line_index = min(line_index, excluded.line_index)",
        [
            (session_id, agent_id, _link_key(url, repository, number), number, url, repository, source, line)
            for line, number, url, repository, source in facts.pr_links
        ],
    )
    stored = conn.execute("SELECT agent_version FROM sessions WHERE session_id = ?", (session_id,)).fetchone()[0]
    conn.executemany(
        "INSERT OR REPLACE INTO unknown_records (session_id, agent_id, line_index, record_type, agent_version) "
        "VALUES (?, ?, ?, ?, ?)",
        [(session_id, agent_id, line, kind, version or stored) for line, kind, version in facts.unknown],
    )


def project_from_hash(conn: sqlite3.Connection, digest: str) -> str | None:
    """A known project folder (of any indexed session) whose SHA-256 is `digest` (Gemini's projectHash)."""
    import hashlib  # only for a Gemini chat without its folder: OpenSSL's bindings cost any ingest ~2 ms

    for (project_dir,) in conn.execute("SELECT DISTINCT project_dir FROM sessions WHERE project_dir IS NOT NULL"):
        for candidate in (project_dir, project_dir.lower()):
            if hashlib.sha256(candidate.encode("utf-8")).hexdigest() == digest.lower():
                return project_dir
    return None


def _is_warmup(turn: Turn) -> bool:
    """Claude Code 2.0 primed subagents with a "Warmup" prompt: no conversation worth recalling."""
    return turn.is_sidechain and turn.prompt_text.strip() == "Warmup"


class PreparedTurn(Record):
    """A turn with everything derived from it for the store: text, tool summary, chunks, files."""

    __slots__ = ("chunks", "files", "full_text", "summary", "turn")

    turn: Turn
    full_text: str
    summary: str
    chunks: list[tuple[str, str | None]]  # (content, CJK-spaced text for FTS or None)
    files: list[tuple[str, str]]

    def __init__(
        self,
        turn: Turn,
        full_text: str,
        summary: str,
        chunks: list[tuple[str, str | None]],
        files: list[tuple[str, str]],
    ) -> None:
        self.turn = turn
        self.full_text = full_text
        self.summary = summary
        self.chunks = chunks
        self.files = files


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
        assert turn_id is not None
        write_tool_outputs(conn, turn_id, turn)
    return written


def write_tool_outputs(conn: sqlite3.Connection, turn_id: int, turn: Turn) -> None:
    """Store the tool outputs of a stored turn (they are searched on request only, never embedded)."""
    conn.executemany(
        "INSERT INTO tool_outputs (turn_id, line_index, tool_name, is_error, chars, text, fts_text) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (turn_id, out.line_index, out.tool_name, int(out.is_error), out.chars, out.text, fts_text(out.text))
            for out in turn.tool_outputs
        ],
    )


# --- one transcript: plan (read the state), parse (read the file), write (one transaction) -----------


class Plan(Record):
    """What the next ingest of one transcript must do, decided from its stored state and the file."""

    __slots__ = (
        "agent_id",
        "error",
        "moved",
        "mtime_ns",
        "project_dir",
        "session_id",
        "size",
        "state",
        "status",
        "transcript",
    )

    transcript: Transcript
    session_id: str
    agent_id: str
    status: str  # new, appended, rewritten, unchanged, missing
    state: StreamState  # where reading starts
    size: int
    mtime_ns: int
    project_dir: str | None  # the session's project folder as stored
    error: str | None  # why a failed file cannot be read
    moved: tuple[str, str] | None  # unchanged, found at a new path: (stored path, gone; it), `memex.ingest.moves`

    def __init__(
        self,
        transcript: Transcript,
        session_id: str,
        agent_id: str,
        status: str,
        state: StreamState | None = None,
        size: int = 0,
        mtime_ns: int = 0,
        project_dir: str | None = None,
        error: str | None = None,
        moved: tuple[str, str] | None = None,
    ) -> None:
        self.transcript = transcript
        self.session_id = session_id
        self.agent_id = agent_id
        self.status = status
        self.state = StreamState() if state is None else state
        self.size = size
        self.mtime_ns = mtime_ns
        self.project_dir = project_dir
        self.error = error
        self.moved = moved

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
    key = _path_key(transcript.path)
    if agent_id:
        session_id = _subagent_session_id(conn, transcript, key, claimed)
    else:
        session_id = _resolve_session_id(conn, transcript, key, claimed)
    if claimed is not None and not agent_id:
        claimed.setdefault(session_id, key)
    plan = Plan(transcript, session_id, agent_id, "missing")
    if conn.execute("SELECT 1 FROM forgotten WHERE session_id = ? LIMIT 1", (session_id,)).fetchone():
        plan.status = "forgotten"  # the user asked memex to forget it: never read again
        return plan
    try:
        plan.size, plan.mtime_ns = fingerprint(transcript)
        state = load_state(conn, session_id, agent_id)
        if state and state.file_size == plan.size and state.file_mtime_ns == plan.mtime_ns:
            plan.status = "unchanged"
            old = stored_path(conn, session_id, agent_id)
            if transcript.walked and old is not None and old != key and not _still_there(old):
                plan.moved = (old, key)
            return plan
        if is_synthetic(transcript):  # a session in a database, a run of a history: read whole
            plan.status = "new" if state is None else "rewritten"
        else:
            with open_regular(transcript.read_path) as handle:
                if state is None:
                    plan.status = "new"
                elif is_incremental(transcript.agent, transcript.path) and is_append_of(handle, plan.size, state):
                    plan.status, plan.state = "appended", state
                else:
                    plan.status = "rewritten"
    except FileNotFoundError:
        plan.status = "missing"
        return plan
    except OSError as exc:  # not readable, no longer a regular file, a link loop
        plan.status, plan.error = "failed", reason_of(exc)
        return plan
    row = conn.execute("SELECT project_dir FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    plan.project_dir = row["project_dir"] if row else None
    return plan


class ParsedStream(Record):
    """What reading a transcript from its resume point produced, ready to write."""

    __slots__ = (
        "bad_lines",
        "checks",
        "compact_line",
        "end_offset",
        "facts",
        "lines",
        "next_line",
        "partial",
        "project_dir",
        "resume",
        "rows",
        "start_line",
        "start_offset",
        "turns",
        "warnings",
    )

    start_line: int
    start_offset: int
    rows: list[tuple[object, ...]]  # entries, without their session id
    turns: list[PreparedTurn]
    facts: _SessionFacts
    project_dir: str | None  # the folder the turns were prepared for
    lines: int
    bad_lines: int
    warnings: list[str]
    end_offset: int
    next_line: int
    resume: tuple[int, int] | None  # (line index, byte offset) of the provisional turn
    compact_line: int | None
    checks: tuple[str, str]  # head and tail hashes of the consumed bytes
    partial: bool  # stopped at `max_bytes`: the rest of the file is still to read

    def __init__(
        self,
        start_line: int,
        start_offset: int,
        rows: list[tuple[object, ...]] | None = None,
        turns: list[PreparedTurn] | None = None,
        facts: _SessionFacts | None = None,
        project_dir: str | None = None,
        lines: int = 0,
        bad_lines: int = 0,
        warnings: list[str] | None = None,
        end_offset: int = 0,
        next_line: int = 0,
        resume: tuple[int, int] | None = None,
        compact_line: int | None = None,
        checks: tuple[str, str] = ("", ""),
        partial: bool = False,
    ) -> None:
        self.start_line = start_line
        self.start_offset = start_offset
        self.rows = [] if rows is None else rows
        self.turns = [] if turns is None else turns
        self.facts = _SessionFacts() if facts is None else facts
        self.project_dir = project_dir
        self.lines = lines
        self.bad_lines = bad_lines
        self.warnings = [] if warnings is None else warnings
        self.end_offset = end_offset
        self.next_line = next_line
        self.resume = resume
        self.compact_line = compact_line
        self.checks = checks
        self.partial = partial


def parse_stream(
    plan: Plan,
    max_tokens: int,
    overlap_tokens: int,
    max_line_bytes: int = Config.max_line_bytes,
    tool_output_chars: int = Config.tool_output_max_chars,
    max_bytes: int | None = None,
) -> ParsedStream:
    """Read a planned transcript from its resume point into entries and prepared turns; an append-only one,
    with `max_bytes`, only up to the first line ending that many bytes past where the last read stopped
    (`partial` then tells that more is left).

    Touches no database, so it runs as well in a worker process as in the writer. Bad lines the last
    run read already (between the resume point and where it stopped) are not counted again.
    """
    transcript, agent_id, state = plan.transcript, plan.agent_id, plan.state
    read_before = state.last_line_index  # lines below this were read, and their bad ones counted, before
    parsed = ParsedStream(state.resume_line_index, state.resume_offset)
    parsed.end_offset, parsed.next_line = state.resume_offset, state.resume_line_index
    builder = TurnBuilder(agent_id, is_sidechain=bool(agent_id), tool_output_chars=tool_output_chars)
    in_order = ParentOrder()
    offsets: dict[int, int] = {}
    lines = stream_entries(transcript, state.resume_offset, state.resume_line_index, max_line_bytes)
    stop_at = None
    if max_bytes is not None and not is_synthetic(transcript) and is_incremental(transcript.agent, transcript.path):
        stop_at = max(state.last_offset, state.resume_offset) + max_bytes
    for line, entry in lines:
        if stop_at is not None and line.start >= stop_at:  # this line is the next segment's
            parsed.partial = True  # (the reader's file is closed with the generator, when this returns)
            break
        offsets[line.line_index] = line.start
        parsed.end_offset, parsed.next_line = line.end, line.line_index + 1
        parsed.lines += 1
        new = line.line_index >= read_before
        if isinstance(entry, BadLine):
            parsed.bad_lines += new
            if new and len(parsed.warnings) < MAX_WARNINGS_PER_FILE:
                parsed.warnings.append(f"{transcript.path}:{entry.line_index + 1}: skipped ({entry.reason})")
            continue
        if line.repaired and new and len(parsed.warnings) < MAX_WARNINGS_PER_FILE:
            parsed.warnings.append(f"{transcript.path}:{line.line_index + 1}: invalid UTF-8 replaced")
        if entry is None:
            continue
        if agent_id:
            entry.agent_id = agent_id
        for taken in in_order.add(entry):
            builder.add(taken)
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
                fts_text(text) if text else None,
            )
        )
    waiting = in_order.held[0].line_index if in_order.held else None  # an answer whose prompt is not written yet
    for taken in in_order.flush():
        builder.add(taken)
    resume = builder.resume_line_index
    if waiting is not None:  # the next read starts again at the turn that took that answer, to give it its prompt
        start = builder.turn_start(waiting)
        resume = start if resume is None else min(resume, start)
    parsed.resume = (resume, offsets[resume]) if resume is not None else None
    parsed.compact_line = builder.compact_lines[-1] if builder.compact_lines else None
    turns = builder.finish()
    for turn in turns:
        turn._seen_blocks.clear()  # only needed while building
    parsed.project_dir = plan.project_dir or parsed.facts.cwd
    parsed.turns = prepare_turns(turns, parsed.project_dir, max_tokens, overlap_tokens)
    if not is_synthetic(transcript):
        try:
            with open_regular(transcript.read_path) as handle:
                parsed.checks = file_checks(handle, parsed.end_offset)
        except FileNotFoundError:
            pass
    return parsed


def parse_with(config: Config, plan: Plan, max_bytes: int | None = None) -> ParsedStream:
    """`parse_stream` with the settings of `config` (`max_bytes`: a segment only)."""
    return parse_stream(
        plan,
        config.chunk_max_tokens,
        config.chunk_overlap_tokens,
        config.max_line_bytes,
        config.tool_output_max_chars,
        max_bytes,
    )


def write_stream(conn: sqlite3.Connection, config: Config, plan: Plan, parsed: ParsedStream) -> FileReport:
    """Store a parsed transcript (inside the caller's transaction) and rebuild its session's mirror."""
    session_id, agent_id, transcript = plan.session_id, plan.agent_id, plan.transcript
    report = FileReport(transcript.path, session_id, agent_id, plan.status, size=plan.size)
    report.lines, report.bad_lines, report.warnings = parsed.lines, parsed.bad_lines, list(parsed.warnings)
    now = _now()
    _ensure_session(conn, session_id, transcript.agent, config, now)
    if plan.status == "rewritten":
        _reset_stream(conn, session_id, agent_id)
    if plan.status != "appended":  # read whole: every turn gets its tool outputs now
        conn.execute("DELETE FROM tool_output_backfill WHERE session_id = ? AND agent_id = ?", (session_id, agent_id))
    # What follows the resume point is rebuilt: its entries, the provisional turn (its chunks by cascade), and
    # the links and unknown records read from those lines.
    for table in _STREAM_TABLES:
        conn.execute(
            f"DELETE FROM {table} WHERE session_id = ? AND agent_id = ? AND line_index >= ?",
            (session_id, agent_id, parsed.start_line),
        )
    conn.executemany(
        "INSERT INTO entries (session_id, agent_id, line_index, entry_type, kind, role, timestamp, uuid, "
        "parent_uuid, message_id, text, is_sidechain, fts_text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
    if agent_id:  # a subagent's task only names a session known through nothing else
        task = transcript.description or (facts.title[1] if facts.title else None)
        title = _title(task) if task else ""
        facts.title = (TITLE_RANKS["subagent"], title) if title else None
        _forget_superseded_session(conn, _path_key(transcript.path), session_id, config.computer)
    _write_session_facts(conn, session_id, agent_id, facts)
    _write_session_times(conn, session_id, agent_id, facts, parsed.start_line if plan.status == "appended" else None)
    report.bytes_read = parsed.end_offset - parsed.start_offset
    state = plan.state
    state.last_line_index, state.last_offset = parsed.next_line, parsed.end_offset
    state.resume_line_index, state.resume_offset = parsed.resume or (parsed.next_line, parsed.end_offset)
    state.provisional_turn_start = turns[-1].turn.line_index if turns else None
    if parsed.compact_line is not None:
        state.last_compact_line_index = parsed.compact_line
    state.bad_lines += parsed.bad_lines
    # A segment is stored as a file that ended where it stopped: the next plan finds the rest appended.
    state.file_size, state.file_mtime_ns = (parsed.end_offset if parsed.partial else plan.size), plan.mtime_ns
    state.head_hash, state.tail_hash = parsed.checks
    save_state(conn, session_id, agent_id, _path_key(transcript.path), state, now)
    if agent_id and (transcript.agent_type or transcript.description):
        conn.execute(
            "UPDATE subagent_sessions SET agent_type = ?, description = ? WHERE session_id = ? AND agent_id = ?",
            (transcript.agent_type, transcript.description, session_id, agent_id),
        )
    if not agent_id:  # the mirror holds the main conversation only
        since = parsed.start_line if plan.status == "appended" else 0
        report.mirror_written = refresh_mirror(conn, session_id, since)
        _name_late_subagents(conn, transcript.agent, session_id)
    return report


def _name_late_subagents(conn: sqlite3.Connection, agent: str, session_id: str) -> None:
    """Name the session's subagents that were read before their parent named them: an agent whose subagent's
    own file holds no name (Gemini: the parent's `invoke_agent` call names it, once the subagent is done)
    says it through its adapter's optional `invoked_name(path, agent_id)`, asked again when the parent is read."""
    namer = getattr(adapter(agent), "invoked_name", None)
    if namer is None:
        return
    unnamed = conn.execute(
        "SELECT agent_id, transcript_path FROM subagent_sessions "
        "WHERE session_id = ? AND agent_type IS NULL AND transcript_path IS NOT NULL",
        (session_id,),
    ).fetchall()
    for agent_id, path in unnamed:
        name = namer(Path(path), agent_id)
        if name:
            conn.execute(
                "UPDATE subagent_sessions SET agent_type = ? WHERE session_id = ? AND agent_id = ?",
                (name, session_id, agent_id),
            )


def record_moved(conn: sqlite3.Connection, plan: Plan) -> None:
    """Within the caller's transaction: the new path of an unchanged transcript that moved (`plan.moved`), so
    the next run finds it unchanged by path, at the cost of a `stat`."""
    if plan.moved is not None:
        record_move(conn, plan.session_id, plan.agent_id, *plan.moved, plan.size, plan.mtime_ns)


def idle_report(plan: Plan) -> FileReport:
    """The report of a transcript that needs no work (unchanged) or cannot get any (missing, failed)."""
    report = FileReport(plan.transcript.path, plan.session_id, plan.agent_id, plan.status, plan.error, size=plan.size)
    if plan.status == "missing":
        report.warnings.append(f"{plan.transcript.path}: the file disappeared before it could be read")
    return report


def is_store_failure(exc: BaseException) -> bool:
    """True for an error of the store itself (locked, full, read-only, damaged): every file would meet it."""
    return isinstance(exc, (sqlite3.OperationalError, StoreError)) or type(exc) is sqlite3.DatabaseError


def failed_report(transcript: Transcript, exc: BaseException) -> FileReport:
    """The report of a transcript whose ingest raised `exc` (nothing of it was written). A Ctrl-C that the
    code it landed in re-raised as another error is no fault of the file: the interrupt is raised instead."""
    interrupt = interrupt_behind(exc)
    if interrupt is not None:
        raise interrupt from None
    return FileReport(transcript.path, transcript.session_id, transcript.subagent_id or "", "failed", reason_of(exc))


def ingest_isolated(conn: sqlite3.Connection, config: Config, transcript: Transcript) -> FileReport:
    """`ingest_transcript`, with a failure of this one file reported (status `failed`) instead of raised.
    An error of the store itself is raised: it is no file's fault, and the next file would meet it too."""
    try:
        return ingest_transcript(conn, config, transcript)
    except Exception as exc:
        if is_store_failure(exc):
            raise
        return failed_report(transcript, exc)


def ingest_planned(conn: sqlite3.Connection, config: Config, plan: Plan, parsed: ParsedStream | None) -> FileReport:
    """Write `parsed` for `plan` in one transaction, after checking the plan still holds; a plan that no
    longer does (another writer got there first, the file changed) is redone from scratch, in-process."""
    with transaction(conn):
        current = plan_ingest(conn, plan.transcript)
        if current.status in IDLE:
            record_moved(conn, current)
            report = idle_report(current)
        else:
            if parsed is None or not current.same_work(plan):
                parsed = parse_with(config, current, SEGMENT_BYTES)
            report = write_stream(conn, config, current, parsed)
    if parsed is not None and parsed.partial:  # the rest, a segment at a time, here
        return _joined(report, ingest_transcript(conn, config, plan.transcript))
    return archived(conn, config, plan.transcript, report)


def ingest_transcript(conn: sqlite3.Connection, config: Config, transcript: Transcript) -> FileReport:
    """Bring the store up to date with one transcript (a session's main file or one subagent's file).

    Everything happens in one transaction (per segment of a large file): killed at any moment, the next run
    redoes the same work.
    """
    report: FileReport | None = None
    while True:
        with transaction(conn):
            plan = plan_ingest(conn, transcript)
            if plan.status in IDLE:
                record_moved(conn, plan)
                segment = idle_report(plan)
            else:
                try:
                    parsed = parse_with(config, plan, SEGMENT_BYTES)
                except FileNotFoundError:
                    plan.status = "missing"
                    return idle_report(plan) if report is None else report
                segment = write_stream(conn, config, plan, parsed)
        report = segment if report is None else _joined(report, segment)
        if plan.status in IDLE or not parsed.partial:
            break
    return archived(conn, config, transcript, report)


def _joined(first: FileReport, rest: FileReport) -> FileReport:
    """The report of a file read in segments: `first`'s status, and what every segment read and wrote."""
    if rest.status in ("unchanged", "missing"):
        return first
    if rest.status == "failed":
        return rest
    first.lines += rest.lines
    first.bad_lines += rest.bad_lines
    first.turns += rest.turns
    first.bytes_read += rest.bytes_read
    first.mirror_written = first.mirror_written or rest.mirror_written
    first.warnings.extend(rest.warnings[: max(0, MAX_WARNINGS_PER_FILE - len(first.warnings))])
    first.size = rest.size or first.size
    return first


def archived(conn: sqlite3.Connection, config: Config, transcript: Transcript, report: FileReport) -> FileReport:
    """`report`, once the archive's copy of the transcript is up to date (`memex.archive`); a copy that
    cannot be written is a warning, never a failed ingest."""
    if (
        not config.archive_enabled
        or transcript.source is not None
        or report.status in ("missing", "failed", "forgotten")
    ):
        return report
    from memex.archive.copies import Stream, keep_copy  # zstandard only when there is something to copy
    from memex.archive.frames import ArchiveCorrupt

    stream = Stream(transcript.agent, report.session_id, report.agent_id, transcript.path, transcript.session_id)
    try:
        keep_copy(conn, config, stream)
    except (OSError, sqlite3.Error, ArchiveCorrupt) as exc:  # sqlite3: an agent's database that cannot be read
        report.warnings.append(f"{transcript.path}: not archived ({reason_of(exc)})")
    return report
