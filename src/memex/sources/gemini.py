"""Gemini CLI chats under `~/.gemini/tmp/<project hash or name>/chats/`, per the CLI's `chatRecordingTypes.ts`.

Two forms of one `ConversationRecord` {sessionId, projectHash, startTime, lastUpdated, messages[], summary?,
directories?, kind?}:
- legacy `session-*.json`: the whole record as one JSON document, rewritten on every change;
- `session-*.jsonl`: a header line, then message records (a whole message with an `id`; a later copy with
  the same id replaces it where it stood), `{"$set": {…}}` metadata updates (`messages` replaces the list)
  and `{"$rewindTo": id}`, which removes that message and every later one.
Subagent chats are `chats/<parent session id>/<agent id>.jsonl`, with `kind: "subagent"`.

A chat can lose or rewrite earlier messages, so it is re-read whole when it changes (`INCREMENTAL = False`).
Entries are numbered: 0 is the session header, 1…n the live messages in order, n+1 the closing metadata
(summary title, last update), then any record this module does not understand.

Gemini CLI 0.61 (Nov 2026): `--resume` rewrites the list through `$set.messages` from the model's history
(gemini messages as `content: [{functionCall}]`, results as synthetic `<id>_response` user messages, every
time set to the resume) and appends a second header with a new `startTime`. The records written before
still hold the tool calls, thoughts and times, so the list is rebuilt from them, and the session starts at
its first header. A subagent's answer is only in its `complete_task` call's arguments.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import orjson

from memex.errors import ChatTooLarge
from memex.sources.files import Skipped, candidates, open_regular, problem, real_path
from memex.sources.guard import checked, guarded
from memex.sources.injected import AgentReport, gemini_is_injected
from memex.sources.jsonl import DEFAULT_MAX_LINE_BYTES, RawLine, parse_json_line, read_jsonl, scrub
from memex.sources.model import BadLine, Block, Entry, ToolUse, Transcript
from memex.sources.shell import shell_paths
from memex.textutil import normalize_timestamp, strip_system_reminders

AGENT = "gemini"
INCREMENTAL = False  # re-read the whole file when it changes (see the module docstring)
PEEK_BYTES = 4096
_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"([^"]+)"')
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
# Subagents: the tool that runs one, the tool its answer comes back through, and how the answer is reported.
_INVOKE_AGENT = "invoke_agent"
_COMPLETE_TASK = "complete_task"
_AGENT_RESULT = re.compile(r"\nResult:\n(.*)$", re.DOTALL)
# A tool's output is read for pull request links up to this many characters.
MAX_OUTPUT_CHARS = 100_000
# `@file` mentions append the files' contents to the prompt after this marker.
_REFERENCED_FILES = "\n--- Content from referenced files ---"
# Chat compression records the model's `<state_snapshot>` as a user message, acknowledged by this reply.
_SNAPSHOT = "<state_snapshot>"
_COMPRESSION_ACK = "Got it. Thanks for the additional context!"
_RESPONSE_SUFFIX = "_response"
# Message types of `chatRecordingTypes.ts` (`model` in early versions); any other is counted as drift.
KNOWN_MESSAGE_TYPES = frozenset({"user", "gemini", "model", "info", "error", "warning"})
_BARE_COMMAND = re.compile(r"^[/?][\w:-]*$")
_WORKSPACE = re.compile(r"\*\*Workspace Directories:\*\*\s*\n((?:[ \t]*- .+\n?)+)")
# A JSON string, a bracket or a comma (to step over a value without parsing it).
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},]')
_WORKING_IN = re.compile(r"working in the directory:\s*(\S[^\n]*)")


# --- reading a chat --------------------------------------------------------------------------------


@dataclass
class Chat:
    """A chat replayed the way the CLI loads it: metadata, the live messages, and what could not be read."""

    meta: dict[str, Any] = field(default_factory=dict)
    messages: list[Any] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    repaired: bool = False
    unknown: list[tuple[int, str]] = field(default_factory=list)  # (line, `$operation`) not understood


def _decode(raw: bytes) -> tuple[str, bool]:
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), True


def _json_string(body: str) -> Any:
    """The value of a JSON string literal's body (without its quotes)."""
    return scrub(json.loads(f'"{body}"'))


