"""Aider: `.aider.chat.history.md` in each project folder (Aider keeps no history under HOME).

The file is append-only Markdown: every run starts with `# aider chat started at YYYY-MM-DD HH:MM:SS` (local
time); `#### ` lines are what the user typed; lines starting `> ` are Aider's own output (the command line,
banners, `Tokens: …`, confirmations, `Added app.py to the chat.`, `Applied edit to app.py`); everything else
is the model's reply, SEARCH/REPLACE edit blocks included. Aider has no session ids and `--restore-chat-history`
continues one run in the next, so a project's history is one session (its id derived from the file's path),
and each run's start is an entry of it. Aider sends no tools: its "tools" are edit blocks (`edit_block`, named
by the file line above the fence), applied edits (`edit`), files added to the chat (`add`), and `/run` commands
(`run`: their output is not written to the file). `.aider.input.history` repeats the inputs and is not read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from datetime import datetime
from functools import partial
from pathlib import Path

from memex.digest import blake2b
from memex.sources.files import Skipped, candidates, open_regular, safe_resolve
from memex.sources.guard import checked
from memex.sources.jsonl import DEFAULT_MAX_LINE_BYTES, RawLine
from memex.sources.locations import AIDER_HISTORY
from memex.sources.model import BadLine, Block, Entry, ToolUse, Transcript
from memex.textutil import normalize_timestamp

AGENT = "aider"
INCREMENTAL = True
FILE_NAME = AIDER_HISTORY
_RUN = re.compile(r"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})\s*$")
_PROMPT = "#### "
_OUTPUT = "> "  # and a bare ">"
_APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
_ADDED = re.compile(r"^Added (?!\d+ lines? of output)(.+?) to the chat\.?\s*$")
_COMMAND = re.compile(r"^(?:/run|!)\s*(.+)$", re.DOTALL)
_VERSION = re.compile(r"^Aider v(\S+)\s*$")
_ADD_FILE = "Add file to the chat?"
_FENCE = re.compile(r"^(`{3,}|~{3,})")
_SEARCH = "<<<<<<< SEARCH"


def session_id_of(path: Path) -> str:
    """An Aider history's session id: derived from where the file is (Aider names none)."""
    return "aider-" + blake2b(str(safe_resolve(path)).encode(), digest_size=8).hexdigest()


def _starts_like_aider(path: Path) -> bool:
    try:
        with open_regular(path) as handle:
            head = handle.read(512).decode("utf-8", "replace")
    except OSError:
        return False
    first = next((line for line in head.splitlines() if line.strip()), "")
    return _RUN.match(first) is not None


def classify(path: Path) -> Transcript | None:
    """An Aider chat history: `.aider.chat.history.md`, or any Markdown file that starts like one."""
    if path.name != FILE_NAME and (path.suffix != ".md" or not _starts_like_aider(path)):
        return None
    return Transcript(path, AGENT, session_id_of(path))


def discover(roots: Iterable[Path], skipped: list[Skipped] | None = None) -> list[Transcript]:
    """The histories under `roots` (folders are searched; a project folder's own history is found at once)."""
    found: dict[Path, Transcript] = {}
    for path, _ in candidates(roots, FILE_NAME, skipped=skipped):
        transcript = classify(path)
        if transcript is not None:
            found[safe_resolve(path)] = transcript
    return sorted(found.values(), key=lambda t: str(t.path))


def subagent_transcripts(session_path: Path) -> list[Transcript]:
    """Aider has no subagents."""
    return []


# --- reading ---------------------------------------------------------------------------------------


def _lines(path: Path, start_offset: int) -> Iterator[tuple[int, int, str]]:
    """(start, end, text) of each complete line from `start_offset` (a last line without its newline is
    still being written: left for the next run)."""
    with open_regular(path) as handle:
        size = os.fstat(handle.fileno()).st_size
        handle.seek(start_offset)
        offset = start_offset
        while offset < size:
            raw = handle.readline(size - offset)
            if not raw or not raw.endswith(b"\n"):
                return
            yield offset, offset + len(raw), raw.decode("utf-8", "replace").rstrip("\r\n")
            offset += len(raw)


def _local_time(stamp: str) -> str | None:
    """A run's start (written in the computer's local time) in UTC."""
    try:
        return normalize_timestamp(datetime.fromisoformat(stamp).astimezone().isoformat())
    except ValueError:
        return None


def _edit_blocks(reply: str) -> list[str]:
    """The files the reply's SEARCH/REPLACE blocks edit: the line above each fence that opens one."""
    lines = reply.splitlines()
    found = []
    for index, line in enumerate(lines):
        if line.strip() == _SEARCH:
            above = lines[index - 1] if index >= 1 else ""
            name = lines[index - 2] if _FENCE.match(above.strip()) and index >= 2 else above
            name = name.strip().strip("`*").strip()
            if name and not _FENCE.match(name) and " " not in name:
                found.append(name)
    return list(dict.fromkeys(found))


