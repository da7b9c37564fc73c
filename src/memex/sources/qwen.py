"""Qwen Code sessions: `~/.qwen/projects/<cwd with / as ->/chats/<session id>.jsonl`.

Lines are shaped like Claude Code's (`uuid`, `parentUuid`, `sessionId`, `timestamp`, `type`, `cwd`, `version`,
`gitBranch`) with Gemini-shaped bodies: `message: {role, parts: [{text} | {functionCall} |
{functionResponse}]}`. Types: `user` (`provenance: "real_user"` for what the user typed; a `notification`
subtype carries a background subagent's `<task-notification>`), `assistant`, `tool_result`, and `system`
records (`ui_telemetry`, `attribution_snapshot`…) that hold no conversation. `--continue` appends.

Subagents: `…/subagents/<session id>/agent-<type>-<tool call id>.jsonl`, with `isSidechain` and `agentId` on
every line, and a `.meta.json` beside it (agentType, description).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from memex.sources.files import Skipped, candidates, problem, safe_resolve
from memex.sources.injected import claude_task_report
from memex.sources.jsonl import DEFAULT_MAX_LINE_BYTES, RawLine
from memex.sources.model import BadLine, Block, Entry, Transcript
from memex.sources.records import first_record, jsonl_entries, obj, output_text, text, tool_block
from memex.textutil import normalize_timestamp, strip_system_reminders

AGENT = "qwen"
INCREMENTAL = True
KNOWN_TYPES = frozenset({"user", "assistant", "tool_result", "system"})
# `@file` mentions append the files' contents to the prompt after this marker (as in Gemini CLI).
_REFERENCED_FILES = "\n--- Content from referenced files ---"


# --- discovery -------------------------------------------------------------------------------------


def is_qwen_record(record: Any) -> bool:
    """True for a Qwen Code line: Claude-like ids around a Gemini-shaped `message.parts`, or `provenance`."""
    if not isinstance(record, dict) or not isinstance(record.get("sessionId"), str):
        return False
    message = record.get("message")
    return (isinstance(message, dict) and "parts" in message) or "provenance" in record


def _meta(path: Path) -> dict[str, Any]:
    try:
        data = orjson.loads(path.with_suffix(".meta.json").read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return obj(data)


def classify(path: Path) -> Transcript | None:
    """A Qwen chat (`chats/<id>.jsonl`) or subagent file (`subagents/<session id>/agent-*.jsonl`): a JSONL
    file whose first line is a Qwen record."""
    if path.suffix != ".jsonl":
        return None
    first = first_record(path)
    if not is_qwen_record(first):
        return None
    assert first is not None
    session_id = first["sessionId"]
    if path.parent.parent.name == "subagents" or first.get("isSidechain") is True:
        meta = _meta(path)
        agent_id = text(first.get("agentId")) or text(meta.get("agentId")) or path.stem.removeprefix("agent-")
        return Transcript(
            path,
            AGENT,
            text(meta.get("parentSessionId")) or session_id,
            agent_id,
            agent_type=text(meta.get("agentType")) or text(first.get("agentName")),
            description=text(meta.get("description")),
        )
    return Transcript(path, AGENT, session_id)


def _in_place(path: Path) -> bool:
    return path.parent.name == "chats" or path.parent.parent.name == "subagents"


def discover(roots: Iterable[Path], skipped: list[Skipped] | None = None) -> list[Transcript]:
    """Every chat and subagent file under `roots` (sessions first)."""
    found: dict[Path, Transcript] = {}
    for path, _ in candidates(roots, "*.jsonl", _in_place, skipped):
        transcript = classify(path)
        if transcript is not None:
            found[safe_resolve(path)] = transcript
    return sorted(found.values(), key=lambda t: (t.subagent_id is not None, str(t.path)))


def subagent_transcripts(session_path: Path) -> list[Transcript]:
    """The subagents of one session: `<project>/subagents/<session id>/agent-*.jsonl`."""
    folder = session_path.parent.parent / "subagents" / session_path.stem
    if session_path.parent.name != "chats" or not folder.is_dir():
        return []
    found = (classify(p) for p in sorted(folder.glob("*.jsonl")) if problem(p) is None)
    return [t for t in found if t is not None and t.subagent_id]


# --- normalisation ---------------------------------------------------------------------------------


def _parts(message: Any) -> list[dict[str, Any]] | None:
    parts = obj(message).get("parts")
    if isinstance(parts, str):
        return [{"text": parts}]
    if not isinstance(parts, list):
        return None
    return [p for p in parts if isinstance(p, dict)]


def _texts(parts: list[dict[str, Any]]) -> str:
    return "".join(p["text"] for p in parts if isinstance(p.get("text"), str) and p.get("thought") is not True)


def _user(entry: Entry, record: dict[str, Any], parts: list[dict[str, Any]]) -> Entry:
    entry.role = "user"
    if parts and all("functionResponse" in p for p in parts):
        return _results(entry, parts)
    said = _texts(parts)
    report = claude_task_report(said)  # a background subagent finished
    if report is not None:
        entry.kind, entry.role, entry.blocks = "assistant", "assistant", [Block("text", report.text())]
        entry.extra["report_of"] = report.agent_id
        return entry
    typed = strip_system_reminders(said.split(_REFERENCED_FILES, 1)[0]).strip()
    real = record.get("provenance", "real_user") == "real_user" and record.get("subtype") is None
    entry.blocks = [Block("text", typed if real and typed else said)]
    entry.kind = "prompt" if real and typed else "user_meta"
    return entry


def _results(entry: Entry, parts: list[dict[str, Any]]) -> Entry:
    entry.kind, entry.role = "tool_result", "tool"
    for part in parts:
        response = obj(part.get("functionResponse"))
        body = obj(response.get("response"))
        output = body.get("output") if "output" in body else body.get("error")
        entry.blocks.append(Block("tool_result", output_text(output), tool_use_id=text(response.get("id"))))
    return entry


def _assistant(entry: Entry, parts: list[dict[str, Any]]) -> Entry:
    entry.kind, entry.role, entry.message_id = "assistant", "assistant", entry.uuid
    for part in parts:
        if part.get("thought") is True and isinstance(part.get("text"), str):
            entry.blocks.append(Block("thinking", part["text"]))
        elif isinstance(part.get("text"), str) and part["text"].strip():
            entry.blocks.append(Block("text", part["text"]))
        elif isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            args = obj(call.get("args"))
            block = tool_block(call.get("name"), args, call.get("id"), text(args.get("directory")))
            if block is not None:
                entry.blocks.append(block)
    return entry


def parse(line_index: int, record: dict[str, Any]) -> Entry | BadLine | None:
    """One line of a chat as an entry (None for telemetry)."""
    kind = record.get("type")
    if not isinstance(kind, str):
        return BadLine(line_index, "record without a type")
    if kind == "system" and record.get("subtype") in ("ui_telemetry", "attribution_snapshot"):
        return None
    entry = Entry(
        line_index,
        kind if not isinstance(record.get("subtype"), str) else f"{kind}/{record['subtype']}",
        "other",
        timestamp=normalize_timestamp(record.get("timestamp")),
        uuid=text(record.get("uuid")),
        parent_uuid=text(record.get("parentUuid")),
        session_id=text(record.get("sessionId")),
        agent_id=text(record.get("agentId")),
        is_sidechain=record.get("isSidechain") is True,
        cwd=text(record.get("cwd")),
        version=text(record.get("version")),
        unknown=kind not in KNOWN_TYPES,
    )
    if kind not in ("user", "assistant", "tool_result"):
        return entry
    parts = _parts(record.get("message"))
    if parts is None:
        return BadLine(line_index, f"{kind} record without message parts")
    if kind == "assistant":
        return _assistant(entry, parts)
    if kind == "tool_result":
        return _results(entry, parts)
    return _user(entry, record, parts)


def read_entries(
    path: Path, start_offset: int = 0, start_line: int = 0, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """Each line of a chat or subagent file from `start_offset`, with its entry."""
    return jsonl_entries(path, start_offset, start_line, max_line_bytes, parse)