def _salvage(text: str, chat: Chat, error: str) -> Chat:
    """What a cut or damaged JSON document still holds: its header fields and its complete messages."""
    for key in ("sessionId", "projectHash", "startTime", "lastUpdated", "kind", "summary"):
        found = re.search(rf'"{key}"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
        if found:
            value = guarded(0, partial(_json_string, found.group(1)))
            if isinstance(value, str):
                chat.meta[key] = value
    start = re.search(r'"messages"\s*:\s*\[', text)
    if start is None:
        chat.bad.append(BadLine(0, f"invalid JSON: {error}"))
        return chat
    decoder = json.JSONDecoder()
    position = start.end()
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text) or text[position] == "]":
            break
        try:
            message, position = decoder.raw_decode(text, position)
        except (json.JSONDecodeError, RecursionError) as exc:
            deep = isinstance(exc, RecursionError)
            reason = f"invalid JSON after message {len(chat.messages)}: {'nested too deeply' if deep else error}"
            chat.bad.append(BadLine(len(chat.messages), reason))
            end = _skip_value(text, position) if deep else None
            if end is None:
                break
            position = end  # a message nested too deeply to parse: the ones after it are still read
            continue
        chat.messages.append(scrub(message))
    return chat


def _skip_value(text: str, position: int) -> int | None:
    """The index just past the JSON value that starts at `position`, found by matching its brackets and
    strings without parsing it (so at any depth); None when the text ends first."""
    depth = 0
    for match in _JSON_TOKEN.finditer(text, position):
        token = match.group()
        if token in ("[", "{"):
            depth += 1
        elif token in ("]", "}"):
            depth -= 1
            if depth <= 0:
                return match.end() if depth == 0 else match.start()
        elif token == ",":
            if depth == 0:
                return match.start()
        elif depth == 0:  # a string at the top
            return match.end()
    return None


def _load_document(raw: bytes, chat: Chat) -> Chat:
    data, error, chat.repaired = parse_json_line(raw)
    if error is not None:
        return _salvage(_decode(raw)[0], chat, error.removeprefix("invalid JSON: "))
    if not isinstance(data, dict) or not isinstance(data.get("messages", []), list):
        chat.bad.append(BadLine(0, "not a Gemini chat (no messages list)"))
        return chat
    chat.messages = list(data.get("messages", []))
    chat.meta = {k: v for k, v in data.items() if k != "messages"}
    return chat


def _load_events(path: Path, max_line_bytes: int) -> Chat:
    chat = Chat()
    messages: dict[str, Any] = {}
    # Every message record ever written, by id: `--resume` rewrites the list (`$set.messages`) from the
    # model's history, which has lost the records' tool calls, thoughts and times; the records still have them.
    records: dict[str, Any] = {}
    header_seen = False
    # A last line without its newline is still being written: the reader leaves it out.
    for line in read_jsonl(path, max_line_bytes=max_line_bytes):
        number, data, error = line.line_index, line.data, line.error
        chat.repaired |= line.repaired
        if error is not None:
            chat.bad.append(BadLine(number, error))
            continue
        if data is None:
            continue
        if not isinstance(data, dict):
            chat.bad.append(BadLine(number, "not a JSON object"))
        elif isinstance(data.get("$rewindTo"), str):
            ids = list(messages)
            target = data["$rewindTo"]
            for message_id in ids[ids.index(target) :] if target in messages else ids:
                del messages[message_id]
        elif isinstance(data.get("id"), str):
            messages[data["id"]] = records[data["id"]] = data
        elif isinstance(data.get("$set"), dict):
            update = data["$set"]
            if isinstance(update.get("messages"), list):  # a checkpoint: the whole list again
                messages = _checkpoint(update["messages"], records)
            chat.meta.update({k: v for k, v in update.items() if k != "messages"})
        elif isinstance(data.get("sessionId"), str) and isinstance(data.get("projectHash"), str):
            header_seen = True
            # `--resume` appends a second header: the session started at the first one.
            first = {k: chat.meta[k] for k in ("startTime", "kind") if k in chat.meta}
            chat.meta.update({k: v for k, v in data.items() if k != "messages"}, **first)
            if isinstance(data.get("messages"), list):
                for message in data["messages"]:
                    if isinstance(message, dict) and isinstance(message.get("id"), str):
                        messages[message["id"]] = records[message["id"]] = message
        elif len(data) == 1 and next(iter(data)).startswith("$"):  # an operation this module does not know
            chat.unknown.append((number, next(iter(data))))
        else:
            chat.bad.append(BadLine(number, "not a Gemini chat record"))
    if not header_seen and not messages:
        raw = _read_whole(path, max_line_bytes, empty_if_larger=True)
        if raw.lstrip().startswith(b"{"):
            whole = _load_document(raw, Chat())  # the CLI's legacy fallback: one JSON document
            if whole.messages or whole.meta:
                return whole
    chat.messages = list(messages.values())
    return chat


