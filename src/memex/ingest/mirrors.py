"""Mirrors: the conversation-only text of a session, the artefact that travels between computers.

A mirror holds what the user and the assistant said to each other in the session's main stream, read from
the stored entries: prompts, assistant text and compaction summaries. Tool calls, tool results, thinking,
injected context, empty text and `<system-reminder>` blocks are not in it, nor are subagents' chats.
`conversation_text` is the messages as `User: …` / `Assistant: …` paragraphs (what full-text search
indexes); `metadata["messages"]` gives each message's speaker, character span and time, so a reader
never has to parse the text back.
"""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from memex.textutil import fts_text, strip_system_reminders

MIRROR_FORMAT = 1
LABELS = {"user": "User", "assistant": "Assistant", "summary": "Compaction summary"}
_ROLES = {"prompt": "user", "assistant": "assistant", "compact_summary": "summary"}
# One pasted log or generated file must not become most of a mirror (they travel between computers):
# a message keeps its first 20,000 characters, and a mirror its first and last 1,000,000.
MAX_MESSAGE_CHARS = 20_000
MAX_MIRROR_CHARS = 2_000_000
_CUT = "\n[… cut by memex …]"


@dataclass
class Mirror:
    """One session's mirror, ready to store (or as read back)."""

    session_id: str
    computer: str
    agent: str
    project: str | None
    title: str | None
    timestamp_start: str | None
    timestamp_end: str | None
    conversation_text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    content_hash: str = ""

    def messages(self) -> list[dict[str, Any]]:
        """The conversation as a list of {role, text, timestamp}."""
        return [
            {"role": role, "text": self.conversation_text[start:end], "timestamp": timestamp}
            for role, start, end, timestamp in self.metadata.get("messages", [])
        ]


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _conversation(rows: list[sqlite3.Row]) -> list[list[Any]]:
    """[role, text, timestamp] per message; the lines of one assistant response joined, repeats dropped."""
    messages: list[list[Any]] = []
    seen: set[tuple[str, str]] = set()
    for row in rows:
        text = strip_system_reminders(row["text"] or "").strip()
        if not text:
            continue
        if len(text) > MAX_MESSAGE_CHARS:
            text = text[:MAX_MESSAGE_CHARS] + _CUT
        role = _ROLES[row["kind"]]
        if role == "assistant" and row["message_id"]:
            if (row["message_id"], text) in seen:
                continue
            seen.add((row["message_id"], text))
        if role == "assistant" and messages and messages[-1][0] == "assistant":
            messages[-1][1] += "\n\n" + text
        else:
            messages.append([role, text, row["timestamp"]])
    return messages


def _render(messages: list[list[Any]]) -> tuple[str, list[list[Any]]]:
    """The conversation text and each message's [role, start, end, timestamp] in it."""
    parts, spans, offset = [], [], 0
    for role, text, timestamp in messages:
        label = f"{LABELS[role]}: "
        if parts:
            offset += 2
        spans.append([role, offset + len(label), offset + len(label) + len(text), timestamp])
        parts.append(label + text)
        offset += len(label) + len(text)
    return "\n\n".join(parts), spans


def _fit(messages: list[list[Any]]) -> list[list[Any]]:
    """Messages trimmed to MAX_MIRROR_CHARS: the first and the last half are kept."""
    total = sum(len(text) for _, text, _ in messages)
    if total <= MAX_MIRROR_CHARS:
        return messages
    half = MAX_MIRROR_CHARS // 2
    head, used = [], 0
    for message in messages:
        if used + len(message[1]) > half:
            break
        head.append(message)
        used += len(message[1])
    tail, used = [], 0
    for message in reversed(messages[len(head) :]):
        if used + len(message[1]) > half:
            break
        tail.append(message)
        used += len(message[1])
    omitted = len(messages) - len(head) - len(tail)
    note = ["summary", f"[… {omitted} messages cut by memex …]", None]
    return [*head, note, *reversed(tail)]


