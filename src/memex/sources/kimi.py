"""Kimi sessions: Kimi Code CLI 2.x (`~/.kimi-code`, KIMI_CODE_HOME moves it) and the legacy Kimi CLI 1.x
(`~/.kimi`). Both write an event log, `wire.jsonl`, whose first line is `{"type": "metadata",
"protocol_version": …}`.

Kimi Code 2.x: `sessions/wd_<folder>_<hash>/session_<uuid>/agents/<main | agent-N>/wire.jsonl`, with
`state.json` (id, cwd, the agents) in the session folder. Records `{type, agentId, …, time}`: `turn.prompt`
(`input[{text}]`, `origin.kind`: `user`, or `system_trigger` for a subagent's task), `context.append_loop_event`
whose `event` is `content.part` (text, think), `tool.call` (toolCallId, name, args) or `tool.result`
(`result.output`), `subagent.spawned`/`completed` (`resultSummary`), and bookkeeping. The conversation is
written twice (`context.append_message`, `agent.message.appended`): those copies are skipped. A subagent
writes its own `agents/agent-N/wire.jsonl`.

Kimi CLI 1.x: `sessions/<md5 of the folder>/<session uuid>/wire.jsonl` (beside `context.jsonl` and
`state.json`); records `{timestamp, message: {type, payload}}` with `TurnBegin` (user_input), `ContentPart`,
`ToolCall` (OpenAI-shaped function), `ToolResult` (`return_value.output`), `StepBegin`, `StatusUpdate`,
`TurnEnd`. The folder is named by the MD5 of its path: `~/.kimi/kimi.json` lists the paths.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from memex.sources.files import Skipped, candidates, problem, safe_resolve
from memex.sources.injected import AgentReport
from memex.sources.jsonl import DEFAULT_MAX_LINE_BYTES, RawLine
from memex.sources.model import BadLine, Block, Entry, Transcript
from memex.sources.records import (
    content_text,
    first_record,
    items,
    jsonl_entries,
    obj,
    output_text,
    text,
    tool_block,
)
from memex.textutil import normalize_timestamp

AGENT = "kimi"
INCREMENTAL = True
FILE_NAME = "wire.jsonl"
MAIN_AGENT = "main"
# Kimi Code names sessions `session_<uuid>`: the uuid alone is the id (a prefix of it finds the session).
SESSION_PREFIX = "session_"
# Kimi Code 2.x records kept as entries, and those that only repeat another record or carry no conversation.
_KNOWN = frozenset(
    {"metadata", "turn.prompt", "context.append_loop_event", "subagent.spawned", "subagent.completed", "turn.ended"}
)
_NOISE = frozenset(
    {
        "context.append_message",
        "agent.message.appended",
        "runtime.set_binding",
        "profile.bind",
        "permission.set_mode",
        "llm.tools_snapshot",
        "llm.request",
        "usage.record",
        "token_counting.measured",
        "token_counting.turn_recorded",
        "agent.turn.started",
        "agent.turn.ended",
        "prompt.completed",
        "plugin.session_start",
        "subagent.started",
    }
)
_LOOP_NOISE = frozenset({"step.begin", "step.end"})
# Kimi CLI 1.x message types.
_LEGACY_KNOWN = frozenset({"TurnBegin", "ContentPart", "ToolCall", "ToolResult", "TurnEnd", "SubagentEvent"})
_LEGACY_NOISE = frozenset({"StepBegin", "StatusUpdate", "StepInterrupted", "CompactionBegin", "CompactionEnd"})


# --- discovery -------------------------------------------------------------------------------------


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return obj(orjson.loads(path.read_bytes()))
    except (OSError, orjson.JSONDecodeError):
        return {}


def _session_folder(path: Path) -> Path | None:
    """The Kimi Code session folder of an `agents/<agent>/wire.jsonl`, else None (a legacy file)."""
    if path.parent.parent.name == "agents":
        return path.parent.parent.parent
    return None


def classify(path: Path) -> Transcript | None:
    """A Kimi event log: `wire.jsonl` (or any JSONL given by hand) whose first line is Kimi's metadata."""
    if path.suffix != ".jsonl":
        return None
    first = first_record(path)
    if first is None or first.get("type") != "metadata" or not isinstance(first.get("protocol_version"), str):
        return None
    if set(first) - {"type", "protocol_version", "created_at"}:
        return None
    folder = _session_folder(path)
    if folder is None:  # Kimi CLI 1.x: <md5>/<session uuid>/wire.jsonl
        return Transcript(path, AGENT, path.parent.name)
    state = _read_json(folder / "state.json")
    session_id = (text(state.get("id")) or folder.name).removeprefix(SESSION_PREFIX)
    agent = path.parent.name
    if agent == MAIN_AGENT:
        return Transcript(path, AGENT, session_id)
    labels = obj(obj(obj(state.get("agents")).get(agent)).get("labels"))
    return Transcript(path, AGENT, session_id, agent, agent_type=text(labels.get("profileName")))