def _checkpoint(listed: list[Any], records: dict[str, Any]) -> dict[str, Any]:
    """The messages of a `$set.messages` checkpoint, each as its own record when one was written.

    A resumed chat lists gemini messages as `content: [{functionCall}]` followed by synthetic
    `<id>_response` user messages holding the results: the record of `<id>` has both as `toolCalls`.
    """
    messages: dict[str, Any] = {}
    for message in listed:
        if not isinstance(message, dict) or not isinstance(message.get("id"), str):
            continue
        message_id = message["id"]
        call = records.get(message_id.removesuffix(_RESPONSE_SUFFIX)) if message_id.endswith(_RESPONSE_SUFFIX) else None
        if isinstance(call, dict) and call.get("toolCalls"):  # the results are in the call's record
            continue
        records.setdefault(message_id, message)
        messages[message_id] = records[message_id]
    return messages


def _read_whole(path: Path, max_line_bytes: int, empty_if_larger: bool = False) -> bytes:
    """The whole file, when it is at most `max_line_bytes` long (else ChatTooLarge, or b"" if `empty_if_larger`)."""
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_line_bytes:
            if empty_if_larger:
                return b""
            raise ChatTooLarge(f"a chat document of {size:,} bytes is over max_line_bytes ({max_line_bytes:,})")
        return handle.read(size)


