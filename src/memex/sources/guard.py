"""The line between an adapter's parser and the store: whatever a record holds, it costs one line at most.

Transcripts are written by other programs, in formats that change without notice, and any field of any
record may hold any JSON value. Each adapter checks the types it relies on; this module is the net below
those checks: a record whose parsing raises, or whose entry holds a value the store cannot take (a PR
number past SQLite's integers, a non-string where text belongs), becomes a `BadLine` with the reason,
and the lines around it are read as usual.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, get_args

from memex.sources.model import BadLine, Block, BlockKind, Entry, EntryKind, ToolUse

T = TypeVar("T")
# SQLite stores integers as signed 64-bit values.
SQLITE_MAX_INT = 2**63 - 1
_ENTRY_KINDS = set(get_args(EntryKind))
_BLOCK_KINDS = set(get_args(BlockKind))
_OPTIONAL_TEXT = ("role", "timestamp", "uuid", "parent_uuid", "session_id", "agent_id", "message_id", "cwd")


def failure(exc: BaseException) -> str:
    """The reason a record could not be read, for a BadLine."""
    text = f"unreadable record ({type(exc).__name__}: {exc})"
    return text if len(text) <= 200 else text[:198] + "…)"


def guarded(line_index: int, parse: Callable[[], T]) -> T | BadLine:
    """`parse()`, or a BadLine at `line_index` when it raises (any Exception: a record must never stop
    the reading of the records after it)."""
    try:
        return parse()
    except Exception as exc:
        return BadLine(line_index, failure(exc))


def _tool_problem(tool: Any) -> str | None:
    if not isinstance(tool, ToolUse):
        return "a tool call that is not a ToolUse"
    if not isinstance(tool.name, str) or not isinstance(tool.input, dict):
        return "a tool call without a name or an input object"
    if tool.id is not None and not isinstance(tool.id, str):
        return "a tool call whose id is not text"
    if not isinstance(tool.paths, list) or not all(isinstance(p, str) for p in tool.paths):
        return "a tool call whose paths are not text"
    return None


def _block_problem(block: Any) -> str | None:
    if not isinstance(block, Block) or block.kind not in _BLOCK_KINDS:
        return "a content block of no known kind"
    if not isinstance(block.text, str):
        return f"a {block.kind} block whose text is not text"
    if block.tool_use_id is not None and not isinstance(block.tool_use_id, str):
        return "a tool result whose tool id is not text"
    return _tool_problem(block.tool) if block.tool is not None else None


def _extra_problem(extra: Any) -> str | None:
    if not isinstance(extra, dict):
        return "entry data that is not an object"
    number = extra.get("pr_number")
    if "pr_number" in extra and not (isinstance(number, int) and 0 < number <= SQLITE_MAX_INT):
        return "a pull request number out of range"
    for key in ("pr_url", "repository", "title", "project_hash", "files_tool"):
        if extra.get(key) is not None and not isinstance(extra[key], str):
            return f"a {key.replace('_', ' ')} that is not text"
    files = extra.get("files")
    if files is not None and not (isinstance(files, list) and all(isinstance(f, str) for f in files)):
        return "file names that are not text"
    return None


def entry_problem(entry: Entry) -> str | None:
    """Why `entry` cannot be stored as it is, or None when every field has the type the store expects."""
    if not isinstance(entry.entry_type, str) or entry.kind not in _ENTRY_KINDS:
        return "an entry of no known type"
    if not isinstance(entry.line_index, int) or isinstance(entry.line_index, bool):
        return "an entry without a line number"
    for name in _OPTIONAL_TEXT:
        value = getattr(entry, name)
        if value is not None and not isinstance(value, str):
            return f"an entry whose {name.replace('_', ' ')} is not text"
    if not isinstance(entry.blocks, list):
        return "an entry whose content is not a list of blocks"
    for block in entry.blocks:
        problem = _block_problem(block)
        if problem:
            return problem
    return _extra_problem(entry.extra)


def checked(line_index: int, parse: Callable[[], Entry | BadLine | None]) -> Entry | BadLine | None:
    """`parse()` guarded, with the entry it gives checked (see `entry_problem`)."""
    result = guarded(line_index, parse)
    if isinstance(result, Entry):
        problem = guarded(line_index, lambda: entry_problem(result))
        if isinstance(problem, BadLine):
            return problem
        if problem:
            return BadLine(line_index, f"unreadable record ({problem})")
    return result