def discover(roots: Iterable[Path], skipped: list[Skipped] | None = None) -> list[Transcript]:
    """Every event log under `roots` (sessions before their subagents)."""
    found: dict[Path, Transcript] = {}
    for path, _ in candidates(roots, "*.jsonl", lambda p: p.name == FILE_NAME, skipped):
        transcript = classify(path)
        if transcript is not None:
            found[safe_resolve(path)] = transcript
    return sorted(found.values(), key=lambda t: (t.subagent_id is not None, str(t.path)))


def subagent_transcripts(session_path: Path) -> list[Transcript]:
    """The subagents of a Kimi Code session: `agents/agent-*/wire.jsonl` beside its main agent's."""
    folder = _session_folder(session_path)
    if folder is None or session_path.parent.name != MAIN_AGENT:
        return []
    paths = sorted(p for p in (folder / "agents").glob(f"*/{FILE_NAME}") if p.parent.name != MAIN_AGENT)
    found = (classify(p) for p in paths if problem(p) is None)
    return [t for t in found if t is not None and t.subagent_id]


@lru_cache(maxsize=16)
def _legacy_folders(registry: Path, mtime_ns: int) -> dict[str, str]:
    """`kimi.json`'s work folders by the MD5 of their path (the name of their sessions' folder), and by
    the id of their last session."""
    found: dict[str, str] = {}
    for folder in items(_read_json(registry).get("work_dirs")):
        if isinstance(folder, dict) and isinstance(folder.get("path"), str):
            found[hashlib.md5(folder["path"].encode("utf-8")).hexdigest()] = folder["path"]
            if isinstance(folder.get("last_session_id"), str):
                found.setdefault(folder["last_session_id"], folder["path"])
    return found


def _project(path: Path) -> str | None:
    """The folder a session ran in: Kimi Code's `state.json`, or Kimi CLI 1.x's `kimi.json` registry."""
    folder = _session_folder(path)
    if folder is not None:
        return text(_read_json(folder / "state.json").get("cwd"))
    registry = path.parent.parent.parent.parent / "kimi.json"  # ~/.kimi/sessions/<md5>/<id>/wire.jsonl
    try:
        folders = _legacy_folders(registry, registry.stat().st_mtime_ns)
    except OSError:
        return None
    return folders.get(path.parent.parent.name) or folders.get(path.parent.name)


# --- normalisation: Kimi Code 2.x --------------------------------------------------------------------


def _loop_event(entry: Entry, event: dict[str, Any]) -> Entry | None:
    kind = event.get("type")
    if kind in _LOOP_NOISE:
        return None
    entry.entry_type = f"context.append_loop_event/{kind}"
    if kind == "content.part":
        part = obj(event.get("part"))
        entry.kind, entry.role = "assistant", "assistant"
        if part.get("type") == "think" and isinstance(part.get("think"), str):
            entry.blocks = [Block("thinking", part["think"])]
        elif isinstance(part.get("text"), str):
            entry.blocks = [Block("text", part["text"])]
    elif kind == "tool.call":
        block = tool_block(event.get("name"), event.get("args"), event.get("toolCallId"))
        entry.kind, entry.role, entry.blocks = "assistant", "assistant", [block] if block else []
    elif kind == "tool.result":
        result = obj(event.get("result"))
        entry.kind, entry.role = "tool_result", "tool"
        block = Block("tool_result", output_text(result.get("output")), tool_use_id=text(event.get("toolCallId")))
        block.is_error = result.get("isError") is True or result.get("is_error") is True
        entry.blocks = [block]
    else:
        entry.unknown = True
    return entry