def load_chat(path: Path, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Chat:
    """Read and replay one chat file (either form). A document over `max_line_bytes` raises ChatTooLarge."""
    if path.suffix == ".json":
        raw = _read_whole(path, max_line_bytes)
        return _load_document(raw, Chat()) if raw.strip() else Chat()
    return _load_events(path, max_line_bytes)


# --- the project folder ----------------------------------------------------------------------------


def project_hash(path: str) -> str:
    """The CLI's `getProjectHash`: SHA-256 of the project root as given."""
    return hashlib.sha256(path.encode("utf-8")).hexdigest()


def _chats_folder(path: Path) -> Path | None:
    if path.parent.name == "chats":
        return path.parent
    if path.parent.parent.name == "chats":
        return path.parent.parent
    return None


@lru_cache(maxsize=64)
def _registry(projects_json: Path, mtime_ns: int) -> dict[str, str]:
    """`~/.gemini/projects.json` inverted: project folder name (slug) -> project root."""
    try:
        data = orjson.loads(_read_whole(projects_json, DEFAULT_MAX_LINE_BYTES))
    except (OSError, ValueError):  # orjson.JSONDecodeError and ChatTooLarge are ValueErrors
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {slug: root for root, slug in projects.items() if isinstance(root, str) and isinstance(slug, str)}


def _registry_for(project_folder: Path) -> dict[str, str]:
    projects_json = project_folder.parent.parent / "projects.json"  # ~/.gemini/tmp/<folder> -> ~/.gemini
    try:
        return _registry(projects_json, projects_json.stat().st_mtime_ns)
    except OSError:
        return {}


def workspace_directories(text: str) -> list[str]:
    """The directories a `<session_context>` message names (the first is the project root)."""
    found = _WORKSPACE.search(text)
    if found:
        return [line.strip()[2:].strip() for line in found.group(1).splitlines() if line.strip().startswith("- ")]
    working = _WORKING_IN.search(text)
    return [working.group(1).strip()] if working else []


def find_project(path: Path, meta: dict[str, Any], context_dirs: list[str]) -> str | None:
    """The project root of a chat: the folder's `.project_root`, `projects.json`, or a path whose hash
    is the chat's `projectHash` (or the folder's name); failing those, the workspace the CLI reported."""
    chats = _chats_folder(path)
    folder = chats.parent if chats else None
    registry: dict[str, str] = {}
    if folder is not None:
        try:
            with open_regular(folder / ".project_root") as handle:
                marker = handle.read(PEEK_BYTES).decode("utf-8", "replace").strip()
            if marker:
                return marker
        except OSError:
            pass
        registry = _registry_for(folder)
        if folder.name in registry:
            return registry[folder.name]
    wanted = {h for h in (meta.get("projectHash"), folder.name if folder else None) if isinstance(h, str)}
    wanted = {h.lower() for h in wanted if _HEX64.match(h.lower())}
    listed = meta.get("directories")
    directories = [d for d in listed if isinstance(d, str)] if isinstance(listed, list) else []
    candidates = [*context_dirs, *directories, *registry.values()]
    for candidate in candidates:
        if project_hash(candidate) in wanted or project_hash(candidate.lower()) in wanted:
            return candidate
    return context_dirs[0] if context_dirs else (directories[0] if directories else None)


# --- discovery -------------------------------------------------------------------------------------


def _peek_session_id(path: Path) -> str | None:
    try:
        with open_regular(path) as handle:
            found = _SESSION_ID.search(handle.read(PEEK_BYTES))
    except OSError:
        return None
    return found.group(1).decode("utf-8", "replace") if found else None


def invoked_name(path: Path, agent_id: str) -> str | None:
    """The name a subagent was invoked by (`generalist`): its own chat names none, the parent's chat does,
    in the `invoke_agent` call carrying the subagent's id (`args.agent_name`, beside `agentId`). The parent
    chat (`chats/session-*-<parent id[:8]>.jsonl`) is searched mapped, the one line naming the id parsed;
    None while the parent has not recorded the call yet."""
    import mmap
    from collections import deque

    needle = re.compile(rb'"agentId"\s*:\s*"' + re.escape(agent_id.encode()) + rb'"')
    for parent in sorted(path.parent.parent.glob(f"session-*-{path.parent.name[:8]}.jsonl"), reverse=True):
        try:
            with open_regular(parent) as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                last = deque(needle.finditer(data), maxlen=1)  # the last record naming it
                if not last:
                    continue
                found = last[0]
                start = data.rfind(b"\n", 0, found.start()) + 1
                end = data.find(b"\n", found.end())
                line = data[start : end if end >= 0 else len(data)]
        except (OSError, ValueError):
            continue
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        name = _invocation_name(record, agent_id)
        if name:
            return name
    return None


def _invocation_name(value: Any, agent_id: str, depth: int = 6) -> str | None:
    """The `agent_name` of the `invoke_agent` call for `agent_id` in a record (a message's `toolCalls`, or
    a `$set` of messages), looked for no deeper than a call lies."""
    if depth == 0:
        return None
    if isinstance(value, list):
        return next((n for item in value if (n := _invocation_name(item, agent_id, depth - 1))), None)
    if not isinstance(value, dict):
        return None
    if value.get("agentId") == agent_id and value.get("name") == _INVOKE_AGENT:
        args = value.get("args")
        display = value.get("resultDisplay")
        return _str(args.get("agent_name") if isinstance(args, dict) else None) or _str(
            display.get("agentName") if isinstance(display, dict) else None
        )
    return next((n for item in value.values() if (n := _invocation_name(item, agent_id, depth - 1))), None)


def classify(path: Path, by_content: bool = True) -> Transcript | None:
    """A Gemini chat: `chats/session-*.json[l]`, a subagent's `chats/<parent id>/<agent id>.jsonl`, or (for
    a file given by hand, `by_content`) any JSON file that starts like a chat record."""
    if path.suffix not in (".json", ".jsonl"):
        return None
    if path.parent.name == "chats" and path.name.startswith("session-"):
        return Transcript(path, AGENT, _peek_session_id(path) or path.stem)
    if path.parent.parent.name == "chats" and path.suffix == ".jsonl":
        agent_id = _peek_session_id(path) or path.stem
        return Transcript(path, AGENT, path.parent.name, agent_id, agent_type=invoked_name(path, agent_id))
    if by_content:
        try:
            with open_regular(path) as handle:
                head = handle.read(PEEK_BYTES)
        except OSError:
            return None
        session = _SESSION_ID.search(head)
        if session and b'"projectHash"' in head:
            return Transcript(path, AGENT, session.group(1).decode("utf-8", "replace"))
    return None


def _preference(transcript: Transcript) -> tuple[bool, float]:
    """Among files holding one session: the `.jsonl` (newer form), then the most recently written."""
    try:
        mtime = transcript.path.stat().st_mtime
    except OSError:
        mtime = 0.0
    return transcript.path.suffix == ".jsonl", mtime


def _dedupe(transcripts: Iterable[Transcript]) -> list[Transcript]:
    groups: dict[tuple[str, str | None], list[Transcript]] = {}
    for transcript in transcripts:
        groups.setdefault((transcript.session_id, transcript.subagent_id), []).append(transcript)
    chosen = []
    for group in groups.values():
        group.sort(key=_preference, reverse=True)
        best = group[0]
        best.aliases = tuple(t.path for t in group[1:])
        chosen.append(best)
    return chosen


def discover(roots: Iterable[Path], skipped: list[Skipped] | None = None) -> list[Transcript]:
    """Every chat under `roots`, one file per session (folders are searched for `chats/`). Files named
    like chats that cannot be read go to `skipped`."""
    found: dict[Path, Transcript] = {}

    def in_chats(path: Path) -> bool:
        return path.suffix in (".json", ".jsonl") and _chats_folder(path) is not None

    canonical: set[Path] = set()
    for path, by_content in candidates(roots, "*.json*", in_chats, skipped, canonical):
        transcript = classify(path, by_content)
        if transcript is not None:
            found[real_path(path, canonical)] = transcript
    return sorted(_dedupe(found.values()), key=lambda t: (t.subagent_id is not None, str(t.path)))


def subagent_transcripts(session_path: Path) -> list[Transcript]:
    """The subagent chats of one session: `chats/<session id>/*.jsonl`."""
    session_id = _peek_session_id(session_path)
    if session_id is None:
        return []
    folder = session_path.parent / session_id
    if not folder.is_dir():
        return []
    found = (classify(p, by_content=False) for p in sorted(folder.glob("*.jsonl")) if problem(p) is None)
    return _dedupe(t for t in found if t is not None)


# --- normalisation ---------------------------------------------------------------------------------


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _parts(content: Any) -> list[dict[str, Any]] | None:
    """A `PartListUnion` as a list of parts (a string is one text part); None for any other shape."""
    if isinstance(content, str):
        return [{"text": content}]
    if isinstance(content, dict):
        return [content]
    if isinstance(content, list):
        return [{"text": p} if isinstance(p, str) else p for p in content if isinstance(p, (str, dict))]
    if content is None:
        return []
    return None


def _text(parts: list[dict[str, Any]], drop_injected: bool = False) -> str:
    texts = []
    for part in parts:
        text = part.get("text")
        if not isinstance(text, str) or part.get("thought") is True:
            continue
        if drop_injected and gemini_is_injected(text):
            continue
        texts.append(text)
    return "".join(texts)


def _tool(call: dict[str, Any]) -> ToolUse | None:
    name = _str(call.get("name"))
    if name is None:
        return None
    args = args_ if isinstance(args_ := call.get("args"), dict) else {}
    paths: list[str] = []
    command = args.get("command")
    if isinstance(command, str):
        paths = shell_paths(command)
    many = args.get("paths") or args.get("file_paths")
    if isinstance(many, list):
        paths += [p for p in many if isinstance(p, str) and "*" not in p]
    return ToolUse(name, args, _str(call.get("id")), paths)


def _response_text(parts: Any) -> str:
    """The text of `functionResponse` parts (a tool's output), cut at MAX_OUTPUT_CHARS."""
    texts = []
    for part in _parts(parts) or []:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        body = response.get("response") if isinstance(response, dict) else None
        if isinstance(body, dict):
            body = body.get("output") if isinstance(body.get("output"), str) else body.get("error")
        if isinstance(body, str):
            texts.append(body)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts)[:MAX_OUTPUT_CHARS]


