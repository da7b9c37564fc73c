"""Normalised transcript records shared by every agent's source adapter."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

BlockKind = Literal["text", "thinking", "tool_use", "tool_result", "image"]
EntryKind = Literal[
    "prompt",  # a real user prompt: starts a turn
    "user_meta",  # user-role text that is not a prompt (isMeta, command output, injected context)
    "tool_result",  # a user-role entry made only of tool results
    "compact_summary",  # the summary a compaction wrote: a turn of its own
    "assistant",  # assistant text, thinking and tool calls
    "compact_boundary",  # a system marker: the conversation was compacted here
    "summary",  # a session summary / title record
    "file_snapshot",  # file-history-snapshot: files the agent tracked
    "pr_link",  # a pull request created from the session
    "title",  # custom-title / ai-title
    "other",  # every other type, kept as data
]


@dataclass(slots=True)
class ToolUse:
    """One tool call: its name and input (paths and commands are read from it)."""

    name: str
    input: dict[str, Any]
    id: str | None = None
    # Files the adapter read from the call itself (patch headers, shell arguments), as written.
    paths: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Block:
    """One content block of a message."""

    kind: BlockKind
    text: str = ""
    tool: ToolUse | None = None
    tool_use_id: str | None = None
    is_error: bool = False


@dataclass(slots=True)
class Entry:
    """One transcript record after normalisation (one JSONL line, or one message of a JSON document)."""

    line_index: int
    entry_type: str  # the agent's own type, e.g. "user", "assistant", "pr-link"
    kind: EntryKind
    role: str | None = None
    timestamp: str | None = None
    uuid: str | None = None
    parent_uuid: str | None = None
    session_id: str | None = None
    agent_id: str | None = None
    is_sidechain: bool = False
    message_id: str | None = None  # assistant lines sharing it are one response
    cwd: str | None = None
    blocks: list[Block] = field(default_factory=list)
    # Type-specific data: {"pr_number", "pr_url", "repository"}, {"files": [...]} (Claude Code's file-history
    # snapshot; with "files_tool", the tool the next turn's mention of them is named after), {"title": ...}.
    extra: dict[str, Any] = field(default_factory=dict)
    # The version of the agent that wrote the record, when the record says (Claude: every line; Codex:
    # its session_meta). Records without it take their session's.
    version: str | None = None
    # A record of a type the adapter does not know: kept as data, and counted (format drift, `memex stats`).
    unknown: bool = False

    @property
    def text(self) -> str:
        """The entry's readable text: its text blocks joined (no thinking, no tool output)."""
        return "\n\n".join(b.text for b in self.blocks if b.kind == "text" and b.text)

    @property
    def tool_uses(self) -> list[ToolUse]:
        return [b.tool for b in self.blocks if b.tool is not None]


@dataclass(slots=True)
class BadLine:
    """A record that could not be read; it is skipped and counted, never fatal."""

    line_index: int
    reason: str


@dataclass(slots=True)
class Transcript:
    """A transcript file found on disk, with the session it belongs to."""

    path: Path
    agent: str  # "claude", "codex", "gemini"
    session_id: str
    subagent_id: str | None = None  # set for a subagent (sidechain) transcript of `session_id`
    # Other files holding the same session that this one supersedes (Gemini keeps a `.json` beside the
    # `.jsonl` it migrated to, and copies of a project folder under its hash and its name).
    aliases: tuple[Path, ...] = ()
    # What the agent says of a subagent (Claude's `agent-<id>.meta.json`: agentType, description).
    agent_type: str | None = None
    description: str | None = None
    # The file to read when it is not `path`: the archive's restored copy of a transcript the agent deleted
    # (the session keeps `path` as its transcript).
    source: Path | None = None

    @property
    def read_path(self) -> Path:
        """The file holding this transcript's bytes."""
        return self.source or self.path
