"""Writers of Claude Code transcript lines in the shapes real transcripts have (see FORMATS.md)."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

START = datetime(2026, 3, 1, tzinfo=UTC)


class Clock:
    """The timestamps of one transcript builder: each stamp one minute after the last, from `start`.

    Every builder has its own (nothing depends on which tests ran before); builders whose sessions must
    interleave in time share one by passing it.
    """

    def __init__(self, start: datetime = START) -> None:
        self.start = start
        self.minutes = itertools.count()

    def stamp(self) -> str:
        return (self.start + timedelta(minutes=next(self.minutes))).strftime("%Y-%m-%dT%H:%M:00.000Z")


class ClaudeSession:
    """Builds the lines of one Claude Code session and appends them to its transcript file."""

    def __init__(
        self,
        path: Path,
        session_id: str,
        cwd: str = "/home/dev/shop",
        agent_id: str | None = None,
        clock: Clock | None = None,
    ):
        self.path = path
        self.clock = clock or Clock()
        self.session_id = session_id
        self.cwd = cwd
        self.agent_id = agent_id
        self.counter = itertools.count()
        path.parent.mkdir(parents=True, exist_ok=True)

    def _base(self, kind: str) -> dict[str, Any]:
        n = next(self.counter)
        base = {
            "parentUuid": None,
            "isSidechain": self.agent_id is not None,
            "type": kind,
            "uuid": f"{self.session_id[:8]}-{self.agent_id or 'main'}-{n}",
            "timestamp": self.clock.stamp(),
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.100",
        }
        if self.agent_id:
            base["agentId"] = self.agent_id
        return base

    def write(self, *records: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")

    def prompt(self, text: str, **extra: Any) -> dict[str, Any]:
        return {**self._base("user"), "message": {"role": "user", "content": text}, **extra}

    def assistant(self, *blocks: dict[str, Any], message_id: str | None = None) -> dict[str, Any]:
        return {
            **self._base("assistant"),
            "message": {
                "id": message_id or f"msg_{next(self.counter)}",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": list(blocks),
            },
        }

    def tool_result(self, tool_use_id: str, content: str) -> dict[str, Any]:
        return {
            **self._base("user"),
            "message": {
                "role": "user",
                "content": [{"tool_use_id": tool_use_id, "type": "tool_result", "content": content}],
            },
        }

    def progress(self) -> dict[str, Any]:
        return {**self._base("progress"), "data": {"type": "hook_progress", "hookEvent": "PostToolUse"}}

    def compact_boundary(self) -> dict[str, Any]:
        return {
            **self._base("system"),
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "compactMetadata": {"trigger": "auto", "preTokens": 150000},
        }

    def compact_summary(self, text: str) -> dict[str, Any]:
        return {
            **self.prompt("This session is being continued from a previous conversation. " + text),
            "isCompactSummary": True,
        }

    def snapshot(self, *paths: str, message_id: str = "m") -> dict[str, Any]:
        return {
            "type": "file-history-snapshot",
            "messageId": message_id,
            "isSnapshotUpdate": False,
            "snapshot": {
                "messageId": message_id,
                "timestamp": self.clock.stamp(),
                "trackedFileBackups": {p: {"backupFileName": None, "version": 1} for p in paths},
            },
        }

    def pr_link(self, number: int, repository: str = "dev/shop") -> dict[str, Any]:
        return {
            "type": "pr-link",
            "sessionId": self.session_id,
            "prNumber": number,
            "prUrl": f"https://github.com/{repository}/pull/{number}",
            "prRepository": repository,
            "timestamp": self.clock.stamp(),
        }

    def custom_title(self, title: str) -> dict[str, Any]:
        return {"type": "custom-title", "sessionId": self.session_id, "customTitle": title}


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def thinking(value: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": "sig"}


def tool_use(tool_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def simple_turn(session: ClaudeSession, prompt: str, answer: str, edit: str | None = None) -> None:
    """Append one complete exchange, written one block per line as Claude Code does."""
    session.write(session.prompt(prompt))
    if edit:
        message_id = f"msg_edit_{next(session.counter)}"
        tool_id = f"toolu_{next(session.counter)}"
        session.write(session.assistant(text("Let me change it."), message_id=message_id))
        session.write(
            session.assistant(
                tool_use(tool_id, "Edit", file_path=f"{session.cwd}/{edit}", old_string="a", new_string="b"),
                message_id=message_id,
            )
        )
        session.write(session.tool_result(tool_id, "The file has been updated."))
    session.write(session.assistant(text(answer)))


def retry_projects(root: Path, count: int) -> list[ClaudeSession]:
    """`count` one-turn Claude sessions about a retry loop, spread over three project folders under `root`."""
    sessions = []
    for i in range(count):
        session_id = f"{i:08d}-1111-2222-3333-444444444444"
        session = ClaudeSession(root / f"-home-dev-p{i % 3}" / f"{session_id}.jsonl", session_id)
        simple_turn(session, f"prompt {i} about the retry loop", f"answer {i}: capped the retries")
        sessions.append(session)
    return sessions


class CodexRollout:
    """Builds the lines of one Codex CLI rollout (the wrapped `{timestamp, type, payload}` layout)."""

    def __init__(self, path: Path, session_id: str, cwd: str = "/home/dev/shop", clock: Clock | None = None):
        self.path = path
        self.clock = clock or Clock()
        self.session_id = session_id
        self.cwd = cwd
        self.calls = itertools.count()
        path.parent.mkdir(parents=True, exist_ok=True)

    def write(self, *records: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")

    def line(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": self.clock.stamp(), "type": kind, "payload": payload}

    def meta(self) -> dict[str, Any]:
        payload = {"id": self.session_id, "timestamp": self.clock.stamp(), "cwd": self.cwd, "cli_version": "0.58.0"}
        return self.line("session_meta", {**payload, "originator": "codex_cli_rs", "instructions": "Be brief."})

    def message(self, role: str, value: str) -> dict[str, Any]:
        part = "output_text" if role == "assistant" else "input_text"
        return self.line("response_item", {"type": "message", "role": role, "content": [{"type": part, "text": value}]})

    def prompt(self, value: str) -> list[dict[str, Any]]:
        """A prompt as Codex writes it: the response item, then the `user_message` event with the same text."""
        return [
            self.message("user", value),
            self.line("event_msg", {"type": "user_message", "message": value, "images": []}),
            self.line("turn_context", {"cwd": self.cwd, "model": "gpt-5-codex"}),
        ]

    def answer(self, value: str) -> list[dict[str, Any]]:
        """An answer written twice, as an `agent_message` event and an assistant response item."""
        return [self.line("event_msg", {"type": "agent_message", "message": value}), self.message("assistant", value)]

    def reasoning(self, value: str) -> list[dict[str, Any]]:
        summary = [{"type": "summary_text", "text": value}]
        return [
            self.line("event_msg", {"type": "agent_reasoning", "text": value}),
            self.line("response_item", {"type": "reasoning", "summary": summary, "content": None}),
        ]

    def shell(self, script: str) -> list[dict[str, Any]]:
        call_id = f"call_{next(self.calls)}"
        arguments = json.dumps({"command": ["bash", "-lc", script], "workdir": self.cwd})
        return [
            self.line(
                "response_item", {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": call_id}
            ),
            self.line(
                "response_item", {"type": "function_call_output", "call_id": call_id, "output": '{"output":"ok"}'}
            ),
        ]

    def patch(self, *files: str) -> list[dict[str, Any]]:
        call_id = f"call_{next(self.calls)}"
        body = "*** Begin Patch\n" + "".join(f"*** Update File: {f}\n@@\n-a\n+b\n" for f in files) + "*** End Patch\n"
        item = {"type": "custom_tool_call", "status": "completed", "call_id": call_id, "name": "apply_patch"}
        return [
            self.line("response_item", {**item, "input": body}),
            self.line("response_item", {"type": "custom_tool_call_output", "call_id": call_id, "output": "Success."}),
        ]

    def turn(self, prompt: str, answer: str, script: str | None = None) -> None:
        """Append one complete exchange."""
        records = self.prompt(prompt) + self.reasoning("Thinking about it")
        if script:
            records += self.shell(script)
        self.write(*records, *self.answer(answer))


class GeminiChat:
    """Builds a Gemini CLI chat in the event-sourced JSONL form (header, messages, `$set`, `$rewindTo`)."""

    def __init__(
        self, path: Path, session_id: str, project_hash: str = "0" * 64, kind: str = "main", clock: Clock | None = None
    ):
        self.path = path
        self.clock = clock or Clock()
        self.session_id = session_id
        self.ids = itertools.count()
        path.parent.mkdir(parents=True, exist_ok=True)
        self.write(
            {
                "sessionId": session_id,
                "projectHash": project_hash,
                "startTime": self.clock.stamp(),
                "lastUpdated": self.clock.stamp(),
                "kind": kind,
            }
        )

    def write(self, *records: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            for record in records:
                handle.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n")

    def user(self, value: str) -> dict[str, Any]:
        return {
            "id": f"m{next(self.ids)}",
            "timestamp": self.clock.stamp(),
            "type": "user",
            "content": [{"text": value}],
        }

    def gemini(self, value: str, *tool_calls: dict[str, Any], thoughts: list[str] = ()) -> dict[str, Any]:
        return {
            "id": f"m{next(self.ids)}",
            "timestamp": self.clock.stamp(),
            "type": "gemini",
            "content": value,
            "thoughts": [{"subject": t, "description": t, "timestamp": self.clock.stamp()} for t in thoughts],
            "toolCalls": list(tool_calls),
            "tokens": None,
            "model": "gemini-2.5-pro",
        }

    @staticmethod
    def call(name: str, clock: Clock | None = None, **args: Any) -> dict[str, Any]:
        stamp = (clock or Clock()).stamp()
        return {"id": f"{name}-1", "name": name, "args": args, "status": "success", "timestamp": stamp}

    def touch(self) -> dict[str, Any]:
        return {"$set": {"lastUpdated": self.clock.stamp()}}

    def turn(self, prompt: str, answer: str) -> None:
        self.write(self.user(prompt), self.touch(), self.gemini(answer), self.touch())


def files_turn(
    session: ClaudeSession, prompt: str, reads: tuple[str, ...] = (), edits: tuple[str, ...] = (), answer: str = "Done."
) -> None:
    """Append one complete exchange whose assistant reads then edits files (paths relative to the cwd)."""
    session.write(session.prompt(prompt))
    message_id = f"msg_files_{next(session.counter)}"
    calls = [("Read", path, {}) for path in reads] + [
        ("Edit", path, {"old_string": "a", "new_string": "b"}) for path in edits
    ]
    for name, path, extra in calls:
        tool_id = f"toolu_{next(session.counter)}"
        session.write(
            session.assistant(
                tool_use(tool_id, name, file_path=f"{session.cwd}/{path}", **extra), message_id=message_id
            )
        )
        session.write(session.tool_result(tool_id, "ok"))
    session.write(session.assistant(text(answer)))
