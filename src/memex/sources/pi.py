"""Pi coding agent sessions: `~/.pi/agent/sessions/--<cwd with / as ->--/<time>_<uuid>.jsonl`.

The package's `docs/session-format.md` (version 3): line 1 is `{type: "session", version, id, timestamp, cwd}`;
every later line has an `id` and a `parentId` (a tree: branching happens in place, and every branch's
records are kept, in the order written). Types: `message` (`message.role` `user`, `assistant` with
`content[{text} | {toolCall: id, name, arguments}]`, `toolResult` with `toolCallId`, `bashExecution` for a
command the user ran, and `custom`/`branchSummary`/`compactionSummary`), `compaction` (`summary`),
`branch_summary`, `session_info` (`name`: the session's title), `model_change`, `thinking_level_change`,
`custom`, `custom_message`, `label`. `-c` appends to the same file. `PI_CODING_AGENT_DIR` moves `~/.pi/agent`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from memex.sources.files import Skipped, candidates, safe_resolve
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

AGENT = "pi"
INCREMENTAL = True
KNOWN_TYPES = frozenset(
    {
        "session",
        "message",
        "compaction",
        "branch_summary",
        "session_info",
        "model_change",
        "thinking_level_change",
        "custom",
        "custom_message",
        "label",
        "leaf",
    }
)
_SETTINGS = frozenset({"model_change", "thinking_level_change", "label", "leaf", "custom"})
_UUID_TAIL = re.compile(r"_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE)


# --- discovery -------------------------------------------------------------------------------------


def _is_header(record: dict[str, Any] | None) -> bool:
    return (
        record is not None
        and record.get("type") == "session"
        and isinstance(record.get("id"), str)
        and isinstance(record.get("version"), int)
        and "cwd" in record
    )


def classify(path: Path) -> Transcript | None:
    """A Pi session: a JSONL file whose first line is its `session` header."""
    if path.suffix != ".jsonl":
        return None
    first = first_record(path)
    if not _is_header(first):
        return None
    assert first is not None
    return Transcript(path, AGENT, first["id"])


def discover(roots: Iterable[Path], skipped: list[Skipped] | None = None) -> list[Transcript]:
    """Every session under `roots` (`--<folder>--/<time>_<uuid>.jsonl`; files given by hand: by content)."""
    found: dict[Path, Transcript] = {}

    def named_like_pi(path: Path) -> bool:
        return path.parent.name.startswith("--") or _UUID_TAIL.search(path.stem) is not None

    for path, _ in candidates(roots, "*.jsonl", named_like_pi, skipped):
        transcript = classify(path)
        if transcript is not None:
            found[safe_resolve(path)] = transcript
    return sorted(found.values(), key=lambda t: str(t.path))


def subagent_transcripts(session_path: Path) -> list[Transcript]:
    """Pi has no subagents of its own."""
    return []


# --- normalisation ---------------------------------------------------------------------------------


def _assistant(entry: Entry, message: dict[str, Any]) -> Entry:
    entry.kind, entry.role, entry.message_id = "assistant", "assistant", entry.uuid
    for part in items(message.get("content")):
        part = obj(part)
        kind = part.get("type")
        if kind == "text" and isinstance(part.get("text"), str) and part["text"].strip():
            entry.blocks.append(Block("text", part["text"]))
        elif kind == "thinking" and isinstance(part.get("thinking"), str):
            entry.blocks.append(Block("thinking", part["thinking"]))
        elif kind == "toolCall":
            block = tool_block(part.get("name"), part.get("arguments"), part.get("id"))
            if block is not None:
                entry.blocks.append(block)
    if isinstance(message.get("content"), str):
        entry.blocks.append(Block("text", message["content"]))
    return entry


def _message(entry: Entry, message: dict[str, Any]) -> Entry | BadLine:
    role = message.get("role")
    if not isinstance(role, str):
        return BadLine(entry.line_index, "message without a role")
    entry.entry_type = f"message/{role}"
    if role == "user":
        said = content_text(message.get("content"))
        entry.role, entry.blocks = "user", [Block("text", said)]
        images = [p for p in items(message.get("content")) if isinstance(p, dict) and p.get("type") == "image"]
        entry.blocks += [Block("image") for _ in images]
        entry.kind = "prompt" if said.strip() or images else "user_meta"
    elif role == "assistant":
        return _assistant(entry, message)
    elif role == "toolResult":
        entry.kind, entry.role = "tool_result", "tool"
        block = Block("tool_result", output_text(message.get("content")), tool_use_id=text(message.get("toolCallId")))
        block.is_error = message.get("isError") is True
        entry.blocks = [block]
    elif role == "bashExecution":  # `!command` typed by the user: their action, run outside the model
        command = text(message.get("command")) or ""
        entry.kind, entry.role = "user_meta", "user"
        entry.blocks = [Block("text", f"$ {command}\n{output_text(message.get('output'))}".strip())]
    elif role in ("compactionSummary", "branchSummary"):
        entry.kind, entry.role = "compact_summary", "user"
        entry.blocks = [Block("text", text(message.get("summary")) or content_text(message.get("content")))]
    else:  # custom messages an extension added
        entry.kind, entry.role = "user_meta", role
        entry.blocks = [Block("text", content_text(message.get("content")))]
    return entry


def parse(line_index: int, record: dict[str, Any]) -> Entry | BadLine | None:
    """One line of a session as an entry (None for settings changes)."""
    kind = record.get("type")
    if not isinstance(kind, str):
        return BadLine(line_index, "record without a type")
    if kind in _SETTINGS:
        return None
    entry = Entry(
        line_index,
        kind,
        "other",
        timestamp=normalize_timestamp(record.get("timestamp")),
        uuid=text(record.get("id")),
        parent_uuid=text(record.get("parentId")),
        unknown=kind not in KNOWN_TYPES,
    )
    if kind == "session":
        entry.session_id, entry.cwd = text(record.get("id")), text(record.get("cwd"))
    elif kind == "message":
        message = record.get("message")
        if not isinstance(message, dict):
            return BadLine(line_index, "message record without a message")
        return _message(entry, message)
    elif kind in ("compaction", "branch_summary"):
        summary = text(record.get("summary"))
        entry.kind = "compact_summary" if summary else "compact_boundary"
        entry.role, entry.blocks = "user", [Block("text", summary)] if summary else []
    elif kind == "session_info" and text(record.get("name")):
        entry.kind, entry.extra = "title", {"title": record["name"], "source": "custom-title"}
    elif kind == "custom_message":
        entry.kind, entry.role = "user_meta", "user"
        entry.blocks = [Block("text", content_text(record.get("content")))]
    return entry


def read_entries(
    path: Path, start_offset: int = 0, start_line: int = 0, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """Each line of a session from `start_offset`, with its entry."""
    return jsonl_entries(path, start_offset, start_line, max_line_bytes, parse)
