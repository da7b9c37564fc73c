"""Grouping normalised entries into turns: prompt n + the assistant's work n + user message n+1.

A turn runs from one real user prompt to the next. Tool-result lines, meta messages and the several
lines of one assistant response all fall inside it. Lines without conversation (file snapshots, system
records, titles) that come just before a prompt open the next turn's window, so that re-reading from a
turn's first line always rebuilds that turn exactly.
"""

from __future__ import annotations

from collections import Counter

from memex.ingest.mentions import at_mentions, normalize_path, tool_paths
from memex.plain import Record
from memex.redact import CUT_LOOKAHEAD, clear_cut, secret_spans
from memex.sources.model import Entry
from memex.textutil import shorten

# A turn's indexed text is capped: one pasted log or generated file must not become thousands of
# chunks. The transcript keeps everything; `memex show --raw` reads it.
MAX_TURN_TEXT_CHARS = 200_000
# Tool summaries list at most this many files and commands.
MAX_SUMMARY_FILES = 25
MAX_SUMMARY_COMMANDS = 10

_CONVERSATION_KINDS = {"prompt", "compact_summary", "assistant", "tool_result", "user_meta"}
# What a long tool output keeps of its end (the rest of its bound is its start): a failing run's summary,
# the last line of a traceback and an exit status are there.
TOOL_OUTPUT_TAIL_SHARE = 0.25


class ToolOutput(Record):
    """The output of one tool call, bounded (`bounded_output`), with the tool's name when the call was seen."""

    __slots__ = ("chars", "is_error", "line_index", "text", "tool_name")

    line_index: int
    tool_name: str | None
    is_error: bool
    chars: int  # the output's whole length
    text: str

    def __init__(self, line_index: int, tool_name: str | None, is_error: bool, chars: int, text: str) -> None:
        self.line_index = line_index
        self.tool_name = tool_name
        self.is_error = is_error
        self.chars = chars
        self.text = text


def bounded_output(text: str, max_chars: int) -> str:
    """`text`, or when longer than `max_chars` its start and its end (TOOL_OUTPUT_TAIL_SHARE of the bound)
    around a marker saying how much was left out; neither cut falls inside a secret (redaction must still
    recognise it)."""
    if len(text) <= max_chars:
        return text
    head_end = clear_cut(text, max_chars - int(max_chars * TOOL_OUTPUT_TAIL_SHARE))
    tail_start = len(text) - int(max_chars * TOOL_OUTPUT_TAIL_SHARE)
    window = max(head_end, tail_start - CUT_LOOKAHEAD)  # a secret crossing the tail's start is near it
    for span in secret_spans(text[window : tail_start + CUT_LOOKAHEAD]):
        if span.start + window < tail_start < span.end + window:
            tail_start = span.end + window
    left_out = tail_start - head_end
    return f"{text[:head_end]}\n[… {left_out} characters left out by memex …]\n{text[tail_start:]}"


