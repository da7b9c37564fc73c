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
(summary title, last update).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from memex.sources.jsonl import RawLine, parse_json_line
from memex.sources.model import BadLine, Block, Entry, ToolUse, Transcript
from memex.sources.shell import shell_paths
from memex.textutil import normalize_timestamp, strip_system_reminders

AGENT = "gemini"
INCREMENTAL = False  # re-read the whole file when it changes (see the module docstring)
PEEK_BYTES = 4096
_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"([^"]+)"')
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
# Text the CLI puts into user messages itself (`isIgnoredUserContent` in the CLI's sessionUtils.ts).
_INJECTED_PREFIXES = ("<session_context>", "<hook_context>")
# `@file` mentions append the files' contents to the prompt after this marker.
_REFERENCED_FILES = "\n--- Content from referenced files ---"
# Chat compression records the model's `<state_snapshot>` as a user message, acknowledged by this reply.
_SNAPSHOT = "<state_snapshot>"
_COMPRESSION_ACK = "Got it. Thanks for the additional context!"
_BARE_COMMAND = re.compile(r"^[/?][\w:-]*$")
_WORKSPACE = re.compile(r"\*\*Workspace Directories:\*\*\s*\n((?:[ \t]*- .+\n?)+)")
_WORKING_IN = re.compile(r"working in the directory:\s*(\S[^\n]*)")


# --- reading a chat --------------------------------------------------------------------------------


@dataclass
class Chat:
    """A chat replayed the way the CLI loads it: metadata, the live messages, and what could not be read."""

    meta: dict[str, Any] = field(default_factory=dict)
    messages: list[Any] = field(default_factory=list)
    bad: list[BadLine] = field(default_factory=list)
    repaired: bool = False


def _decode(raw: bytes) -> tuple[str, bool]:
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace"), True


