"""Codex CLI rollouts: discovery under `~/.codex/sessions` and normalisation of each JSONL line.

Two layouts. Since Codex 0.3x (Sept 2025) every line is `{timestamp, type, payload}` with `type` one of
`session_meta`, `response_item`, `event_msg`, `turn_context`, `compacted`. Before that the first line is a
bare session header `{id, timestamp, instructions…}`, then bare response items and `{"record_type":
"state"}` markers, with no time on the items (they get the header's).

The user's words are written twice in the wrapped layout: as a `response_item` user message and as an
`event_msg` `user_message`. The event is the prompt (it never carries injected context); the response item
just before it is kept as an entry of kind `other`. Assistant text and reasoning are written twice as well
(`agent_message`, `agent_reasoning` events): only the response items are kept.

Codex 0.169 (Nov 2026) changed three things this module reads. Lines carry an `ordinal` between `timestamp`
and `type`. The prompt event is `event_msg/item_completed` with a `UserMessage` item (no more
`user_message`). The shell tool is `exec_command {"cmd", "workdir"}`. And a subagent (`spawn_agent`)
writes its own rollout whose `session_meta.payload` names the root session (`session_id`) and the thread
that spawned it (`parent_thread_id`): it is a subagent stream of that session, not a session of its own.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import date, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import orjson

from memex.sources.files import Sieve, Skipped, candidates, open_regular, real_path
from memex.sources.guard import checked
from memex.sources.injected import codex_subagent_report, codex_user_text
from memex.sources.jsonl import DEFAULT_MAX_LINE_BYTES, RawLine, parse_json_line, read_jsonl
from memex.sources.model import BadLine, Block, Entry, ToolUse, Transcript
from memex.sources.shell import command_text, patch_paths, resolve, shell_paths
from memex.textutil import normalize_timestamp

AGENT = "codex"
INCREMENTAL = True  # transcripts only grow: an ingest resumes where the last one stopped
SIEVES = True  # each file is classified from itself alone: `discover` takes a sieve (memex.sources)
WRAPPED_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
# Bytes of a file's first line read to recognise a rollout (a session_meta line carries the whole
# instructions text and can be long; its recognisable keys come first).
PEEK_BYTES = 65_536
_UUID_TAIL = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE)
# `{"timestamp": …, ["ordinal": n,] "type": "<wrapped type>", "payload": …`: a wrapped rollout line.
_WRAPPED_PREFIX = re.compile(
    rb'^\{[^{}]{0,300}?"type"\s*:\s*"(' + "|".join(WRAPPED_TYPES).encode() + rb')"\s*,\s*"payload"\s*:'
)
# A tool output is read for pull request links up to this many characters.
MAX_OUTPUT_CHARS = 100_000
_WRAPPED_OUTPUT = '{"output":'
_NAME_TIME = len("rollout-2026-01-01T00-00-00")
_OLD_HEADER_PREFIX = re.compile(rb'^\{\s*"id"\s*:\s*"([^"]+)"\s*,\s*"timestamp"\s*:')
_SESSION_META_PAYLOAD = re.compile(rb'"type"\s*:\s*"session_meta"\s*,\s*"payload"\s*:\s*\{')
# The session_meta keys that say whose thread a rollout is, and what a spawned agent is called (they
# precede its long instructions).
_META_IDS = re.compile(rb'"(id|session_id|parent_thread_id|agent_nickname|agent_role)"\s*:\s*"([^"\\]+)"')
# Record types this module reads, or knows to carry nothing to recall. Any other type is kept as an entry
# and counted as format drift (`memex stats`).
_IGNORED_LINE_TYPES = frozenset({"world_state", "token_usage_record"})
KNOWN_ITEM_TYPES = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "web_search_call",
        "ghost_snapshot",
        "compaction",
        "compaction_summary",
    }
)
KNOWN_EVENT_TYPES = frozenset(
    {
        "user_message",
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "agent_reasoning_section_break",
        "token_count",
        "task_started",
        "task_complete",
        "turn_aborted",
        "context_compacted",
        "entered_review_mode",
        "exited_review_mode",
        "item_started",
        "item_completed",
        "thread_settings_applied",
        "thread_rolled_back",
        "undo_completed",
        "error",
        "warning",
        "stream_error",
        # Persisted in the extended history mode; they repeat what the response items hold.
        "exec_command_end",
        "patch_apply_end",
        "mcp_tool_call_end",
        "web_search_end",
        "view_image_tool_call",
        "image_generation_end",
        "plan_update",
    }
)
# Items of an `item_completed` event that repeat a response item, or carry nothing to recall.
_ITEM_ECHOES = frozenset({"AgentMessage", "Reasoning"})
# `# AGENTS.md instructions for …`, `<environment_context>`, `<user_instructions>`…: see `sources.injected`.
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


Shape = tuple[str, str | None, str | None, str | None]


def _peek(path: Path) -> Shape | None:
    """("wrapped" | "old", session id, subagent id, subagent name) when the first line is a Codex
    rollout's, else None.

    Only the first PEEK_BYTES of the first line are read: a longer session_meta line (its instructions can
    run to hundreds of kilobytes) is recognised by its prefix, its ids read from the keys that precede them.
    """
    try:
        with open_regular(path) as handle:
            head = handle.readline(PEEK_BYTES)
    except OSError:
        return None
    body = head.strip()
    if head.endswith(b"\n") or len(head) < PEEK_BYTES:
        data, error, _ = parse_json_line(body) if body else (None, "empty", False)
        if error is None and isinstance(data, dict):
            return _shape(data)
    if _WRAPPED_PREFIX.match(body):
        payload = _SESSION_META_PAYLOAD.search(body)
        if payload is None:
            return "wrapped", None, None, None
        ids: dict[str, str] = {}
        for match in _META_IDS.finditer(body, payload.end()):
            ids.setdefault(match.group(1).decode(), match.group(2).decode())
        return ("wrapped", *thread_of(ids), agent_name(ids))
    old = _OLD_HEADER_PREFIX.match(body)
    if old and b'"type"' not in body[:200]:
        return "old", old.group(1).decode(), None, None
    return None


def thread_of(meta: dict[str, Any]) -> tuple[str | None, str | None]:
    """(session id, subagent id) of a rollout from its session_meta payload.

    A spawned agent's rollout names its own thread (`id`), the root session (`session_id`, Codex 0.169) and
    the thread that spawned it (`parent_thread_id`): it is a subagent stream of the root session.
    """
    thread = _str(meta.get("id"))
    root = _str(meta.get("session_id"))
    if root is None:
        source = meta.get("source")
        spawn = source.get("subagent") if isinstance(source, dict) else None
        spawn = spawn.get("thread_spawn") if isinstance(spawn, dict) else None
        root = _str(meta.get("parent_thread_id")) or (
            _str(spawn.get("parent_thread_id")) if isinstance(spawn, dict) else None
        )
    if thread and root and root != thread:
        return root, thread
    return thread or root, None


def agent_name(meta: dict[str, Any]) -> str | None:
    """What Codex calls a spawned agent (its session_meta payload): the nickname it shows the user
    (`agent_nickname`, "Laplace"), with the role it was given (`agent_role`) when there is one."""
    nickname, role = _str(meta.get("agent_nickname")), _str(meta.get("agent_role"))
    source = meta.get("source")
    spawn = source.get("subagent") if isinstance(source, dict) else None
    spawn = spawn.get("thread_spawn") if isinstance(spawn, dict) else None
    if isinstance(spawn, dict):
        nickname = nickname or _str(spawn.get("agent_nickname"))
        role = role or _str(spawn.get("agent_role"))
    if nickname and role:
        return f"{nickname} ({role})"
    return nickname or role


def _shape(data: dict[str, Any]) -> Shape | None:
    if data.get("type") in WRAPPED_TYPES and "payload" in data:
        payload = data["payload"]
        if data["type"] == "session_meta" and isinstance(payload, dict):
            return ("wrapped", *thread_of(payload), agent_name(payload))
        return "wrapped", None, None, None
    if isinstance(data.get("id"), str) and "timestamp" in data and "type" not in data and "sessionId" not in data:
        return "old", data["id"], None, None
    return None


def classify(path: Path) -> Transcript | None:
    """A Codex rollout (`rollout-*.jsonl`, or any JSONL whose first line is a rollout's), else None.

    A spawned agent's rollout is a subagent transcript of its root session."""
    if path.suffix != ".jsonl":
        return None
    shape = _peek(path)
    if shape is None and not path.name.startswith("rollout-"):
        return None
    from_name = _UUID_TAIL.search(path.stem)
    session_id = (shape[1] if shape else None) or (from_name.group(1) if from_name else path.stem)
    subagent_id = shape[2] if shape else None
    name = shape[3] if shape and subagent_id else None  # a session is no one's subagent
    return Transcript(path, AGENT, session_id, subagent_id, agent_type=name)


def discover(
    roots: Iterable[Path], skipped: list[Skipped] | None = None, sieve: Sieve | None = None
) -> list[Transcript]:
    """Every rollout under `roots` (folders are searched recursively; files taken as given), sessions before
    the subagents that belong to them. Files named like transcripts that cannot be read go to `skipped`."""
    found: dict[Path, Transcript] = {}
    canonical: set[Path] = set()
    for path, _ in candidates(roots, "*.jsonl", skipped=skipped, canonical=canonical, sieve=sieve):
        transcript = classify(path)
        if transcript is not None:
            found[real_path(path, canonical)] = transcript
    return sorted(found.values(), key=lambda t: (t.subagent_id is not None, str(t.path)))


def _day_folders(folder: Path) -> list[Path]:
    """A `YYYY/MM/DD` folder and the next day's (a subagent spawned before midnight may write after it)."""
    try:
        day = date(int(folder.parent.parent.name), int(folder.parent.name), int(folder.name))
    except ValueError:
        return [folder]
    after = day + timedelta(days=1)
    return [folder, folder.parent.parent.parent / f"{after:%Y}" / f"{after:%m}" / f"{after:%d}"]


def subagent_transcripts(session_path: Path) -> list[Transcript]:
    """The rollouts of the agents a session spawned: in its day folder (or the next), written after it."""
    main = classify(session_path)
    if main is None or main.subagent_id is not None:
        return []
    found = []
    for folder in _day_folders(session_path.parent):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("rollout-*.jsonl")):
            # Named `rollout-<start time>-<id>`: a child starts after its parent (to the second).
            if path == session_path or path.name[:_NAME_TIME] < session_path.name[:_NAME_TIME]:
                continue
            transcript = classify(path)
            if transcript is not None and transcript.subagent_id and transcript.session_id == main.session_id:
                found.append(transcript)
    return found


