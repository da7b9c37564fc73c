"""GitHub Copilot CLI sessions: `~/.copilot/session-state/<session id>/events.jsonl` (COPILOT_HOME moves it).

Each line is one event `{type, data, id, timestamp, parentId}`: `session.start` (sessionId, copilotVersion,
context.cwd), `user.message` (`content` as typed; `transformedContent` adds the date), `assistant.message`
(`content`, `toolRequests[{toolCallId, name, arguments}]`), `tool.execution_complete` (`result.content`),
`session.resume` (a resume appends to the same file), `session.shutdown`, and bookkeeping events.

Subagents write into their parent's file (`INLINE_SUBAGENTS`): their events carry a top-level `agentId`,
announced by `subagent.started` (agentName, agentDescription). The subagent's own `user.message` is the task
its parent gave it: a prompt of the subagent's stream, never of the session.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from memex.sources.files import Skipped, candidates, open_regular, safe_resolve
from memex.sources.injected import AgentReport
from memex.sources.jsonl import DEFAULT_MAX_LINE_BYTES, RawLine
from memex.sources.model import BadLine, Block, Entry, Transcript
from memex.sources.records import first_record, items, jsonl_entries, obj, output_text, text, tool_block
from memex.textutil import normalize_timestamp

AGENT = "copilot"
INCREMENTAL = True
INLINE_SUBAGENTS = True
FILE_NAME = "events.jsonl"
_TASK_TOOL = "task"
# Events that repeat what another event holds, or carry nothing to recall.
_NOISE = frozenset(
    {
        "assistant.turn_start",
        "assistant.turn_end",
        "session.usage_record",
        "tool.execution_start",
        "session.model_change",
        "subagent.configured",
        "system.message",
        "assistant.message_delta",
        "assistant.reasoning_delta",
    }
)
# Events kept as entries without conversation.
_KNOWN = frozenset(
    {
        "session.start",
        "session.resume",
        "session.shutdown",
        "session.info",
        "session.error",
        "session.truncation",
        "session.compaction_start",
        "session.compaction_complete",
        "user.message",
        "assistant.message",
        "assistant.reasoning",
        "tool.execution_complete",
        "subagent.started",
        "subagent.completed",
        "subagent.failed",
    }
)
# `subagent.started` lines, found without parsing every event of a long session.
_SUBAGENT_LINE = re.compile(rb'^[^\n]*"type"\s*:\s*"subagent\.started"[^\n]*$', re.MULTILINE)


# --- discovery -------------------------------------------------------------------------------------


def _is_session_start(record: dict[str, Any] | None) -> bool:
    return record is not None and record.get("type") == "session.start" and isinstance(record.get("data"), dict)


def classify(path: Path) -> Transcript | None:
    """A Copilot session: `events.jsonl` whose first event is `session.start` (its id names the session)."""
    if path.suffix != ".jsonl":
        return None
    first = first_record(path)
    if not _is_session_start(first):
        return None
    assert first is not None
    return Transcript(path, AGENT, text(first["data"].get("sessionId")) or path.parent.name)


def subagent_transcripts(session_path: Path) -> list[Transcript]:
    """The subagents that ran inside a session: one stream per `agentId` of its `subagent.started` events."""
    main = classify(session_path)
    if main is None:
        return []
    try:
        with open_regular(session_path) as handle:
            raw = handle.read()
    except OSError:
        return []
    found: dict[str, Transcript] = {}
    for match in _SUBAGENT_LINE.finditer(raw):
        try:
            event = orjson.loads(match.group(0))
        except orjson.JSONDecodeError:
            continue
        agent_id = text(event.get("agentId")) if isinstance(event, dict) else None
        if agent_id and agent_id not in found:
            data = obj(event.get("data"))
            found[agent_id] = Transcript(
                session_path,
                AGENT,
                main.session_id,
                agent_id,
                agent_type=text(data.get("agentName")),
                description=text(data.get("agentDescription")),
            )
    return list(found.values())


def discover(roots: Iterable[Path], skipped: list[Skipped] | None = None) -> list[Transcript]:
    """Every session under `roots` (`*/events.jsonl`; a file given by hand is checked by its first event),
    with its subagents after the sessions."""
    found: dict[Path, Transcript] = {}
    for path, _ in candidates(roots, "*.jsonl", lambda p: p.name == FILE_NAME, skipped):
        transcript = classify(path)
        if transcript is not None:
            found[safe_resolve(path)] = transcript
    sessions = sorted(found.values(), key=lambda t: str(t.path))
    return sessions + [sub for t in sessions for sub in subagent_transcripts(t.path)]


# --- normalisation ---------------------------------------------------------------------------------


def _assistant(entry: Entry, data: dict[str, Any]) -> Entry:
    entry.kind, entry.role, entry.message_id = "assistant", "assistant", text(data.get("messageId"))
    reasoning = text(data.get("reasoningText"))
    if reasoning:
        entry.blocks.append(Block("thinking", reasoning))
    content = text(data.get("content"))
    if content:
        entry.blocks.append(Block("text", content))
    for request in items(data.get("toolRequests")):
        request = obj(request)
        block = tool_block(request.get("name"), request.get("arguments"), request.get("toolCallId"))
        if block is not None:
            entry.blocks.append(block)
    return entry


def parse(line_index: int, event: dict[str, Any]) -> Entry | BadLine | None:
    """One event as an entry (None for bookkeeping events)."""
    kind = event.get("type")
    if not isinstance(kind, str):
        return BadLine(line_index, "event without a type")
    if kind in _NOISE:
        return None
    data = event.get("data")
    if not isinstance(data, dict):
        return BadLine(line_index, f"{kind} event whose data is not an object")
    agent_id = text(event.get("agentId"))
    entry = Entry(
        line_index,
        kind,
        "other",
        timestamp=normalize_timestamp(event.get("timestamp")),
        uuid=text(event.get("id")),
        parent_uuid=text(event.get("parentId")),
        agent_id=agent_id,
        is_sidechain=agent_id is not None,
        unknown=kind not in _KNOWN,
    )
    if kind in ("session.start", "session.resume"):
        entry.cwd = text(obj(data.get("context")).get("cwd"))
        entry.session_id = text(data.get("sessionId"))
        entry.version = text(data.get("copilotVersion"))
    elif kind == "user.message":
        content = data.get("content")
        if not isinstance(content, str):
            return BadLine(line_index, "user message without text")
        entry.role, entry.blocks = "user", [Block("text", content)]
        entry.kind = "prompt" if content.strip() else "user_meta"
    elif kind == "assistant.message":
        return _assistant(entry, data)
    elif kind == "assistant.reasoning":
        entry.kind, entry.role = "assistant", "assistant"
        entry.blocks = [Block("thinking", text(data.get("content")) or "")]
    elif kind == "tool.execution_complete":
        result = obj(data.get("result"))
        entry.kind, entry.role = "tool_result", "tool"
        body = result.get("content") if "content" in result else data.get("error")
        entry.blocks = [Block("tool_result", output_text(body), tool_use_id=text(data.get("toolCallId")))]
        entry.blocks[0].is_error = data.get("success") is False
    return entry


def read_entries(
    path: Path, start_offset: int = 0, start_line: int = 0, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """Each event of a session file from `start_offset`, every stream's (see `INLINE_SUBAGENTS`). A subagent's
    answer, the result of the parent's `task` call, reads as its report in the parent's conversation."""
    tasks: dict[str, str | None] = {}  # task call id -> its description
    for line, entry in jsonl_entries(path, start_offset, start_line, max_line_bytes, parse):
        if isinstance(entry, Entry):
            for tool in entry.tool_uses:
                if tool.name == _TASK_TOOL and tool.id:
                    tasks[tool.id] = text(tool.input.get("description"))
            result = entry.blocks[0] if entry.kind == "tool_result" and entry.blocks else None
            if result is not None and result.tool_use_id in tasks and result.text.strip():
                report = AgentReport(None, tasks[result.tool_use_id], result.text.strip())
                entry.kind, entry.role = "assistant", "assistant"
                entry.blocks.append(Block("text", report.text()))
        yield line, entry
