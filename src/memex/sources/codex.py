"""Codex CLI rollouts: discovery under `~/.codex/sessions` and normalisation of each JSONL line.

Two layouts. Since Codex 0.3x (Sept 2025) every line is `{timestamp, type, payload}` with `type` one of
`session_meta`, `response_item`, `event_msg`, `turn_context`, `compacted`. Before that the first line is a
bare session header `{id, timestamp, instructions…}`, then bare response items and `{"record_type":
"state"}` markers, with no time on the items (they get the header's).

The user's words are written twice in the wrapped layout: as a `response_item` user message and as an
`event_msg` `user_message`. The event is the prompt (it never carries injected context); the response item
just before it is kept as an entry of kind `other`. Assistant text and reasoning are written twice as well
(`agent_message`, `agent_reasoning` events): only the response items are kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from memex.sources.jsonl import RawLine, parse_json_line, read_jsonl
from memex.sources.model import BadLine, Block, Entry, ToolUse, Transcript
from memex.sources.shell import command_text, patch_paths, resolve, shell_paths
from memex.textutil import normalize_timestamp

AGENT = "codex"
WRAPPED_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
# Bytes of a file's first line read to recognise a rollout (a session_meta line carries the whole
# instructions text and can be long; its recognisable keys come first).
PEEK_BYTES = 65_536
_UUID_TAIL = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE)
_WRAPPED_PREFIX = re.compile(
    rb'^\{\s*"timestamp"\s*:\s*"[^"]*"\s*,\s*"type"\s*:\s*"(' + "|".join(WRAPPED_TYPES).encode() + rb')"'
)
_OLD_HEADER_PREFIX = re.compile(rb'^\{\s*"id"\s*:\s*"([^"]+)"\s*,\s*"timestamp"\s*:')
_SESSION_META_ID = re.compile(rb'"type"\s*:\s*"session_meta"\s*,\s*"payload"\s*:\s*\{\s*"id"\s*:\s*"([^"]+)"')
# User-role text Codex injects: project instructions, the environment block, and any message that is one
# XML-like envelope (`<environment_context>…</environment_context>`, `<user_instructions>…`, newer tags).
_INJECTED_PREFIXES = ("# AGENTS.md instructions", "<user_instructions>", "<environment_context>", "<INSTRUCTIONS>")
_ENVELOPE = re.compile(r"^<([A-Za-z_][\w -]*)>.*</\1>$", re.DOTALL)
_CONTEXT_CWD = re.compile(r"<environment_context>.*?<cwd>([^<]+)</cwd>", re.DOTALL)
# Event messages that only repeat a response item, or carry no conversation.
_NOISE_EVENTS = {
    "agent_message",
    "agent_reasoning",
    "agent_reasoning_raw_content",
    "agent_reasoning_section_break",
    "token_count",
}


# --- discovery -------------------------------------------------------------------------------------


def _peek(path: Path) -> tuple[str, str | None] | None:
    """("wrapped" | "old", session id or None) when the first line is a Codex rollout's, else None."""
    try:
        with path.open("rb") as handle:
            head = handle.readline(PEEK_BYTES)
    except OSError:
        return None
    body = head.strip()
    if head.endswith(b"\n") or len(head) < PEEK_BYTES:
        data, error, _ = parse_json_line(body) if body else (None, "empty", False)
        if error is None and isinstance(data, dict):
            return _shape(data)
    wrapped = _WRAPPED_PREFIX.match(body)
    if wrapped:
        meta = _SESSION_META_ID.search(body)
        return "wrapped", meta.group(1).decode() if meta else None
    old = _OLD_HEADER_PREFIX.match(body)
    if old and b'"type"' not in body[:200]:
        return "old", old.group(1).decode()
    return None


def _shape(data: dict[str, Any]) -> tuple[str, str | None] | None:
    if data.get("type") in WRAPPED_TYPES and "payload" in data:
        payload = data["payload"]
        session_id = payload.get("id") if data["type"] == "session_meta" and isinstance(payload, dict) else None
        return "wrapped", session_id if isinstance(session_id, str) else None
    if isinstance(data.get("id"), str) and "timestamp" in data and "type" not in data and "sessionId" not in data:
        return "old", data["id"]
    return None


