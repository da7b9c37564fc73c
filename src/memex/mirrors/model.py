"""What a mirror is: the conversation-only text of a session, with its speakers' spans and times in its
metadata (built by `mirrors.build`, stored in segments by `mirrors.segments`, searched by `mirrors.search`)."""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from memex.plain import Record

# How each speaker is labelled in a mirror's text (`User: …`).
LABELS = {"user": "User", "assistant": "Assistant", "summary": "Compaction summary"}


class Mirror(Record):
    """One session's mirror, ready to store (or as read back)."""

    __slots__ = (
        "agent",
        "computer",
        "content_hash",
        "conversation_text",
        "metadata",
        "project",
        "session_id",
        "timestamp_end",
        "timestamp_start",
        "title",
    )

    session_id: str
    computer: str
    agent: str
    project: str | None
    title: str | None
    timestamp_start: str | None
    timestamp_end: str | None
    conversation_text: str
    metadata: dict[str, Any]
    content_hash: str

    def __init__(
        self,
        session_id: str,
        computer: str,
        agent: str,
        project: str | None,
        title: str | None,
        timestamp_start: str | None,
        timestamp_end: str | None,
        conversation_text: str,
        metadata: dict[str, Any] | None = None,
        content_hash: str = "",
    ) -> None:
        self.session_id = session_id
        self.computer = computer
        self.agent = agent
        self.project = project
        self.title = title
        self.timestamp_start = timestamp_start
        self.timestamp_end = timestamp_end
        self.conversation_text = conversation_text
        self.metadata = {} if metadata is None else metadata
        self.content_hash = content_hash

    def messages(self) -> list[dict[str, Any]]:
        """The conversation as a list of {role, text, timestamp}."""
        return [
            {"role": role, "text": self.conversation_text[start:end], "timestamp": timestamp}
            for role, start, end, timestamp in self.metadata.get("messages", [])
        ]


def mirror_from_row(row: sqlite3.Row) -> Mirror:
    return Mirror(
        session_id=row["session_id"],
        computer=row["computer"],
        agent=row["agent"],
        project=row["project"],
        title=row["title"],
        timestamp_start=row["timestamp_start"],
        timestamp_end=row["timestamp_end"],
        conversation_text=row["conversation_text"],
        metadata=orjson.loads(row["metadata"]),
        content_hash=row["content_hash"],
    )