class Turn(Record):
    """One turn as built from entries, before it is written."""

    __slots__ = (
        "_seen_blocks",
        "agent_id",
        "commands",
        "end_line_index",
        "ended_at",
        "is_sidechain",
        "kind",
        "line_index",
        "prompt_text",
        "provisional",
        "raw_files",
        "reaction_text",
        "response_parts",
        "started_at",
        "tool_counts",
        "tool_names",
        "tool_outputs",
    )

    line_index: int
    kind: str  # "prompt", "compaction", or "preamble" (assistant work before any prompt)
    agent_id: str
    is_sidechain: bool
    prompt_text: str
    reaction_text: str
    end_line_index: int
    started_at: str | None
    ended_at: str | None
    provisional: bool
    response_parts: list[str]
    tool_counts: Counter[str]
    commands: list[str]
    raw_files: list[tuple[str, str]]  # (path as written, tool name)
    tool_outputs: list[ToolOutput]
    tool_names: dict[str, str]  # call id -> tool name
    _seen_blocks: set[tuple[str | None, str]]

    def __init__(
        self,
        line_index: int,
        kind: str,
        agent_id: str = "",
        is_sidechain: bool = False,
        prompt_text: str = "",
        reaction_text: str = "",
        end_line_index: int = 0,
        started_at: str | None = None,
        ended_at: str | None = None,
        provisional: bool = True,
        response_parts: list[str] | None = None,
        tool_counts: Counter[str] | None = None,
        commands: list[str] | None = None,
        raw_files: list[tuple[str, str]] | None = None,
        tool_outputs: list[ToolOutput] | None = None,
        tool_names: dict[str, str] | None = None,
        _seen_blocks: set[tuple[str | None, str]] | None = None,
    ) -> None:
        self.line_index = line_index
        self.kind = kind
        self.agent_id = agent_id
        self.is_sidechain = is_sidechain
        self.prompt_text = prompt_text
        self.reaction_text = reaction_text
        self.end_line_index = end_line_index
        self.started_at = started_at
        self.ended_at = ended_at
        self.provisional = provisional
        self.response_parts = [] if response_parts is None else response_parts
        self.tool_counts = Counter() if tool_counts is None else tool_counts
        self.commands = [] if commands is None else commands
        self.raw_files = [] if raw_files is None else raw_files
        self.tool_outputs = [] if tool_outputs is None else tool_outputs
        self.tool_names = {} if tool_names is None else tool_names
        self._seen_blocks = set() if _seen_blocks is None else _seen_blocks

    @property
    def response_text(self) -> str:
        return "\n\n".join(self.response_parts)

    def full_text(self) -> str:
        """The turn as readable text: prompt, the assistant's answer, and the user's next message."""
        parts = []
        if self.prompt_text:
            label = "Compaction summary" if self.kind == "compaction" else "User"
            parts.append(f"{label}: {self.prompt_text}")
        response = self.response_text
        if response:
            parts.append(f"Assistant: {response}")
        if self.reaction_text:
            parts.append(f"User (next): {self.reaction_text}")
        text = "\n\n".join(parts)
        if len(text) > MAX_TURN_TEXT_CHARS:  # never inside a secret: once cut, redaction misses it
            text = text[: clear_cut(text, MAX_TURN_TEXT_CHARS)] + "\n[… truncated by memex]"
        return text

    def files(self, project_dir: str | None) -> list[tuple[str, str]]:
        """(normalised path, tool name) pairs, each pair once, in first-seen order."""
        seen: dict[tuple[str, str], None] = {}
        for path, tool in self.raw_files:
            normalized = normalize_path(path, project_dir)
            if normalized:
                seen.setdefault((normalized, tool), None)
        return list(seen)

    def tool_summary(self, project_dir: str | None) -> str:
        """Tools used, files touched and commands run, on a few lines."""
        lines = []
        if self.tool_counts:
            lines.append("Tools: " + ", ".join(f"{name} ×{n}" for name, n in self.tool_counts.most_common()))
        paths = list(dict.fromkeys(path for path, _ in self.files(project_dir)))
        if paths:
            more = f" (+{len(paths) - MAX_SUMMARY_FILES} more)" if len(paths) > MAX_SUMMARY_FILES else ""
            lines.append("Files: " + ", ".join(paths[:MAX_SUMMARY_FILES]) + more)
        if self.commands:
            shown = [f"`{shorten(c, 120)}`" for c in self.commands[:MAX_SUMMARY_COMMANDS]]
            lines.append("Commands: " + "; ".join(shown))
        return "\n".join(lines)


