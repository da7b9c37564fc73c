"""Cline: the CLI 3.x (`~/.cline/data/sessions/<id>/`) and the editor extension (`tasks/<id>/` in the
editor's global storage, `saoudrizwan.claude-dev`). Roo Code, a fork of the extension, keeps the same
task layout (`memex.sources.roo`).

CLI 3.x: `<id>.messages.json` is `{version, sessionId, agent, origin, messages[]}` with Anthropic-shaped
messages `{id, role, content: [text | tool_use | tool_result], ts}`; the user's words are wrapped in
`<user_input mode="act">…</user_input>`. `<id>.json` beside it holds the session's metadata (cwd, title,
started_at). A subagent writes `agent_<id>.messages.json` in its parent's folder (`origin.parentThreadId`).

Extension tasks: `ui_messages.json` is what the user saw, a list of `{ts, type: ask | say, ask | say, text}`:
`say: task` (the request), `say: user_feedback` (the user's later messages), `say: text` and
`completion_result` (the model's words), `tool` (a JSON `{tool, path, …}`), `ask: command` (a command to run).
`api_conversation_history.json` (the model's messages, with the environment details the extension adds) is
read only for a task whose `ui_messages.json` is missing.

Every file here is one JSON document rewritten as the session goes: re-read whole when it changes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from memex.sources.files import Skipped, candidates, open_regular, problem, safe_resolve
from memex.sources.injected import AgentReport
from memex.sources.jsonl import DEFAULT_MAX_LINE_BYTES, RawLine
from memex.sources.model import BadLine, Block, Entry, Transcript
from memex.sources.records import (
    assistant_blocks,
    content_text,
    document_entries,
    items,
    obj,
    output_text,
    text,
    tool_block,
)
from memex.textutil import normalize_timestamp

AGENT = "cline"
INCREMENTAL = False
MESSAGES_SUFFIX = ".messages.json"
UI_MESSAGES = "ui_messages.json"
API_HISTORY = "api_conversation_history.json"
# The folder Roo Code's tasks live in (they are Roo's, not Cline's).
ROO_STORAGE = "rooveterinaryinc.roo-cline"
PEEK_BYTES = 4096
_USER_INPUT = re.compile(r"^\s*<user_input[^>]*>(.*)</user_input>\s*$", re.DOTALL)
_TASK = re.compile(r"<task>\s*(.*?)\s*</task>", re.DOTALL)
_FEEDBACK = re.compile(r"<feedback>\s*(.*?)\s*</feedback>", re.DOTALL)
_ENVIRONMENT = re.compile(r"<environment_details>.*?</environment_details>", re.DOTALL)
_CWD = re.compile(r"Current Working Directory \(([^)\n]+)\)")
# How the extension returns a tool's result in the API history when the model wrote its call as XML.
_XML_TOOL_RESULT = re.compile(r"^\[[\w-]+(?: for '[^']*')?\] Result:")
# ui_messages `say` types that are the model's words, the user's, or a tool's use.
_SAY_ASSISTANT = frozenset({"text", "completion_result"})
_SAY_USER = frozenset({"task", "user_feedback"})
_SAY_QUIET = frozenset({"api_req_started", "api_req_finished", "checkpoint_created", "reasoning", "command_output"})
# The CLI's tool that runs a subagent; its result is `{"text": <the subagent's answer>, "iterations", …}`.
_SPAWN_TOOL = "spawn_agent"


# --- discovery -------------------------------------------------------------------------------------


def _head(path: Path) -> bytes:
    try:
        with open_regular(path) as handle:
            return handle.read(PEEK_BYTES)
    except OSError:
        return b""


def _read_json(path: Path) -> Any:
    try:
        with open_regular(path) as handle:
            return orjson.loads(handle.read())
    except (OSError, orjson.JSONDecodeError):
        return None


def task_transcript(path: Path, agent: str) -> Transcript | None:
    """An extension task's file (`tasks/<id>/ui_messages.json`, or its API history when that is missing)."""
    if path.name == API_HISTORY and (path.parent / UI_MESSAGES).is_file():
        return None  # the task is read from its UI messages
    if path.name not in (UI_MESSAGES, API_HISTORY) or not _head(path).lstrip().startswith(b"["):
        return None
    return Transcript(path, agent, path.parent.name)