def _parse_code(line_index: int, record: dict[str, Any]) -> Entry | BadLine | None:
    kind = record["type"]
    if kind in _NOISE:
        return None
    entry = Entry(
        line_index,
        kind,
        "other",
        timestamp=normalize_timestamp(record.get("time") or record.get("created_at")),
        unknown=kind not in _KNOWN,
    )
    if kind == "turn.prompt":
        said = content_text(record.get("input"))
        entry.role, entry.blocks = "user", [Block("text", said)]
        entry.kind = "prompt" if said.strip() else "user_meta"
    elif kind == "context.append_loop_event":
        event = record.get("event")
        if not isinstance(event, dict):
            return BadLine(line_index, "loop event record without an event")
        return _loop_event(entry, event)
    elif kind == "subagent.spawned":
        entry.extra["subagent"] = text(record.get("subagentId"))
        entry.extra["description"] = text(record.get("description"))
    elif kind == "subagent.completed":
        summary = text(record.get("resultSummary"))
        if summary:
            report = AgentReport(text(record.get("subagentId")), None, summary.strip())
            entry.kind, entry.role, entry.blocks = "assistant", "assistant", [Block("text", report.text())]
            entry.extra["report_of"] = report.agent_id
            entry.extra["summary"] = report.result
    return entry


# --- normalisation: Kimi CLI 1.x ---------------------------------------------------------------------


def _parse_legacy(line_index: int, record: dict[str, Any]) -> Entry | BadLine | None:
    message = record["message"]
    kind = message.get("type")
    if not isinstance(kind, str):
        return BadLine(line_index, "message without a type")
    if kind in _LEGACY_NOISE:
        return None
    payload = obj(message.get("payload"))
    entry = Entry(
        line_index,
        kind,
        "other",
        timestamp=normalize_timestamp(record.get("timestamp")),
        unknown=kind not in _LEGACY_KNOWN,
    )
    if kind == "TurnBegin":
        said = content_text(payload.get("user_input"))
        entry.role, entry.blocks = "user", [Block("text", said)]
        entry.kind = "prompt" if said.strip() else "user_meta"
    elif kind == "ContentPart":
        entry.kind, entry.role = "assistant", "assistant"
        if payload.get("type") == "think" and isinstance(payload.get("think"), str):
            entry.blocks = [Block("thinking", payload["think"])]
        elif isinstance(payload.get("text"), str):
            entry.blocks = [Block("text", payload["text"])]
    elif kind == "ToolCall":
        function = obj(payload.get("function"))
        block = tool_block(function.get("name"), function.get("arguments"), payload.get("id"))
        entry.kind, entry.role, entry.blocks = "assistant", "assistant", [block] if block else []
    elif kind == "ToolResult":
        value = obj(payload.get("return_value"))
        entry.kind, entry.role = "tool_result", "tool"
        block = Block("tool_result", output_text(value.get("output")), tool_use_id=text(payload.get("tool_call_id")))
        block.is_error = value.get("is_error") is True
        entry.blocks = [block]
    return entry


def parse(line_index: int, record: dict[str, Any]) -> Entry | BadLine | None:
    """One record of either generation as an entry (None for bookkeeping)."""
    if isinstance(record.get("message"), dict) and "type" not in record:
        return _parse_legacy(line_index, record)
    if not isinstance(record.get("type"), str):
        return BadLine(line_index, "record without a type")
    return _parse_code(line_index, record)


def read_entries(
    path: Path, start_offset: int = 0, start_line: int = 0, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """Each record of an event log from `start_offset`; the first (metadata) names the session's folder. A
    subagent's report is named by the description it was spawned with (`Subagent "List project files"
    reported: …`), as the other agents' are."""
    project = _project(path) if start_offset == 0 else None
    spawned: dict[str, str] = {}  # subagent id -> its description
    for line, entry in jsonl_entries(path, start_offset, start_line, max_line_bytes, parse):
        if isinstance(entry, Entry) and entry.entry_type == "metadata":
            entry.cwd = project
        elif isinstance(entry, Entry) and entry.extra.get("subagent") and entry.extra.get("description"):
            spawned[entry.extra["subagent"]] = entry.extra["description"]
        elif isinstance(entry, Entry) and entry.extra.get("report_of") in spawned:
            agent_id = entry.extra["report_of"]
            report = AgentReport(agent_id, spawned[agent_id], entry.extra["summary"])
            entry.blocks = [Block("text", report.text())]
        yield line, entry