# --- normalisation ---------------------------------------------------------------------------------


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


def _user_entry(entry: Entry, nickname: Callable[[str], str | None] | None = None) -> Entry:
    """Classify a user message: the user's words (a prompt), a subagent's report (named by `nickname`), or
    Codex's own text."""
    text = entry.text
    images = [b for b in entry.blocks if b.kind == "image"]
    report = codex_subagent_report(text, nickname)
    if report is not None:
        entry.kind, entry.role, entry.blocks = "assistant", "assistant", [Block("text", report.text())]
        entry.extra["report_of"] = report.agent_id
        return entry
    # Part by part: one message may hold Codex's context and the user's words side by side.
    own = [o for o in (codex_user_text(b.text) for b in entry.blocks if b.kind == "text" and b.text.strip()) if o]
    if not own:
        entry.kind = "prompt" if images and not text.strip() else "user_meta"
        return entry
    if "\n\n".join(own) != text.strip():  # context around the request: only the request is the prompt
        entry.blocks = [*(Block("text", o) for o in own), *images]
    entry.kind = "prompt"
    return entry


def _tool(name: str, args: dict[str, Any], call_id: str | None) -> ToolUse:
    """A tool call with the files it names (patch headers, shell arguments) resolved against its workdir."""
    workdir = _str(args.get("workdir")) or _str(args.get("working_directory"))
    command = args.get("command") if args.get("command") is not None else args.get("cmd")  # exec_command: cmd
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

    def __init__(self, path: Path, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.path = path
        self.max_line_bytes = max_line_bytes
        self.header_timestamp: str | None = None
        self.header_read = False
        self.nicknames: dict[str, str] = {}  # a spawned agent's thread id -> what Codex calls it
        self.nicknames_read = False

    def _learn(self, payload: dict[str, Any]) -> None:
        """Remember the nicknames of the agents a line says were spawned: the spawn's output
        (`{"agent_id", "nickname"}`) and Codex 0.169's CollabAgentToolCall items (`receiver_agents`)."""
        item = payload.get("item") if payload.get("type") == "item_completed" else None
        if isinstance(item, dict) and isinstance(agents := item.get("receiver_agents"), list):
            for agent in agents:
                if isinstance(agent, dict) and (thread := _str(agent.get("thread_id"))):
                    self._name(thread, agent.get("agent_nickname"))
        elif payload.get("type") == "function_call_output":
            output = payload.get("output")
            if isinstance(output, str) and output.startswith("{") and '"nickname"' in output:
                with contextlib.suppress(orjson.JSONDecodeError):
                    spawned = orjson.loads(output)
                    if isinstance(spawned, dict) and (thread := _str(spawned.get("agent_id"))):
                        self._name(thread, spawned.get("nickname"))

    def _name(self, thread: str, nickname: Any) -> None:
        if name := _str(nickname):
            self.nicknames[thread] = name

    def nickname(self, thread: str) -> str | None:
        """What Codex calls the spawned agent `thread`; a rollout read from an offset (its spawn in a part
        read before) is read once from its start for the nicknames."""
        if thread not in self.nicknames and not self.nicknames_read:
            self.nicknames_read = True
            for line in read_jsonl(self.path, max_line_bytes=self.max_line_bytes):
                if isinstance(line.data, dict) and isinstance(payload := line.data.get("payload"), dict):
                    self._learn(payload)
        return self.nicknames.get(thread)

    def _old_timestamp(self) -> str | None:
        if not self.header_read:  # reading from an offset: the header is the file's first line
            self.header_read = True
            for line in read_jsonl(self.path, max_line_bytes=self.max_line_bytes):
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
                self._learn(payload)
                return _response_item(line.line_index, payload, timestamp, self.nickname)
            if kind == "event_msg":
                self._learn(payload)
                return _event(line.line_index, payload, timestamp)
            if kind == "turn_context":
                return Entry(
                    line.line_index, "turn_context", "other", timestamp=timestamp, cwd=_str(payload.get("cwd"))
                )
            if kind == "compacted":
                return _compacted(line.line_index, payload, timestamp)
            if kind in _IGNORED_LINE_TYPES:
                return None
            return Entry(line.line_index, kind, "other", timestamp=timestamp, unknown=True)
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
        return Entry(line.line_index, "unknown", "other", timestamp=self._old_timestamp(), unknown=True)

    def _session_meta(self, line: RawLine, payload: dict[str, Any], timestamp: str | None) -> Entry:
        git = git_ if isinstance(git_ := payload.get("git"), dict) else {}
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
            version=_str(payload.get("cli_version")),
        )