class TurnBuilder:
    """Feed it one stream's entries in line order (`add`), then `finish` to get its turns."""

    def __init__(self, agent_id: str = "", is_sidechain: bool = False, tool_output_chars: int = 16_000) -> None:
        self.agent_id = agent_id
        self.tool_output_chars = tool_output_chars
        self.is_sidechain = is_sidechain
        self.turns: list[Turn] = []
        self.current: Turn | None = None
        self.lead: list[Entry] = []  # non-conversation entries since the last conversation entry
        self.compact_lines: list[int] = []
        self.end_line_index = 0

    def _start(self, kind: str, entry: Entry) -> Turn:
        if self.current is not None:
            self.current.provisional = False
            self.turns.append(self.current)
        start = self.lead[0].line_index if self.lead else entry.line_index
        turn = Turn(
            line_index=start,
            kind=kind,
            agent_id=self.agent_id,
            is_sidechain=self.is_sidechain or entry.is_sidechain,
            started_at=entry.timestamp,
        )
        self.current = turn
        self._flush_lead()
        return turn

    def _flush_lead(self) -> None:
        assert self.current is not None
        for entry in self.lead:
            # Claude Code's file-history snapshot, or what the agent says of its files (Aider: `add`).
            tool = entry.extra.get("files_tool") or "file_history_snapshot"
            for path in entry.extra.get("files", ()):
                self.current.raw_files.append((path, tool))
        self.lead.clear()

    def add(self, entry: Entry) -> None:
        """Take the next entry of the stream (in conversation order: `ingest.order` puts back an answer
        written before its prompt, so a turn's lines need not be in file order)."""
        self.end_line_index = max(self.end_line_index, entry.line_index)
        if entry.kind == "compact_boundary":
            self.compact_lines.append(entry.line_index)
        if entry.kind not in _CONVERSATION_KINDS:
            self.lead.append(entry)
            return
        if entry.kind == "prompt":
            if self.current is not None:
                self.current.reaction_text = entry.text or "[image]"
            turn = self._start("prompt", entry)
            turn.prompt_text = entry.text or "[image]"
            turn.raw_files.extend((path, "at_mention") for path in at_mentions(turn.prompt_text))
        elif entry.kind == "compact_summary":
            turn = self._start("compaction", entry)
            turn.prompt_text = entry.text
        elif self.current is None:
            if entry.kind != "assistant":
                return  # tool output or meta text with no turn to belong to
            turn = self._start("preamble", entry)
        else:
            turn = self.current
            self._flush_lead()
        turn.line_index = min(turn.line_index, entry.line_index)  # re-read from its first line
        turn.end_line_index = max(turn.end_line_index, entry.line_index)
        turn.ended_at = entry.timestamp or turn.ended_at
        turn.started_at = turn.started_at or entry.timestamp
        if entry.kind == "assistant":
            self._add_assistant(turn, entry)
        self._add_tool_outputs(turn, entry)

    def _add_tool_outputs(self, turn: Turn, entry: Entry) -> None:
        for block in entry.blocks:
            if block.kind != "tool_result" or not block.text.strip():
                continue
            key = (entry.message_id, f"result:{block.tool_use_id}")
            if entry.message_id and block.tool_use_id and key in turn._seen_blocks:
                continue
            turn._seen_blocks.add(key)
            name = turn.tool_names.get(block.tool_use_id or "")
            text = bounded_output(block.text, self.tool_output_chars)
            turn.tool_outputs.append(ToolOutput(entry.line_index, name, block.is_error, len(block.text), text))

    def _add_assistant(self, turn: Turn, entry: Entry) -> None:
        # Lines sharing a message id are one response; some versions repeat a block on later lines.
        for block in entry.blocks:
            if block.kind == "text" and block.text.strip():
                key = (entry.message_id, block.text)
                if entry.message_id and key in turn._seen_blocks:
                    continue
                turn._seen_blocks.add(key)
                turn.response_parts.append(block.text.strip())
            elif block.tool is not None:
                key = (entry.message_id, f"tool:{block.tool.id}")
                if entry.message_id and block.tool.id and key in turn._seen_blocks:
                    continue
                turn._seen_blocks.add(key)
                tool = block.tool
                if tool.id:
                    turn.tool_names[tool.id] = tool.name
                turn.tool_counts[tool.name] += 1
                turn.raw_files.extend((path, tool.name) for path in tool_paths(tool))
                command = tool.input.get("command")
                if isinstance(command, str) and command.strip():
                    turn.commands.append(command.strip())
                elif isinstance(command, list) and all(isinstance(c, str) for c in command):
                    turn.commands.append(" ".join(command))

    def finish(self) -> list[Turn]:
        """All turns of the stream; the last one stays provisional (its next user message is unknown)."""
        if self.current is not None:
            self._flush_lead()
            self.turns.append(self.current)
            self.current = None
        return self.turns

    def turn_start(self, line_index: int) -> int:
        """The first line of the turn that holds line `line_index` (that line itself when none does)."""
        turns = [*self.turns, *([self.current] if self.current is not None else [])]
        found = (t.line_index for t in turns if t.line_index <= line_index <= t.end_line_index)
        return min(found, default=line_index)

    @property
    def resume_line_index(self) -> int | None:
        """Where the next ingest must start re-reading: the provisional turn, or unattached lead lines."""
        if self.current is not None:
            return self.current.line_index
        if self.lead:
            return self.lead[0].line_index
        return None