def _salvage(text: str, chat: Chat, error: str) -> Chat:
    """What a cut or damaged JSON document still holds: its header fields and its complete messages."""
    for key in ("sessionId", "projectHash", "startTime", "lastUpdated", "kind", "summary"):
        found = re.search(rf'"{key}"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
        if found:
            chat.meta[key] = json.loads(f'"{found.group(1)}"')
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
        except json.JSONDecodeError:
            chat.bad.append(BadLine(len(chat.messages), f"invalid JSON after message {len(chat.messages)}: {error}"))
            break
        chat.messages.append(message)
    return chat


def _load_document(raw: bytes, chat: Chat) -> Chat:
    text, chat.repaired = _decode(raw)
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        return _salvage(text, chat, str(exc))
    if not isinstance(data, dict) or not isinstance(data.get("messages", []), list):
        chat.bad.append(BadLine(0, "not a Gemini chat (no messages list)"))
        return chat
    chat.messages = list(data.get("messages", []))
    chat.meta = {k: v for k, v in data.items() if k != "messages"}
    return chat


def _load_events(raw: bytes) -> Chat:
    chat = Chat()
    messages: dict[str, Any] = {}
    header_seen = False
    lines = raw.split(b"\n")
    for number, line in enumerate(lines):
        body = line.strip()
        if not body:
            continue
        data, error, repaired = parse_json_line(body)
        chat.repaired |= repaired
        if error is not None:
            if number < len(lines) - 1:  # a last line without its newline is still being written
                chat.bad.append(BadLine(number, error))
            continue
        if not isinstance(data, dict):
            chat.bad.append(BadLine(number, "not a JSON object"))
        elif isinstance(data.get("$rewindTo"), str):
            ids = list(messages)
            target = data["$rewindTo"]
            for message_id in ids[ids.index(target) :] if target in messages else ids:
                del messages[message_id]
        elif isinstance(data.get("id"), str):
            messages[data["id"]] = data
        elif isinstance(data.get("$set"), dict):
            update = data["$set"]
            if isinstance(update.get("messages"), list):  # a checkpoint: the whole list again
                messages = {
                    m["id"]: m for m in update["messages"] if isinstance(m, dict) and isinstance(m.get("id"), str)
                }
            chat.meta.update({k: v for k, v in update.items() if k != "messages"})
        elif isinstance(data.get("sessionId"), str) and isinstance(data.get("projectHash"), str):
            header_seen = True
            chat.meta.update({k: v for k, v in data.items() if k != "messages"})
            if isinstance(data.get("messages"), list):
                for message in data["messages"]:
                    if isinstance(message, dict) and isinstance(message.get("id"), str):
                        messages[message["id"]] = message
        else:
            chat.bad.append(BadLine(number, "not a Gemini chat record"))
    if not header_seen and not messages and raw.lstrip().startswith(b"{"):
        whole = _load_document(raw, Chat())  # the CLI's legacy fallback: one JSON document
        if whole.messages or whole.meta:
            return whole
    chat.messages = list(messages.values())
    return chat


def load_chat(path: Path) -> Chat:
    """Read and replay one chat file (either form)."""
    raw = path.read_bytes()
    if not raw.strip():
        return Chat()
    if path.suffix == ".json":
        return _load_document(raw, Chat())
    return _load_events(raw)


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
        data = orjson.loads(projects_json.read_bytes())
    except (OSError, orjson.JSONDecodeError):
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
            marker = (folder / ".project_root").read_text(encoding="utf-8").strip()
            if marker:
                return marker
        except OSError:
            pass
        registry = _registry_for(folder)
        if folder.name in registry:
            return registry[folder.name]
    wanted = {h for h in (meta.get("projectHash"), folder.name if folder else None) if isinstance(h, str)}
    wanted = {h.lower() for h in wanted if _HEX64.match(h.lower())}
    directories = [d for d in meta.get("directories") or [] if isinstance(d, str)]
    candidates = [*context_dirs, *directories, *registry.values()]
    for candidate in candidates:
        if project_hash(candidate) in wanted or project_hash(candidate.lower()) in wanted:
            return candidate
    return context_dirs[0] if context_dirs else (directories[0] if directories else None)


# --- discovery -------------------------------------------------------------------------------------


def _peek_session_id(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            found = _SESSION_ID.search(handle.read(PEEK_BYTES))
    except OSError:
        return None
    return found.group(1).decode("utf-8", "replace") if found else None


def classify(path: Path, by_content: bool = True) -> Transcript | None:
    """A Gemini chat: `chats/session-*.json[l]`, a subagent's `chats/<parent id>/<agent id>.jsonl`, or (for
    a file given by hand, `by_content`) any JSON file that starts like a chat record."""
    if path.suffix not in (".json", ".jsonl"):
        return None
    if path.parent.name == "chats" and path.name.startswith("session-"):
        return Transcript(path, AGENT, _peek_session_id(path) or path.stem)
    if path.parent.parent.name == "chats" and path.suffix == ".jsonl":
        return Transcript(path, AGENT, path.parent.name, _peek_session_id(path) or path.stem)
    if by_content:
        try:
            with path.open("rb") as handle:
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


def discover(roots: Iterable[Path]) -> list[Transcript]:
    """Every chat under `roots`, one file per session (folders are searched for `chats/`)."""
    found: dict[Path, Transcript] = {}
    for root in roots:
        if root.is_file():
            candidates: Iterable[tuple[Path, bool]] = [(root, True)]
        elif root.is_dir():
            candidates = ((p, False) for p in sorted(root.rglob("*.json*")) if _chats_folder(p) is not None)
        else:
            continue
        for path, by_content in candidates:
            transcript = classify(path, by_content)
            if transcript is not None:
                found[path.resolve()] = transcript
    return sorted(_dedupe(found.values()), key=lambda t: (t.subagent_id is not None, str(t.path)))


def subagent_transcripts(session_path: Path) -> list[Transcript]:
    """The subagent chats of one session: `chats/<session id>/*.jsonl`."""
    session_id = _peek_session_id(session_path)
    if session_id is None:
        return []
    folder = session_path.parent / session_id
    if not folder.is_dir():
        return []
    found = (classify(p, by_content=False) for p in sorted(folder.glob("*.jsonl")))
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
        if drop_injected and text.lstrip().startswith(_INJECTED_PREFIXES):
            continue
        texts.append(text)
    return "".join(texts)


def _tool(call: dict[str, Any]) -> ToolUse | None:
    name = _str(call.get("name"))
    if name is None:
        return None
    args = call.get("args") if isinstance(call.get("args"), dict) else {}
    paths: list[str] = []
    command = args.get("command")
    if isinstance(command, str):
        paths = shell_paths(command)
    many = args.get("paths") or args.get("file_paths")
    if isinstance(many, list):
        paths += [p for p in many if isinstance(p, str) and "*" not in p]
    return ToolUse(name, args, _str(call.get("id")), paths)


def _user_entry(entry: Entry, message: dict[str, Any]) -> Entry | BadLine:
    parts = _parts(message.get("content"))
    if parts is None:
        return BadLine(entry.line_index, "user message content is neither text nor parts")
    entry.role = "user"
    if parts and all("functionResponse" in p for p in parts):
        entry.kind = "tool_result"
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
    for thought in message.get("thoughts") or []:
        if isinstance(thought, dict):
            subject, description = _str(thought.get("subject")), _str(thought.get("description"))
            entry.blocks.append(Block("thinking", ": ".join(t for t in (subject, description) if t)))
    text = strip_system_reminders(_text(parts))
    if text.strip() and text.strip() != _COMPRESSION_ACK:
        entry.blocks.append(Block("text", text))
    calls = message.get("toolCalls")
    for call in calls if isinstance(calls, list) else []:
        tool = _tool(call) if isinstance(call, dict) else None
        if tool is not None:
            entry.blocks.append(Block("tool_use", tool=tool))
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
    parts = _parts(message.get("content")) or []
    text = _text(parts)
    if text:  # info, error, warning: the CLI's own notices, kept as data
        entry.blocks = [Block("text", text)]
    return entry


def chat_entries(path: Path, chat: Chat, subagent: bool = False) -> list[Entry | BadLine]:
    """The entries of a replayed chat: header, messages, closing metadata."""
    meta = chat.meta
    entries: list[Entry | BadLine] = [message_entry(n, m) for n, m in enumerate(chat.messages, 1)]
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
    return [header, *entries, closing]


def read_entries(
    path: Path, start_offset: int = 0, start_line: int = 0
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """The whole chat, replayed (offsets are ignored: see `INCREMENTAL`). Unreadable records come first."""
    size = path.stat().st_size
    chat = load_chat(path)
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
