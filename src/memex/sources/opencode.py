"""OpenCode 1.x: every session in one SQLite database, `~/.local/share/opencode/opencode.db` (`$XDG_DATA_HOME`).

Tables read (`opencode.db.schema.sql` of 1.18): `session` (id, parent_id, directory, title, version, agent,
time_created, time_updated in epoch ms), `message` (session_id, `data` JSON: role, agent, path.cwd…; each
step of the tool loop is a message of its own), `part` (message_id, `data` JSON of type `text`, `reasoning`,
`tool` {tool, callID, state{input, output, metadata}}, `step-start`, `step-finish`, `file`…). A subagent is a
child session (`parent_id`), started by the parent's `task` tool.

Each session is a synthetic transcript `<database>#<session id>` (`memex.sources.sqlite_read`): re-read whole
when its fingerprint (how many messages and parts it has, and when the latest changed) moves, so one busy
session never costs a re-read of the others. The database is read through SQLite, WAL included, read-only.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import orjson

from memex.sources import sqlite_read
from memex.sources.files import Skipped, candidates, reason_of, safe_resolve
from memex.sources.guard import checked
from memex.sources.injected import AgentReport
from memex.sources.jsonl import DEFAULT_MAX_LINE_BYTES, RawLine
from memex.sources.model import BadLine, Block, Entry, Transcript
from memex.sources.records import obj, output_text, text, tool_use
from memex.textutil import normalize_timestamp

AGENT = "opencode"
INCREMENTAL = False
DATABASE = "opencode.db"
WATCH_SUFFIXES = (".db", ".db-wal")
_TABLES = ("session", "message", "part")
_TASK_RESULT = re.compile(r"<task_result>\s*(.*?)\s*</task_result>", re.DOTALL)
# A title OpenCode gives a session before its title is generated.
_PLACEHOLDER_TITLES = ("New session - ", "Child session - ")


def _loads(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, (str, bytes)):
        return {}
    try:
        return obj(orjson.loads(raw))
    except orjson.JSONDecodeError:
        return {}


# --- discovery -------------------------------------------------------------------------------------


def is_database(path: Path) -> bool:
    """Whether `path` is an OpenCode database."""
    return sqlite_read.has_tables(path, *_TABLES) and sqlite_read.has_tables(path, "project")


def _sessions(database: Path) -> list[Transcript]:
    with sqlite_read.reading(database) as conn:
        rows = conn.execute("SELECT id, parent_id, title, agent FROM session ORDER BY time_created, id").fetchall()
    parents = {row[0]: row[1] for row in rows}

    def root(session_id: str) -> str:
        seen = set()
        while parents.get(session_id) and session_id not in seen:
            seen.add(session_id)
            session_id = parents[session_id]
        return session_id

    found = []
    for session_id, parent_id, title, agent in rows:
        path = sqlite_read.synthetic(database, session_id)
        if parent_id:
            found.append(Transcript(path, AGENT, root(session_id), session_id, (database,), text(agent), text(title)))
        else:
            found.append(Transcript(path, AGENT, session_id, aliases=(database,)))
    return found


def classify(path: Path) -> Transcript | None:
    """One session of an OpenCode database (`<database>#<session id>`); a database itself holds many
    (see `discover`)."""
    parts = sqlite_read.split(path)
    if parts is None or not is_database(parts[0]):
        return None
    return next((t for t in _sessions(parts[0]) if t.path == path), None)


def discover(roots: Iterable[Path], skipped: list[Skipped] | None = None) -> list[Transcript]:
    """Every session of every OpenCode database under `roots` (sessions before their subagents)."""
    found: list[Transcript] = []
    for path, _ in candidates(roots, "*.db", lambda p: p.name == DATABASE, skipped):
        if not is_database(path):
            continue
        try:
            found += _sessions(safe_resolve(path))
        except (OSError, sqlite3.Error) as exc:
            if skipped is not None:
                skipped.append(Skipped(path, reason_of(exc)))
    return sorted(found, key=lambda t: (t.subagent_id is not None, str(t.path)))


def subagent_transcripts(session_path: Path) -> list[Transcript]:
    """A session's child sessions (its `task` subagents)."""
    parts = sqlite_read.split(session_path)
    if parts is None:
        return []
    try:
        return [t for t in _sessions(parts[0]) if t.subagent_id and t.session_id == parts[1]]
    except (OSError, sqlite3.Error):
        return []


@lru_cache(maxsize=8)
def _fingerprints(database: Path, version: tuple[int, int]) -> dict[str, tuple[int, int]]:
    """Every session's (messages + parts, latest change in ns), in one read; cached while the database and
    its WAL are unchanged."""
    with sqlite_read.reading(database) as conn:
        rows = conn.execute(
            "SELECT s.id, "
            "(SELECT count(*) FROM message m WHERE m.session_id = s.id) + "
            "(SELECT count(*) FROM part p WHERE p.session_id = s.id), "
            "max(s.time_updated, coalesce((SELECT max(time_updated) FROM message m WHERE m.session_id = s.id), 0), "
            "coalesce((SELECT max(time_updated) FROM part p WHERE p.session_id = s.id), 0)) "
            "FROM session s"
        ).fetchall()
    return {row[0]: (int(row[1]), int(row[2]) * 1_000_000) for row in rows}


def fingerprint(path: Path) -> tuple[int, int] | None:
    """A session's version: how many messages and parts it has, and when the latest changed. None when the
    session (or its database) is gone."""
    parts = sqlite_read.split(path)
    if parts is None:
        return None
    database, session_id = parts
    try:
        return _fingerprints(database, sqlite_read.version_key(database)).get(session_id)
    except (OSError, sqlite3.Error):
        return None


