"""Helpers the newer agents' adapters share: typed reads of JSON values, tool calls, JSONL reading.

Every agent added after Claude, Codex and Gemini writes records that differ in names but not in kind: a
prompt, the model's text and tool calls, tool results. These helpers keep each adapter to its format.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from memex.sources.gemini import _skip_value as skip_value
from memex.sources.guard import checked, guarded
from memex.sources.jsonl import DEFAULT_MAX_LINE_BYTES, RawLine, parse_json_line, read_jsonl, scrub
from memex.sources.model import BadLine, Block, Entry, ToolUse
from memex.sources.shell import command_text, resolve, shell_paths

# A tool's output is kept (in memory: pull request links are read from it) up to this many characters.
MAX_OUTPUT_CHARS = 100_000
# Argument keys under which the agents' tools name one file, and lists of files.
_FILE_KEYS = ("path", "file_path", "filePath", "absolute_path", "file", "filename", "target_file", "notebook_path")
_FILES_KEYS = ("paths", "files", "file_paths")
_COMMAND_KEYS = ("command", "cmd", "commands")


def text(value: Any) -> str | None:
    """`value` when it is a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def obj(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def items(value: Any) -> list[Any]:
    """`value` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def arguments(value: Any) -> dict[str, Any]:
    """A tool call's arguments: an object, or an object encoded as a JSON string (OpenAI's wire form)."""
    if isinstance(value, str):
        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError:
            return {"arguments": value}
    return value if isinstance(value, dict) else {}


def output_text(value: Any) -> str:
    """A tool's output as text: a string, content parts (`{text}`), or any JSON value serialised."""
    if isinstance(value, str):
        found = value
    elif isinstance(value, list):
        found = "\n".join(output_text(part) for part in value)
    elif isinstance(value, dict):
        for key in ("text", "output", "content", "result", "stdout"):
            if key in value:
                return output_text(value[key])
        found = ""
    else:
        found = ""
    return found[:MAX_OUTPUT_CHARS]


def content_text(content: Any, types: tuple[str | None, ...] = ("text", "input_text", "output_text", None)) -> str:
    """The text parts of a message's content (a string, or a list of `{type, text}` parts), joined."""
    if isinstance(content, str):
        return content
    parts = [p.get("text") for p in items(content) if isinstance(p, dict) and p.get("type") in types]
    return "\n\n".join(p for p in parts if isinstance(p, str) and p)


def _paths_in(args: dict[str, Any]) -> list[str]:
    found = [args[key] for key in _FILE_KEYS if isinstance(args.get(key), str) and args[key].strip()]
    for key in _FILES_KEYS:
        for item in items(args.get(key)):
            if isinstance(item, str) and "*" not in item:
                found.append(item)
            elif isinstance(item, dict):
                found += [item[k] for k in _FILE_KEYS if isinstance(item.get(k), str) and item[k].strip()]
    return found


def tool_use(name: str, args: dict[str, Any], call_id: str | None = None, workdir: str | None = None) -> ToolUse:
    """A tool call with the files it names: file arguments, and the files a shell command reads or writes.

    Its input keeps `command` as one line of text (a list of commands joined), which the tool summary lists.
    """
    tool_input = dict(args)
    paths = _paths_in(args)
    for key in _COMMAND_KEYS:
        command = args.get(key)
        if isinstance(command, list) and all(isinstance(c, str) for c in command) and key == "commands":
            for one in command:
                paths += shell_paths(one)
            tool_input["command"] = "; ".join(command)
            break
        if isinstance(command, (str, list)):
            paths += shell_paths(command)
            tool_input["command"] = command_text(command)
            break
    workdir = workdir or text(args.get("cwd")) or text(args.get("workdir"))
    return ToolUse(name, tool_input, call_id, list(dict.fromkeys(resolve(p, workdir) for p in paths)))


def tool_block(name: Any, args: Any, call_id: Any = None, workdir: str | None = None) -> Block | None:
    """A `tool_use` block, or None when the call has no name."""
    if not isinstance(name, str) or not name:
        return None
    return Block("tool_use", tool=tool_use(name, arguments(args), text(call_id), workdir))


def assistant_blocks(parts: list[Any]) -> list[Block]:
    """The text, thinking and tool-call blocks of an assistant message's content parts (Anthropic's shapes:
    `text`, `thinking`/`reasoning`, `tool_use`); other parts are left out."""
    blocks: list[Block] = []
    for part in map(obj, parts):
        kind = part.get("type")
        if kind == "text" and text(part.get("text")):
            blocks.append(Block("text", part["text"]))
        elif kind in ("thinking", "reasoning") and text(part.get("thinking") or part.get("text")):
            blocks.append(Block("thinking", part.get("thinking") or part["text"]))
        elif kind == "tool_use":
            block = tool_block(part.get("name"), part.get("input"), part.get("id"))
            if block is not None:
                blocks.append(block)
    return blocks