def _answer(call: dict[str, Any]) -> str | None:
    """What a subagent answered through `complete_task` (its only record of it), or what a subagent
    reported to the agent that invoked it (`invoke_agent`'s output)."""
    args = args_ if isinstance(args_ := call.get("args"), dict) else {}
    if call.get("name") == _COMPLETE_TASK:
        result = args.get("result")
        if isinstance(result, dict):
            result = result.get("response")
        return result.strip() if isinstance(result, str) and result.strip() else None
    if call.get("name") == _INVOKE_AGENT:
        output = _response_text(call.get("result"))
        found = _AGENT_RESULT.search(output)
        if not found:
            return None
        result = found.group(1).strip()
        try:
            data = orjson.loads(result)
        except orjson.JSONDecodeError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("response"), str):
            result = data["response"].strip()
        agent = _str(args.get("agent_name"))
        return AgentReport(_str(call.get("agentId")), agent, result).text() if result else None
    return None


def _user_entry(entry: Entry, message: dict[str, Any]) -> Entry | BadLine:
    parts = _parts(message.get("content"))
    if parts is None:
        return BadLine(entry.line_index, "user message content is neither text nor parts")
    entry.role = "user"
    if parts and all("functionResponse" in p for p in parts):
        entry.kind = "tool_result"
        response = parts[0].get("functionResponse") if isinstance(parts[0], dict) else None
        call_id = _str(response.get("id")) if isinstance(response, dict) else None  # names the tool that ran
        entry.blocks = [Block("tool_result", _response_text(parts), tool_use_id=call_id)]
        return entry
    full = _text(parts)
    shown = _parts(message.get("displayContent"))  # what was typed, when the CLI expanded it
    text = _text(shown, drop_injected=True) if shown else _text(parts, drop_injected=True)
    text = strip_system_reminders(text.split(_REFERENCED_FILES, 1)[0])
    has_image = any("inlineData" in p or "fileData" in p for p in parts)
    if full.lstrip().startswith(_SNAPSHOT):
        entry.kind, entry.blocks = "compact_summary", [Block("text", full.strip())]
        return entry
    if not text.strip():
        entry.kind = "prompt" if has_image and not full.strip() else "user_meta"
        entry.blocks = [Block("text", full)] + ([Block("image")] if has_image else [])
        return entry
    entry.blocks = [Block("text", text)] + ([Block("image")] if has_image else [])
    entry.kind = "user_meta" if _BARE_COMMAND.match(text.strip()) else "prompt"
    return entry


