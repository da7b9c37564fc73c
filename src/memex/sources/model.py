"""Normalised transcript records shared by every agent's source adapter."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from memex.plain import Record

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


class ToolUse(Record):
    """One tool call: its name and input (paths and commands are read from it)."""

    __slots__ = ("id", "input", "name", "paths")

    name: str
    input: dict[str, Any]
    id: str | None
    # Files the adapter read from the call itself (patch headers, shell arguments), as written.
    paths: list[str]

    def __init__(self, name: str, input: dict[str, Any], id: str | None = None, paths: list[str] | None = None) -> None:
        self.name = name
        self.input = input
        self.id = id
        self.paths = [] if paths is None else paths


class Block(Record):
    """One content block of a message."""

    __slots__ = ("is_error", "kind", "text", "tool", "tool_use_id")

    kind: BlockKind
    text: str
    tool: ToolUse | None
    tool_use_id: str | None
    is_error: bool

    def __init__(
        self,
        kind: BlockKind,
        text: str = "",
        tool: ToolUse | None = None,
        tool_use_id: str | None = None,
        is_error: bool = False,
    ) -> None:
        self.kind = kind
        self.text = text
        self.tool = tool
        self.tool_use_id = tool_use_id
        self.is_error = is_error


class Entry(Record):
    """One transcript record after normalisation (one JSONL line, or one message of a JSON document)."""

    __slots__ = (
        "agent_id",
        "blocks",
        "cwd",
        "entry_type",
        "extra",
        "is_sidechain",
        "kind",
        "line_index",
        "message_id",
        "parent_uuid",
        "role",
        "session_id",
        "timestamp",
        "unknown",
        "uuid",
        "version",
    )

    line_index: int
    entry_type: str  # the agent's own type, e.g. "user", "assistant", "pr-link"
    kind: EntryKind
    role: str | None
    timestamp: str | None
    uuid: str | None
    parent_uuid: str | None
    session_id: str | None
    agent_id: str | None
    is_sidechain: bool
    message_id: str | None  # assistant lines sharing it are one response
    cwd: str | None
    blocks: list[Block]
    # Type-specific data: {"pr_number", "pr_url", "repository"}, {"files": [...]} (Claude Code's file-history
    # snapshot; with "files_tool", the tool the next turn's mention of them is named after), {"title": ...}.
    extra: dict[str, Any]
    # The version of the agent that wrote the record, when the record says (Claude: every line; Codex:
    # its session_meta). Records without it take their session's.
    version: str | None
    # A record of a type the adapter does not know: kept as data, and counted (format drift, `memex stats`).
    unknown: bool

    def __init__(
        self,
        line_index: int,
        entry_type: str,
        kind: EntryKind,
        role: str | None = None,
        timestamp: str | None = None,
        uuid: str | None = None,
        parent_uuid: str | None = None,
        session_id: str | None = None,
        agent_id: str | None = None,
        is_sidechain: bool = False,
        message_id: str | None = None,
        cwd: str | None = None,
        blocks: list[Block] | None = None,
        extra: dict[str, Any] | None = None,
        version: str | None = None,
        unknown: bool = False,
    ) -> None:
        self.line_index = line_index
        self.entry_type = entry_type
        self.kind = kind
        self.role = role
        self.timestamp = timestamp
        self.uuid = uuid
        self.parent_uuid = parent_uuid
        self.session_id = session_id
        self.agent_id = agent_id
        self.is_sidechain = is_sidechain
        self.message_id = message_id
        self.cwd = cwd
        self.blocks = [] if blocks is None else blocks
        self.extra = {} if extra is None else extra
        self.version = version
        self.unknown = unknown

    @property
    def text(self) -> str:
        """The entry's readable text: its text blocks joined (no thinking, no tool output)."""
        return "\n\n".join(b.text for b in self.blocks if b.kind == "text" and b.text)

    @property
    def tool_uses(self) -> list[ToolUse]:
        return [b.tool for b in self.blocks if b.tool is not None]


class BadLine(Record):
    """A record that could not be read; it is skipped and counted, never fatal."""

    __slots__ = ("line_index", "reason")

    line_index: int
    reason: str

    def __init__(self, line_index: int, reason: str) -> None:
        self.line_index = line_index
        self.reason = reason


class Transcript(Record):
    """A transcript file found on disk, with the session it belongs to."""

    __slots__ = (
        "agent",
        "agent_type",
        "aliases",
        "description",
        "path",
        "session_id",
        "source",
        "subagent_id",
        "walked",
    )

    path: Path
    agent: str  # "claude", "codex", "gemini"
    session_id: str
    subagent_id: str | None  # set for a subagent (sidechain) transcript of `session_id`
    # Other files holding the same session that this one supersedes (Gemini keeps a `.json` beside the
    # `.jsonl` it migrated to, and copies of a project folder under its hash and its name).
    aliases: tuple[Path, ...]
    # What the agent says of a subagent: its type or name (Claude's `agent-<id>.meta.json` agentType, Codex's
    # agent_nickname, Gemini's agent_name) and what it was asked (Claude's description).
    agent_type: str | None
    description: str | None
    # The file to read when it is not `path`: the archive's restored copy of a transcript the agent deleted
    # (the session keeps `path` as its transcript).
    source: Path | None
    # Found by walking the agents' own folders, not named by hand: only such a file takes over the path of a
    # stream stored elsewhere whose file is gone (`memex.ingest.moves`). A folder named on the command line
    # may be a backup the original comes back beside.
    walked: bool

    def __init__(
        self,
        path: Path,
        agent: str,
        session_id: str,
        subagent_id: str | None = None,
        aliases: tuple[Path, ...] = (),
        agent_type: str | None = None,
        description: str | None = None,
        source: Path | None = None,
        walked: bool = False,
    ) -> None:
        self.path = path
        self.agent = agent
        self.session_id = session_id
        self.subagent_id = subagent_id
        self.aliases = aliases
        self.agent_type = agent_type
        self.description = description
        self.source = source
        self.walked = walked

    @property
    def read_path(self) -> Path:
        """The file holding this transcript's bytes."""
        return self.source or self.path