def jsonl_entries(
    path: Path,
    start_offset: int,
    start_line: int,
    max_line_bytes: int,
    parse: Callable[[int, dict[str, Any]], Entry | BadLine | None],
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """Each line of a JSONL transcript with `parse`'s entry for it (guarded: a record that breaks the parser
    is a bad line); a line that is not JSON, or not an object, is a bad line; a blank line has no entry."""
    for line in read_jsonl(path, start_offset, start_line, max_line_bytes):
        if line.error is not None:
            yield line, BadLine(line.line_index, line.error)
        elif line.data is None:
            yield line, None
        elif not isinstance(line.data, dict):
            yield line, BadLine(line.line_index, "not a JSON object")
        else:
            data = line.data
            yield line, checked(line.line_index, partial(parse, line.line_index, data))


def first_record(path: Path, peek_bytes: int = 65_536) -> dict[str, Any] | None:
    """The first line of a JSONL file as an object (read up to `peek_bytes`), or None."""
    try:
        for line in read_jsonl(path, max_line_bytes=max(peek_bytes, 65_536)):
            if line.data is None and line.error is None:
                continue
            return line.data if isinstance(line.data, dict) else None
    except OSError:
        return None
    return None


def load_document(path: Path, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> tuple[Any, str | None]:
    """A whole JSON document: (value, None), or (None, why it cannot be read). Larger than `max_line_bytes`:
    not read."""
    from memex.sources.files import open_regular

    with open_regular(path) as handle:
        size = handle.seek(0, 2)
        if size > max_line_bytes:
            return None, f"a document of {size:,} bytes is over max_line_bytes ({max_line_bytes:,})"
        handle.seek(0)
        raw = handle.read(size)
    if not raw.strip():
        return None, None
    value, error, _ = parse_json_line(raw)
    if error is None:
        return value, None
    text = raw.decode("utf-8", "replace")
    try:  # orjson refuses integers past 64 bits; the standard parser reads them
        return scrub(json.loads(text, parse_constant=_no_constant)), None
    except (ValueError, RecursionError):
        salvaged = salvage(text)
        return (salvaged, None) if salvaged is not None else (None, error)


_LIST_START = re.compile(r'^\s*\[|"messages"\s*:\s*\[')
_HEADER_TEXT = re.compile(r'"(sessionId|version)"\s*:\s*"((?:[^"\\]|\\.)*)"')


def salvage(text: str) -> Any | None:
    """What a damaged document still holds: its message list (the whole document, or its `messages`), each
    message parsed alone, one that cannot be parsed kept as None so the others keep their places; and the
    document's `sessionId`. None when no list is found."""
    start = _LIST_START.search(text)
    if start is None:
        return None
    decoder = json.JSONDecoder(parse_constant=_no_constant)
    messages: list[Any] = []
    position = start.end()
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text) or text[position] == "]":
            break
        try:
            message, position = decoder.raw_decode(text, position)
            messages.append(scrub(message))
        except (ValueError, RecursionError):
            end = skip_value(text, position)
            if end is None or end <= position:
                break
            messages.append(None)
            position = end
    if start.group(0).lstrip().startswith("["):
        return messages
    header = {match.group(1): match.group(2) for match in _HEADER_TEXT.finditer(text[: start.start()])}
    return {**header, "messages": messages}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def document_entries(
    path: Path,
    max_line_bytes: int,
    records: Callable[[Any], list[Any]],
    parse: Callable[[int, Any], Entry | BadLine | None],
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """The entries of a whole JSON document, numbered by record: `records` lists what the document holds
    (a session header first, then its messages), `parse` reads one (guarded: a record that breaks it is a
    bad line). Offsets mean nothing here: such a document is re-read whole when it changes."""
    from memex.sources.files import open_regular

    with open_regular(path) as handle:
        size = handle.seek(0, 2)
    value, error = load_document(path, max_line_bytes)
    if error is None and value is not None:
        listed = guarded(0, lambda: records(value))
        error = listed.reason if isinstance(listed, BadLine) else None
    if error is not None:
        yield RawLine(0, 0, size, None, error), BadLine(0, error)
        return
    if value is None:
        return
    assert isinstance(listed, list)
    for index, record in enumerate(listed):
        yield RawLine(index, 0, size, None), checked(index, partial(parse, index, record))