def _gemini_entry(entry: Entry, message: dict[str, Any]) -> Entry | BadLine:
    parts = _parts(message.get("content"))
    if parts is None:
        return BadLine(entry.line_index, "gemini message content is neither text nor parts")
    entry.kind, entry.role, entry.message_id = "assistant", "assistant", entry.uuid
    thoughts = message.get("thoughts")
    for thought in thoughts if isinstance(thoughts, list) else []:
        if isinstance(thought, dict):
            subject, description = _str(thought.get("subject")), _str(thought.get("description"))
            entry.blocks.append(Block("thinking", ": ".join(t for t in (subject, description) if t)))
    for part in parts:  # the model's history form (a resumed chat): thoughts and calls as parts
        if part.get("thought") is True and isinstance(part.get("text"), str):
            entry.blocks.append(Block("thinking", part["text"]))
    text = strip_system_reminders(_text(parts))
    if text.strip() and text.strip() != _COMPRESSION_ACK:
        entry.blocks.append(Block("text", text))
    calls = [c for c in message.get("toolCalls") or [] if isinstance(c, dict)]
    recorded = {c.get("id") for c in calls}
    calls += [
        p["functionCall"]
        for p in parts
        if isinstance(p.get("functionCall"), dict) and p["functionCall"].get("id") not in recorded
    ]
    for call in calls:
        tool = _tool(call)
        if tool is None:
            continue
        entry.blocks.append(Block("tool_use", tool=tool))
        answer = _answer(call)
        if answer:
            entry.blocks.append(Block("text", answer))
        if call.get("result") is not None:
            entry.blocks.append(Block("tool_result", _response_text(call["result"]), tool_use_id=tool.id))
    return entry