def _response_item(
    line_index: int, item: dict[str, Any], timestamp: str | None, nickname: Callable[[str], str | None] | None = None
) -> Entry | BadLine:
    item_type = item.get("type")
    entry = Entry(line_index, f"response_item/{item_type}", "other", timestamp=timestamp)
    entry.unknown = item_type not in KNOWN_ITEM_TYPES
    if item_type == "message":
        blocks = _content_blocks(item.get("content"))
        if blocks is None:
            return BadLine(line_index, "message content is neither text nor a list of parts")
        role = _str(item.get("role")) or "user"
        entry.role, entry.blocks = role, blocks
        if role == "assistant":
            entry.kind = "assistant"
        elif role == "user":
            context_cwd = _CONTEXT_CWD.search(entry.text)
            entry.cwd = context_cwd.group(1).strip() if context_cwd else None
            _user_entry(entry, nickname)
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
        entry.blocks = [Block("tool_result", _output_text(item.get("output")), tool_use_id=_str(item.get("call_id")))]
    elif item_type in ("compaction", "compaction_summary"):
        entry.kind = "compact_boundary"
    return entry


def _output_text(output: Any) -> str:
    """A tool's output as text (searched with `--in tools`, read for pull request links). Older rollouts (those
    of late 2025 in ../shared/data) wrap a shell's output as a JSON string `{"output": …, "metadata":
    {"exit_code": …}}`: its text is what was printed, not that JSON with its escapes."""
    if isinstance(output, str) and output.startswith(_WRAPPED_OUTPUT) and len(output) <= 4 * MAX_OUTPUT_CHARS:
        with contextlib.suppress(orjson.JSONDecodeError):  # not the wrapper after all: the text as it is
            output = orjson.loads(output)
    if isinstance(output, dict):
        output = output.get("content") or output.get("output")
    if isinstance(output, list):
        output = "\n".join(str(p.get("text", "")) for p in output if isinstance(p, dict))
    return output[:MAX_OUTPUT_CHARS] if isinstance(output, str) else ""


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
    action = action_ if isinstance(action_ := item.get("action"), dict) else {}
    if item_type == "local_shell_call":
        args = {"command": action.get("command"), "workdir": action.get("working_directory")}
        return _tool("local_shell", {k: v for k, v in args.items() if v is not None}, call_id)
    query = _str(action.get("query")) or _str(action.get("url"))
    return ToolUse("web_search", {"query": query} if query else {}, call_id)