def build_mirror(conn: sqlite3.Connection, session_id: str) -> Mirror | None:
    """The mirror of a local session, from its stored entries; None when it holds no conversation."""
    session = conn.execute(
        "SELECT session_id, agent, computer, project_dir, title, started_at, ended_at FROM sessions "
        "WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    if session is None:
        return None
    rows = conn.execute(
        "SELECT kind, text, timestamp, message_id FROM entries WHERE session_id = ? AND agent_id = '' "
        "AND kind IN ('prompt', 'assistant', 'compact_summary') AND text IS NOT NULL ORDER BY line_index",
        (session_id,),
    ).fetchall()
    messages = _fit(_conversation(rows))
    if not messages:
        return None
    text, spans = _render(messages)
    prs = [r[0] for r in conn.execute("SELECT pr_number FROM pr_links WHERE session_id = ? ORDER BY 1", (session_id,))]
    metadata = {"format": MIRROR_FORMAT, "messages": spans, "prs": prs}
    mirror = Mirror(
        session_id=session["session_id"],
        computer=session["computer"],
        agent=session["agent"],
        project=session["project_dir"],
        title=session["title"],
        timestamp_start=session["started_at"],
        timestamp_end=session["ended_at"],
        conversation_text=text,
        metadata=metadata,
    )
    mirror.content_hash = content_hash(mirror)
    return mirror


def content_hash(mirror: Mirror) -> str:
    """A digest of everything a mirror says (its computer and session id aside)."""
    payload = orjson.dumps(
        [
            mirror.agent,
            mirror.project,
            mirror.title,
            mirror.timestamp_start,
            mirror.timestamp_end,
            mirror.conversation_text,
            mirror.metadata,
        ],
        option=orjson.OPT_SORT_KEYS,
    )
    return hashlib.blake2b(payload, digest_size=16).hexdigest()


def store_mirror(conn: sqlite3.Connection, mirror: Mirror, updated_at: str | None = None) -> bool:
    """Insert or replace the mirror of (session, computer); False when the stored one says the same."""
    row = conn.execute(
        "SELECT content_hash FROM mirrors WHERE session_id = ? AND computer = ?", (mirror.session_id, mirror.computer)
    ).fetchone()
    if row is not None and row["content_hash"] == mirror.content_hash:
        return False
    conn.execute(
        "INSERT INTO mirrors (session_id, computer, agent, project, title, timestamp_start, timestamp_end, "
        "conversation_text, metadata, content_hash, updated_at, fts_title, fts_body) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (session_id, computer) DO UPDATE SET agent = excluded.agent, project = excluded.project, "
        "title = excluded.title, timestamp_start = excluded.timestamp_start, "
        "timestamp_end = excluded.timestamp_end, conversation_text = excluded.conversation_text, "
        "metadata = excluded.metadata, content_hash = excluded.content_hash, updated_at = excluded.updated_at, "
        "fts_title = excluded.fts_title, fts_body = excluded.fts_body",
        (
            mirror.session_id,
            mirror.computer,
            mirror.agent,
            mirror.project,
            mirror.title,
            mirror.timestamp_start,
            mirror.timestamp_end,
            mirror.conversation_text,
            orjson.dumps(mirror.metadata).decode(),
            mirror.content_hash,
            updated_at or _now(),
            fts_text(mirror.title) if mirror.title else None,
            fts_text(mirror.conversation_text),
        ),
    )
    return True


def refresh_mirror(conn: sqlite3.Connection, session_id: str) -> bool:
    """Rebuild a local session's mirror; True when the stored mirror changed (written or removed)."""
    mirror = build_mirror(conn, session_id)
    if mirror is None:
        return (
            conn.execute(
                "DELETE FROM mirrors WHERE session_id = ? AND computer = "
                "(SELECT computer FROM sessions WHERE session_id = ?)",
                (session_id, session_id),
            ).rowcount
            > 0
        )
    return store_mirror(conn, mirror)


def sessions_without_mirror(conn: sqlite3.Connection) -> list[str]:
    """Local sessions holding conversation but no mirror yet (indexed before mirrors existed)."""
    rows = conn.execute(
        "SELECT s.session_id FROM sessions s WHERE NOT EXISTS "
        "(SELECT 1 FROM mirrors m WHERE m.session_id = s.session_id AND m.computer = s.computer) "
        "AND EXISTS (SELECT 1 FROM entries e WHERE e.session_id = s.session_id AND e.agent_id = '' "
        "AND e.kind IN ('prompt', 'assistant', 'compact_summary') AND e.text IS NOT NULL) ORDER BY s.session_id"
    ).fetchall()
    return [r[0] for r in rows]


def get_mirror(conn: sqlite3.Connection, session_id: str, computer: str | None = None) -> Mirror | None:
    """A stored mirror of a session: this computer's when it has one, else the most recently updated."""
    row = conn.execute(
        "SELECT * FROM mirrors WHERE session_id = ? ORDER BY computer = ? DESC, updated_at DESC LIMIT 1",
        (session_id, computer or ""),
    ).fetchone()
    return mirror_from_row(row) if row else None


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