def classify(path: Path) -> Transcript | None:
    """A Codex rollout (`rollout-*.jsonl`, or any JSONL whose first line is a rollout's), else None."""
    if path.suffix != ".jsonl":
        return None
    shape = _peek(path)
    if shape is None and not path.name.startswith("rollout-"):
        return None
    from_name = _UUID_TAIL.search(path.stem)
    session_id = (shape[1] if shape else None) or (from_name.group(1) if from_name else path.stem)
    return Transcript(path, AGENT, session_id)


def discover(roots: Iterable[Path]) -> list[Transcript]:
    """Every rollout under `roots` (folders are searched recursively; files taken as given)."""
    found: dict[Path, Transcript] = {}
    for root in roots:
        if root.is_file():
            paths: Iterable[Path] = [root]
        elif root.is_dir():
            paths = sorted(root.rglob("*.jsonl"))
        else:
            continue
        for path in paths:
            transcript = classify(path)
            if transcript is not None:
                found[path.resolve()] = transcript
    return sorted(found.values(), key=lambda t: str(t.path))


def subagent_transcripts(session_path: Path) -> list[Transcript]:
    """Codex writes no separate subagent transcripts."""
    return []


# --- normalisation ---------------------------------------------------------------------------------


def is_injected(text: str) -> bool:
    """True for user-role text Codex wrote itself (instructions, environment context)."""
    stripped = text.strip()
    return stripped.startswith(_INJECTED_PREFIXES) or _ENVELOPE.match(stripped) is not None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _content_blocks(content: Any) -> list[Block] | None:
    """Text and image blocks of a message's `content`, or None for a shape Codex never writes."""
    if isinstance(content, str):
        return [Block("text", content)]
    if not isinstance(content, list):
        return None
    blocks = []
    for part in content:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("text"), str) and part.get("type") in ("input_text", "output_text", "text", None):
            blocks.append(Block("text", part["text"]))
        elif part.get("type") in ("input_image", "image"):
            blocks.append(Block("image"))
    return blocks


def _user_kind(text: str, has_image: bool) -> str:
    if not text.strip():
        return "prompt" if has_image else "user_meta"
    return "user_meta" if is_injected(text) else "prompt"


def _tool(name: str, args: dict[str, Any], call_id: str | None) -> ToolUse:
    """A tool call with the files it names (patch headers, shell arguments) resolved against its workdir."""
    workdir = _str(args.get("workdir")) or _str(args.get("working_directory"))
    command = args.get("command")
    paths: list[str] = []
    if name == "apply_patch":
        patch = args.get("input") or args.get("patch")
        paths = patch_paths(patch) if isinstance(patch, str) else []
    elif isinstance(command, (str, list)):
        paths = shell_paths(command)
    tool_input = dict(args)
    if isinstance(command, (str, list)):
        tool_input["command"] = command_text(command)
    return ToolUse(name, tool_input, call_id, [resolve(p, workdir) for p in paths])