def classify(path: Path) -> Transcript | None:
    """A Cline CLI session (`<id>.messages.json`), its subagent (`agent_<id>.messages.json`), or a Cline
    extension task; never a Roo Code task (under `rooveterinaryinc.roo-cline`)."""
    if path.name.endswith(MESSAGES_SUFFIX):
        head = _head(path)
        if b'"messages"' not in head and b'"sessionId"' not in head:
            return None
        stem = path.name.removesuffix(MESSAGES_SUFFIX)
        if stem.startswith("agent_"):
            origin = obj(obj(_read_json(path)).get("origin"))
            parent = text(origin.get("parentThreadId")) or path.parent.name
            return Transcript(path, AGENT, parent, stem, agent_type="subagent")
        return Transcript(path, AGENT, stem)
    if ROO_STORAGE in path.parts:
        return None
    return task_transcript(path, AGENT)


def _wanted(path: Path) -> bool:
    return path.name.endswith(MESSAGES_SUFFIX) or path.name in (UI_MESSAGES, API_HISTORY)


def discover(roots: Iterable[Path], skipped: list[Skipped] | None = None) -> list[Transcript]:
    """Every CLI session and extension task under `roots` (sessions before their subagents)."""
    found: dict[Path, Transcript] = {}
    for path, _ in candidates(roots, "*.json", _wanted, skipped):
        transcript = classify(path)
        if transcript is not None:
            found[safe_resolve(path)] = transcript
    return sorted(found.values(), key=lambda t: (t.subagent_id is not None, str(t.path)))


def subagent_transcripts(session_path: Path) -> list[Transcript]:
    """A CLI session's subagents: `agent_*.messages.json` in its folder."""
    if not session_path.name.endswith(MESSAGES_SUFFIX) or session_path.name.startswith("agent_"):
        return []
    paths = sorted(session_path.parent.glob(f"agent_*{MESSAGES_SUFFIX}"))
    found = (classify(p) for p in paths if problem(p) is None)
    return [t for t in found if t is not None and t.subagent_id]


# --- normalisation: Anthropic-shaped messages (CLI sessions, the extension's API history) ------------


def _user_text(said: str) -> str:
    """What the user typed: inside `<user_input>`, `<task>` or `<feedback>`, without environment details."""
    wrapped = _USER_INPUT.match(said) or _TASK.search(said) or _FEEDBACK.search(said)
    if wrapped:
        return wrapped.group(1).strip()
    return _ENVIRONMENT.sub("", said).strip()


def message_entry(index: int, message: Any) -> Entry | BadLine | None:
    """One Anthropic-shaped message as an entry."""
    if not isinstance(message, dict):
        return BadLine(index, "message is not a JSON object")
    role = message.get("role")
    if not isinstance(role, str):
        return BadLine(index, "message without a role")
    entry = Entry(index, role, "other", role=role, timestamp=normalize_timestamp(message.get("ts")))
    entry.uuid = text(message.get("id"))
    content = message.get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else items(content)
    if role == "assistant":
        entry.kind, entry.message_id = "assistant", entry.uuid
        entry.blocks.extend(assistant_blocks(parts))
        return entry
    results = [obj(p) for p in parts if obj(p).get("type") == "tool_result"]
    if results and len(results) == len(parts):
        entry.kind, entry.role = "tool_result", "tool"
        entry.blocks = [
            Block("tool_result", output_text(r.get("content")), tool_use_id=text(r.get("tool_use_id"))) for r in results
        ]
        return entry
    said = content_text(parts)
    if _XML_TOOL_RESULT.match(said.lstrip()):
        entry.kind, entry.role, entry.blocks = "tool_result", "tool", [Block("tool_result", said[:100_000])]
        return entry
    typed = _user_text(said)
    entry.blocks = [Block("text", typed or said)]
    entry.kind = "prompt" if typed and role == "user" else "user_meta"
    found = _CWD.search(said)
    entry.cwd = found.group(1).strip() if found else None
    return entry


def _session_records(path: Path, document: Any) -> list[Any]:
    if not isinstance(document, dict) or not isinstance(document.get("messages"), list):
        raise ValueError("not a Cline session (no messages list)")
    meta = obj(_read_json(path.with_name(path.name.removesuffix(MESSAGES_SUFFIX) + ".json")))
    # The CLI's version: `origin.version` (a damaged document salvaged keeps it as a top-level string).
    version = text(obj(document.get("origin")).get("version")) or text(document.get("version"))
    header = {"session_id": document.get("sessionId"), "meta": meta, "version": version}
    return [header, *document["messages"]]


def _session_entry(index: int, record: Any) -> Entry | BadLine | None:
    if index > 0:
        return message_entry(index, record)
    meta = record["meta"]
    entry = Entry(0, "session", "other", session_id=text(record["session_id"]))
    entry.cwd = text(meta.get("cwd")) or text(meta.get("workspace_root"))
    entry.timestamp = normalize_timestamp(meta.get("started_at"))
    entry.version = record["version"]
    title = text(obj(meta.get("metadata")).get("title"))
    if title:
        entry.kind, entry.extra = "title", {"title": title, "source": "ai-title"}
    return entry