def _event(line_index: int, event: dict[str, Any], timestamp: str | None) -> Entry | None:
    event_type = event.get("type")
    if not isinstance(event_type, str):
        return Entry(line_index, "event_msg", "other", timestamp=timestamp)
    if event_type in _NOISE_EVENTS:
        return None
    entry = Entry(line_index, f"event_msg/{event_type}", "other", timestamp=timestamp)
    entry.unknown = event_type not in KNOWN_EVENT_TYPES
    if event_type == "user_message":
        message = message_ if isinstance(message_ := event.get("message"), str) else ""
        images = event.get("images") or event.get("local_images")
        entry.blocks = [Block("text", message)] + ([Block("image")] if images else [])
        _user_event(entry)
        if event.get("kind") in ("user_instructions", "environment_context"):
            entry.kind = "user_meta"
    elif event_type == "item_completed":  # Codex 0.169: what the thread did, item by item
        item = item_ if isinstance(item_ := event.get("item"), dict) else {}
        if item.get("type") in _ITEM_ECHOES:
            return None
        if item.get("type") == "UserMessage":
            entry.blocks = _content_blocks(item.get("content")) or []
            _user_event(entry)
    elif event_type == "context_compacted":
        entry.kind = "compact_boundary"
    return entry


def _user_event(entry: Entry) -> None:
    """An event holding what the user sent (`user_message`, or an `item_completed` UserMessage): the prompt,
    where the response item just before it is its echo."""
    entry.role = "user"
    entry.extra["user_event"] = True
    _user_entry(entry)