class _Reader:
    """Turns the lines of one rollout into entries; remembers the old layout's header time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header_timestamp: str | None = None
        self.header_read = False

    def _old_timestamp(self) -> str | None:
        if not self.header_read:  # reading from an offset: the header is the file's first line
            self.header_read = True
            for line in read_jsonl(self.path):
                if isinstance(line.data, dict) and "type" not in line.data:
                    self.header_timestamp = normalize_timestamp(line.data.get("timestamp"))
                break
        return self.header_timestamp

    def parse(self, line: RawLine) -> Entry | BadLine | None:
        data = line.data
        if not isinstance(data, dict):
            return BadLine(line.line_index, "not a JSON object")
        kind = data.get("type")
        if isinstance(kind, str) and "payload" in data:
            payload = data["payload"]
            if not isinstance(payload, dict):
                return BadLine(line.line_index, f"{kind} line whose payload is not an object")
            timestamp = normalize_timestamp(data.get("timestamp"))
            if kind == "session_meta":
                return self._session_meta(line, payload, timestamp)
            if kind == "response_item":
                return _response_item(line.line_index, payload, timestamp)
            if kind == "event_msg":
                return _event(line.line_index, payload, timestamp)
            if kind == "turn_context":
                return Entry(
                    line.line_index, "turn_context", "other", timestamp=timestamp, cwd=_str(payload.get("cwd"))
                )
            if kind == "compacted":
                return _compacted(line.line_index, payload, timestamp)
            return Entry(line.line_index, kind, "other", timestamp=timestamp)
        if "record_type" in data:  # {"record_type": "state", …}: the old layout's resume marker
            return None
        if isinstance(kind, str):  # a bare response item (old layout)
            return _response_item(line.line_index, data, self._old_timestamp())
        if isinstance(data.get("id"), str) and "timestamp" in data:
            self.header_read = True
            self.header_timestamp = normalize_timestamp(data.get("timestamp"))
            return self._session_meta(line, data, self.header_timestamp)
        if set(data) <= {"previous_response_id"}:  # the earliest layout's trailing state object
            return None
        return Entry(line.line_index, "unknown", "other", timestamp=self._old_timestamp())

    def _session_meta(self, line: RawLine, payload: dict[str, Any], timestamp: str | None) -> Entry:
        git = payload.get("git") if isinstance(payload.get("git"), dict) else {}
        extra = {
            key: value
            for key, value in (
                ("cli_version", _str(payload.get("cli_version"))),
                ("originator", _str(payload.get("originator"))),
                ("git_branch", _str(git.get("branch"))),
                ("repository_url", _str(git.get("repository_url"))),
            )
            if value
        }
        return Entry(
            line.line_index,
            "session_meta",
            "other",
            timestamp=normalize_timestamp(payload.get("timestamp")) or timestamp,
            session_id=_str(payload.get("id")),
            cwd=_str(payload.get("cwd")),
            extra=extra,
        )


def _response_item(line_index: int, item: dict[str, Any], timestamp: str | None) -> Entry | BadLine:
    item_type = item.get("type")
    entry = Entry(line_index, f"response_item/{item_type}", "other", timestamp=timestamp)
    if item_type == "message":
        blocks = _content_blocks(item.get("content"))
        if blocks is None:
            return BadLine(line_index, "message content is neither text nor a list of parts")
        role = _str(item.get("role")) or "user"
        entry.role, entry.blocks = role, blocks
        if role == "assistant":
            entry.kind = "assistant"
        elif role == "user":
            has_image = any(b.kind == "image" for b in blocks)
            entry.kind = _user_kind(entry.text, has_image)  # type: ignore[assignment]
            context_cwd = _CONTEXT_CWD.search(entry.text) if entry.kind == "user_meta" else None
            entry.cwd = context_cwd.group(1).strip() if context_cwd else None
        else:  # developer / system instructions
            entry.kind = "user_meta"
    elif item_type == "reasoning":
        entry.kind, entry.role = "assistant", "assistant"
        for key in ("summary", "content"):
            parts = item.get(key)
            if isinstance(parts, list):
                entry.blocks += [
                    Block("thinking", p["text"])
                    for p in parts
                    if isinstance(p, dict) and isinstance(p.get("text"), str)
                ]
    elif item_type in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
        tool = _tool_call(item_type, item)
        if tool is None:
            return BadLine(line_index, f"{item_type} without a name")
        entry.kind, entry.role, entry.blocks = "assistant", "assistant", [Block("tool_use", tool=tool)]
        entry.cwd = _str(tool.input.get("workdir"))  # old rollouts name their folder nowhere else
    elif item_type in ("function_call_output", "custom_tool_call_output"):
        entry.kind, entry.role = "tool_result", "tool"
        entry.blocks = [Block("tool_result", tool_use_id=_str(item.get("call_id")))]
    elif item_type in ("compaction", "compaction_summary"):
        entry.kind = "compact_boundary"
    return entry


def _tool_call(item_type: str, item: dict[str, Any]) -> ToolUse | None:
    call_id = _str(item.get("call_id")) or _str(item.get("id"))
    if item_type == "function_call":
        name = _str(item.get("name"))
        if name is None:
            return None
        raw = item.get("arguments")
        args: Any = raw
        if isinstance(raw, str):
            try:
                args = orjson.loads(raw)
            except orjson.JSONDecodeError:
                args = {"arguments": raw}
        return _tool(name, args if isinstance(args, dict) else {}, call_id)
    if item_type == "custom_tool_call":
        name = _str(item.get("name"))
        if name is None:
            return None
        raw_input = item.get("input")
        return _tool(name, {"input": raw_input} if isinstance(raw_input, str) else {}, call_id)
    action = item.get("action") if isinstance(item.get("action"), dict) else {}
    if item_type == "local_shell_call":
        args = {"command": action.get("command"), "workdir": action.get("working_directory")}
        return _tool("local_shell", {k: v for k, v in args.items() if v is not None}, call_id)
    query = _str(action.get("query")) or _str(action.get("url"))
    return ToolUse("web_search", {"query": query} if query else {}, call_id)


def _event(line_index: int, event: dict[str, Any], timestamp: str | None) -> Entry | None:
    event_type = event.get("type")
    if event_type in _NOISE_EVENTS:
        return None
    entry = Entry(line_index, f"event_msg/{event_type}", "other", timestamp=timestamp)
    if event_type == "user_message":
        message = event.get("message") if isinstance(event.get("message"), str) else ""
        images = event.get("images") or event.get("local_images")
        entry.role = "user"
        entry.blocks = [Block("text", message)] + ([Block("image")] if images else [])
        entry.kind = _user_kind(message, bool(images))  # type: ignore[assignment]
        if event.get("kind") in ("user_instructions", "environment_context"):
            entry.kind = "user_meta"
    elif event_type == "context_compacted":
        entry.kind = "compact_boundary"
    return entry


def _compacted(line_index: int, payload: dict[str, Any], timestamp: str | None) -> Entry:
    message = _str(payload.get("message"))
    entry = Entry(line_index, "compacted", "compact_summary" if message else "compact_boundary", timestamp=timestamp)
    if message:
        entry.role, entry.blocks = "user", [Block("text", message)]
    return entry


def _flat(text: str) -> str:
    return " ".join(text.split())


def read_entries(
    path: Path, start_offset: int = 0, start_line: int = 0
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """Each line of a rollout from `start_offset`, with its normalised entry.

    A user response item directly followed by its `user_message` event becomes `other`: the event is the
    prompt. Lines are yielded in file order, so the item waits (with any noise after it) for the next line.
    """
    reader = _Reader(path)
    held: list[tuple[RawLine, Entry | BadLine | None]] = []
    last_event_prompt: str | None = None  # an event prompt not yet followed by the assistant's work
    for line in read_jsonl(path, start_offset, start_line):
        if line.error is not None:
            parsed: Entry | BadLine | None = BadLine(line.line_index, line.error)
        elif line.data is None:
            parsed = None
        else:
            parsed = reader.parse(line)
        if held and parsed is None:
            held.append((line, parsed))
            continue
        if held:
            if isinstance(parsed, Entry) and parsed.entry_type == "event_msg/user_message":
                held[0][1].kind = "other"  # type: ignore[union-attr]
            yield from held
            held.clear()
        if isinstance(parsed, Entry):
            if parsed.entry_type == "event_msg/user_message" and parsed.kind == "prompt":
                last_event_prompt = _flat(parsed.text)
            elif parsed.entry_type == "response_item/message" and parsed.role == "user" and parsed.kind == "prompt":
                if last_event_prompt is not None and _flat(parsed.text) == last_event_prompt:
                    parsed.kind = "other"  # the echo of the event just before it
                else:
                    held.append((line, parsed))
                    continue
            elif parsed.kind in ("assistant", "tool_result"):
                last_event_prompt = None
        yield line, parsed
    yield from held