# --- normalisation: the extension's UI messages -------------------------------------------------------


def _tool_from_ui(message: dict[str, Any], call_id: str) -> Block | None:
    body = text(message.get("text")) or ""
    kind = message.get("ask") or message.get("say")
    if kind == "command":
        return tool_block("execute_command", {"command": body}, call_id)
    try:
        data = obj(orjson.loads(body))
    except orjson.JSONDecodeError:
        return None
    name = text(data.get("tool")) or text(data.get("type"))
    args = {k: v for k, v in data.items() if k in ("path", "regex", "filePattern", "command", "url", "query")}
    return tool_block(name or str(kind), args, call_id)


def ui_entry(index: int, message: Any) -> Entry | BadLine | None:
    """One UI message of an extension task as an entry (None for bookkeeping)."""
    if not isinstance(message, dict):
        return BadLine(index, "message is not a JSON object")
    kind = message.get("say") if message.get("type") == "say" else message.get("ask")
    if not isinstance(kind, str):
        return BadLine(index, "message without a say or ask type")
    if message.get("partial") is True or kind in _SAY_QUIET:
        if kind == "api_req_started":  # its request names the working folder
            found = _CWD.search(text(message.get("text")) or "")
            if found:
                return Entry(index, "api_req_started", "other", cwd=found.group(1).strip())
        return None
    entry = Entry(index, f"{message.get('type')}/{kind}", "other", timestamp=normalize_timestamp(message.get("ts")))
    said = text(message.get("text")) or ""
    if message.get("type") == "say" and kind in _SAY_USER:
        entry.role, entry.blocks = "user", [Block("text", said)]
        entry.kind = "prompt" if said.strip() or message.get("images") else "user_meta"
    elif message.get("type") == "say" and kind in _SAY_ASSISTANT:
        entry.kind, entry.role, entry.blocks = "assistant", "assistant", [Block("text", said)]
    elif kind in ("tool", "command"):
        block = _tool_from_ui(message, f"ui-{index}")
        entry.kind, entry.role, entry.blocks = "assistant", "assistant", [block] if block else []
    elif kind == "followup" and said:  # the model asks the user a question
        question = text(obj(_loads(said)).get("question")) or said
        entry.kind, entry.role, entry.blocks = "assistant", "assistant", [Block("text", question)]
    return entry


def _loads(raw: str) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None


def _list(document: Any) -> list[Any]:
    if not isinstance(document, list):
        raise ValueError("not a task's message list")
    return document


def read_task(path: Path, max_line_bytes: int) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """An extension task's entries, from its UI messages or (without them) its API history."""
    parse = ui_entry if path.name == UI_MESSAGES else message_entry
    return document_entries(path, max_line_bytes, _list, parse)


def _subagent_answer(output: str) -> str | None:
    """The subagent's answer in a `spawn_agent` result (`{"text": …}`), or None."""
    answer = obj(_loads(output)).get("text")
    return answer.strip() if isinstance(answer, str) and answer.strip() else None


def _with_reports(
    found: Iterator[tuple[RawLine, Entry | BadLine | None]],
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """`found`, with the result of each `spawn_agent` call read as the subagent's report in the parent's
    conversation (as every other agent's is): the result alone is tool output, and the parent's
    conversation would never say what the subagent found."""
    spawned: set[str] = set()
    for line, entry in found:
        if isinstance(entry, Entry):
            spawned.update(tool.id for tool in entry.tool_uses if tool.name == _SPAWN_TOOL and tool.id)
            if entry.kind == "tool_result":
                answers = [_subagent_answer(b.text) for b in entry.blocks if b.tool_use_id in spawned]
                reports = [Block("text", AgentReport(None, None, a).text()) for a in answers if a]
                if reports:
                    entry.kind, entry.role = "assistant", "assistant"
                    entry.blocks.extend(reports)
        yield line, entry


def read_entries(
    path: Path, start_offset: int = 0, start_line: int = 0, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """The whole session or task, message by message (offsets are ignored: see `INCREMENTAL`); a
    subagent's answer reads as its report in the conversation (`_with_reports`)."""
    if path.name.endswith(MESSAGES_SUFFIX):
        return _with_reports(
            document_entries(path, max_line_bytes, lambda d: _session_records(path, d), _session_entry)
        )
    return read_task(path, max_line_bytes)
