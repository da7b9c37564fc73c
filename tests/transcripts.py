"""Writers of Claude Code transcript lines in the shapes real transcripts have (see FORMATS.md)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

_clock = itertools.count()


def _stamp(minute: int | None = None) -> str:
    n = next(_clock) if minute is None else minute
    return f"2026-03-{1 + n // 1440:02d}T{(n // 60) % 24:02d}:{n % 60:02d}:00.000Z"


class ClaudeSession:
    """Builds the lines of one Claude Code session and appends them to its transcript file."""

    def __init__(self, path: Path, session_id: str, cwd: str = "/home/dev/shop", agent_id: str | None = None):
        self.path = path
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
            "timestamp": _stamp(),
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
                "timestamp": _stamp(),
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
            "timestamp": _stamp(),
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