def message_entry(line_index: int, message: Any) -> Entry | BadLine:
    """One chat message as an entry."""
    if not isinstance(message, dict):
        return BadLine(line_index, "message is not a JSON object")
    message_type = message.get("type")
    if not isinstance(message_type, str):
        return BadLine(line_index, "message without a type")
    entry = Entry(
        line_index,
        message_type,
        "other",
        timestamp=normalize_timestamp(message.get("timestamp")),
        uuid=_str(message.get("id")),
    )
    if message_type == "user":
        return _user_entry(entry, message)
    if message_type in ("gemini", "model"):
        return _gemini_entry(entry, message)
    entry.unknown = message_type not in KNOWN_MESSAGE_TYPES
    parts = _parts(message.get("content")) or []
    text = _text(parts)
    if text:  # info, error, warning: the CLI's own notices, kept as data
        entry.blocks = [Block("text", text)]
    return entry


def chat_entries(path: Path, chat: Chat, subagent: bool = False) -> list[Entry | BadLine]:
    """The entries of a replayed chat: header, messages, closing metadata."""
    meta = chat.meta
    entries: list[Entry | BadLine] = [
        checked(n, partial(message_entry, n, m)) or BadLine(n, "empty message") for n, m in enumerate(chat.messages, 1)
    ]
    context_dirs: list[str] = []
    for entry in entries:
        if isinstance(entry, Entry) and entry.entry_type == "user":
            first = chat.messages[entry.line_index - 1]
            full = _text(_parts(first.get("content")) or [])
            if full.lstrip().startswith("<session_context>"):
                context_dirs = workspace_directories(full)
            break
    project = find_project(path, meta, context_dirs)
    header = Entry(
        0,
        "session",
        "other",
        timestamp=normalize_timestamp(meta.get("startTime")),
        session_id=_str(meta.get("sessionId")),
        cwd=project,
        extra={"kind": meta.get("kind") or ("subagent" if subagent else "main")},
    )
    if project is None and isinstance(meta.get("projectHash"), str):
        header.extra["project_hash"] = meta["projectHash"]
    closing = Entry(len(chat.messages) + 1, "metadata", "other", timestamp=normalize_timestamp(meta.get("lastUpdated")))
    summary = _str(meta.get("summary"))
    if summary:
        closing.kind, closing.blocks = "summary", [Block("text", summary)]
        closing.extra["title"] = summary
    for entry in entries:
        if isinstance(entry, Entry) and project:
            entry.cwd = project
    # Operations of a newer CLI (`{"$push": …}`…): data to count, after everything this module understood.
    unknown = [Entry(closing.line_index + n, op, "other", unknown=True) for n, (_, op) in enumerate(chat.unknown, 1)]
    return [header, *entries, closing, *unknown]


def read_entries(
    path: Path, start_offset: int = 0, start_line: int = 0, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """The whole chat, replayed (offsets are ignored: see `INCREMENTAL`). Unreadable records come first."""
    size = path.stat().st_size
    chat = load_chat(path, max_line_bytes)
    subagent = _chats_folder(path) is not None and path.parent.name != "chats"
    first = True
    for bad in chat.bad:
        yield RawLine(bad.line_index, 0, size, None, bad.reason, chat.repaired and first), bad
        first = False
    if not chat.meta and not chat.messages:
        return
    for entry in chat_entries(path, chat, subagent):
        yield RawLine(entry.line_index, 0, size, None, None, chat.repaired and first), entry
        first = False