def _is_user_event(entry: Entry | BadLine | None) -> bool:
    return isinstance(entry, Entry) and entry.extra.get("user_event") is True


def _compacted(line_index: int, payload: dict[str, Any], timestamp: str | None) -> Entry:
    message = _str(payload.get("message"))
    entry = Entry(line_index, "compacted", "compact_summary" if message else "compact_boundary", timestamp=timestamp)
    if message:
        entry.role, entry.blocks = "user", [Block("text", message)]
    return entry


def _flat(text: str) -> str:
    return " ".join(text.split())


def read_entries(
    path: Path, start_offset: int = 0, start_line: int = 0, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """Each line of a rollout from `start_offset`, with its normalised entry.

    A user response item directly followed by its user event (`user_message`, or `item_completed` with a
    UserMessage) becomes `other`: the event is the prompt. Lines are yielded in file order, so the item
    waits (with any noise after it) for the next line.
    """
    reader = _Reader(path, max_line_bytes)
    held: list[tuple[RawLine, Entry | BadLine | None]] = []
    last_event_prompt: str | None = None  # an event prompt not yet followed by the assistant's work
    for line in read_jsonl(path, start_offset, start_line, max_line_bytes):
        if line.error is not None:
            parsed: Entry | BadLine | None = BadLine(line.line_index, line.error)
        elif line.data is None:
            parsed = None
        else:
            parsed = checked(line.line_index, partial(reader.parse, line))
        if held and parsed is None:
            held.append((line, parsed))
            continue
        if held:
            if _is_user_event(parsed):
                held[0][1].kind = "other"  # type: ignore[union-attr]
            yield from held
            held.clear()
        if isinstance(parsed, Entry):
            if _is_user_event(parsed) and parsed.kind == "prompt":
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