def watched_file(path: Path) -> Path:
    """The database a changed file belongs to (its `-wal`)."""
    return path.with_name(path.name.removesuffix("-wal"))


# --- reading ---------------------------------------------------------------------------------------


def _tool_blocks(part: dict[str, Any]) -> list[Block]:
    state = obj(part.get("state"))
    name = text(part.get("tool"))
    if name is None:
        return []
    call = text(part.get("callID"))
    blocks = [Block("tool_use", tool=tool_use(name, obj(state.get("input")), call))]
    output = output_text(state.get("output") if "output" in state else state.get("error"))
    result = Block("tool_result", output, tool_use_id=call, is_error=state.get("status") == "error")
    blocks.append(result)
    if name == "task" and output.strip():  # the subagent's answer, as the parent received it
        description = text(obj(state.get("input")).get("description"))
        child = text(obj(state.get("metadata")).get("sessionId"))
        found = _TASK_RESULT.search(output)
        answer = (found.group(1) if found else output).strip()
        blocks.append(Block("text", AgentReport(child, description, answer).text()))
    return blocks


def _message_entry(index: int, record: tuple[Any, ...]) -> Entry | BadLine | None:
    message_id, created, raw, parts = record
    data = _loads(raw)
    role = data.get("role")
    if not isinstance(role, str):
        return BadLine(index, "message without a role")
    entry = Entry(index, role, "other", role=role, timestamp=normalize_timestamp(created), uuid=text(message_id))
    entry.cwd = text(obj(data.get("path")).get("cwd"))
    if role == "user":
        said = "\n\n".join(
            p["text"]
            for p in map(_loads, parts)
            if p.get("type") == "text" and text(p.get("text")) and not p.get("synthetic")
        )
        files = [p for p in map(_loads, parts) if p.get("type") == "file"]
        entry.blocks = [Block("text", said)]
        entry.kind = "prompt" if said.strip() or files else "user_meta"
        return entry
    entry.kind, entry.message_id = "assistant", text(data.get("parentID")) or entry.uuid
    for part in map(_loads, parts):
        kind = part.get("type")
        if kind == "text" and text(part.get("text")) and not part.get("synthetic"):
            entry.blocks.append(Block("text", part["text"]))
        elif kind == "reasoning" and text(part.get("text")):
            entry.blocks.append(Block("thinking", part["text"]))
        elif kind == "tool":
            entry.blocks += _tool_blocks(part)
    return entry


def read_entries(
    path: Path, start_offset: int = 0, start_line: int = 0, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """One session, whole: a header (folder, version, title), then one entry per message, in order."""
    parts = sqlite_read.split(path)
    if parts is None:
        raise FileNotFoundError(str(path))
    database, session_id = parts
    with sqlite_read.reading(database) as conn:
        session = conn.execute(
            "SELECT directory, title, version, time_created FROM session WHERE id = ?", (session_id,)
        ).fetchone()
        if session is None:
            raise FileNotFoundError(str(path))
        messages = conn.execute(
            "SELECT id, time_created, data FROM message WHERE session_id = ? ORDER BY time_created, id", (session_id,)
        ).fetchall()
        part_rows = conn.execute(
            "SELECT message_id, data FROM part WHERE session_id = ? ORDER BY time_created, id", (session_id,)
        ).fetchall()
    by_message: dict[str, list[Any]] = {}
    for message_id, data in part_rows:
        by_message.setdefault(message_id, []).append(data)
    directory, title, version, created = session
    header = Entry(0, "session", "other", session_id=session_id, cwd=text(directory), version=text(version))
    header.timestamp = normalize_timestamp(created)
    if text(title) and not title.startswith(_PLACEHOLDER_TITLES):
        header.kind, header.extra = "title", {"title": title, "source": "ai-title"}
    yield RawLine(0, 0, 0, None), header
    for index, (message_id, time_created, data) in enumerate(messages, 1):
        size = len(data) if isinstance(data, (str, bytes)) else 0
        if size > max_line_bytes:
            reason = f"a message of {size:,} bytes is over max_line_bytes ({max_line_bytes:,})"
            yield RawLine(index, 0, 0, None, reason), BadLine(index, reason)
            continue
        record = (message_id, time_created, data, by_message.get(message_id, []))
        yield RawLine(index, 0, 0, None), checked(index, partial(_message_entry, index, record))


def raw_records(path: Path) -> Iterator[bytes]:
    """A session as OpenCode stored it: its row, then each message with its parts, as JSON lines."""
    parts = sqlite_read.split(path)
    if parts is None:
        raise FileNotFoundError(str(path))
    database, session_id = parts
    with sqlite_read.reading(database) as conn:
        conn.row_factory = sqlite3.Row
        session = conn.execute("SELECT * FROM session WHERE id = ?", (session_id,)).fetchone()
        if session is None:
            raise FileNotFoundError(str(path))
        messages = conn.execute(
            "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id", (session_id,)
        ).fetchall()
        part_rows = conn.execute(
            "SELECT message_id, data FROM part WHERE session_id = ? ORDER BY time_created, id", (session_id,)
        ).fetchall()
    by_message: dict[str, list[Any]] = {}
    for row in part_rows:
        by_message.setdefault(row["message_id"], []).append(_loads(row["data"]))
    yield orjson.dumps({"session": dict(session)}) + b"\n"
    for row in messages:
        yield orjson.dumps({"message": _loads(row["data"]), "parts": by_message.get(row["id"], [])}) + b"\n"