class _Reader:
    """Groups the Markdown lines into entries: a run's start, a prompt, a reply, a piece of Aider's output."""

    def __init__(self, cwd: str) -> None:
        self.cwd = cwd
        self.timestamp: str | None = None
        self.command_pending: str | None = None
        self.last_output = ""
        self.in_banner = False  # between a run's start and its first prompt

    def run(self, index: int, stamp: str) -> Entry:
        self.timestamp = _local_time(stamp)
        self.in_banner = True
        return Entry(index, "run", "other", timestamp=self.timestamp, cwd=self.cwd)

    def prompt(self, index: int, text: str) -> Entry:
        entry = Entry(index, "prompt", "prompt", role="user", timestamp=self.timestamp, blocks=[Block("text", text)])
        self.in_banner = False
        command = _COMMAND.match(text.strip())
        self.command_pending = command.group(1).strip() if command else None
        return entry

    def reply(self, index: int, text: str) -> Entry:
        entry = Entry(index, "reply", "assistant", role="assistant", timestamp=self.timestamp)
        entry.blocks = [Block("text", text)]
        for name in _edit_blocks(text):
            entry.blocks.append(Block("tool_use", tool=ToolUse("edit_block", {"path": name})))
        return entry

    def output(self, index: int, text: str) -> Entry | None:
        """A line of Aider's output: an edit applied, a file added, a command's output kept; else nothing."""
        tool = None
        applied, added = _APPLIED.match(text), _ADDED.match(text)
        named, self.last_output = self.last_output, text
        if text.startswith(_ADD_FILE) and text.rstrip().lower().endswith(("y", "yes")) and named:
            tool = ToolUse("add", {"path": named})  # the file the reply named, added on the user's yes
        elif applied:
            tool = ToolUse("edit", {"path": applied.group(1)})
        elif added and self.in_banner:  # files given on the command line: the run's first turn reads them
            files = {"files": [added.group(1)], "files_tool": "add"}  # added to the chat, as on a yes below
            return Entry(index, "output", "other", timestamp=self.timestamp, extra=files)
        elif added:
            tool = ToolUse("add", {"path": added.group(1)})
        elif self.command_pending is not None:
            tool = ToolUse("run", {"command": self.command_pending})
            self.command_pending = None
        version = _VERSION.match(text)
        if tool is None:
            if version:
                return Entry(index, "output", "other", timestamp=self.timestamp, version=version.group(1))
            return None
        entry = Entry(index, "output", "assistant", role="assistant", timestamp=self.timestamp)
        entry.blocks = [Block("tool_use", tool=tool)]
        return entry


def read_entries(
    path: Path, start_offset: int = 0, start_line: int = 0, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """The history from `start_offset`: each line, with an entry on the line that ends what it belongs to
    (a prompt or a reply spans several lines; the entry is numbered by its first)."""
    reader = _Reader(str(safe_resolve(path).parent))
    group: list[tuple[RawLine, str]] = []  # the lines of the prompt or reply being read
    group_kind: str | None = None
    fenced = False

    def flush() -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
        nonlocal group, group_kind, fenced
        if not group:
            return
        first = group[0][0].line_index
        body = "\n".join(text for _, text in group).strip()
        make = reader.prompt if group_kind == "prompt" else reader.reply
        entry = checked(first, lambda: make(first, body)) if body else None
        for raw, _ in group[:-1]:
            yield raw, None
        yield group[-1][0], entry
        group, group_kind, fenced = [], None, False

    index = start_line
    for start, end, line in _lines(path, start_offset):
        raw = RawLine(index, start, end, None)
        index += 1
        if end - start > max_line_bytes:
            yield from flush()
            yield (
                RawLine(raw.line_index, start, end, None, "line over max_line_bytes"),
                BadLine(raw.line_index, f"line of {end - start:,} bytes is over max_line_bytes ({max_line_bytes:,})"),
            )
            continue
        run = _RUN.match(line)
        if group_kind == "reply" and _FENCE.match(line.strip()):
            fenced = not fenced
        if run:
            yield from flush()
            stamp, at = run.group(1), raw.line_index
            yield raw, checked(at, partial(reader.run, at, stamp))
        elif fenced:  # inside a code block of a reply: `>>>>>>> REPLACE` is the reply's
            group.append((raw, line))
        elif line.startswith(_PROMPT) or line == _PROMPT.rstrip():
            if group_kind != "prompt":
                yield from flush()
                group_kind = "prompt"
            group.append((raw, line[len(_PROMPT) :].rstrip()))
        elif line.startswith(_OUTPUT) or line == _OUTPUT.strip():
            yield from flush()
            text, at = line[1:].strip(), raw.line_index
            yield raw, checked(at, partial(reader.output, at, text))
        elif group_kind == "prompt" and not line.strip():
            yield from flush()
            yield raw, None
        else:
            if group_kind is None and not line.strip():
                yield raw, None
                continue
            group_kind = group_kind or "reply"
            group.append((raw, line))
    yield from flush()  # a reply still being written is read again with its turn (the provisional one)
