"""What gets embedded: the text of a chunk, of a turn, and the extractive summary of a session.

Only what carries meaning is embedded: conversation text, tool summaries and session facts, never raw
tool output (turns and chunks hold none). Every text is bounded, so nothing (a pasted log, base64, minified
code) can cost the model more than a page of prose. Changing a recipe here means bumping
`memex.config.EMBED_TEXT_VERSION`.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

import orjson

from memex.config import Config
from memex.textutil import estimate_tokens

LEVELS = ("session", "turn", "chunk")  # coarse to fine; also the order the worker drains them in
# A run without whitespace longer than this (base64, a minified line, a hash) keeps only its start.
MAX_RUN_CHARS = 48
_LONG_RUN = re.compile(rf"\S{{{MAX_RUN_CHARS + 1},}}")
_SPACES = re.compile(r"[ \t\r\f\v]+")
# Parts of a session summary, each cut to this many characters before the whole is bounded.
SUMMARY_PART_CHARS = 300
SUMMARY_FILES = 8
# The outcome is the last assistant message of at least this many tokens.
MIN_OUTCOME_TOKENS = 8


def text_hash(text: str) -> str:
    """A short digest of a text (what a vector was computed from)."""
    return hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


def bound_text(text: str, max_chars: int) -> str:
    """`text` made safe and cheap to embed: no NULs, long unbroken runs cut, at most `max_chars`."""
    text = text.replace("\x00", " ")
    text = _LONG_RUN.sub(lambda m: m.group(0)[:MAX_RUN_CHARS] + "…", text)
    text = _SPACES.sub(" ", text).strip()
    return text[:max_chars]


def head_and_tail(text: str, max_chars: int) -> str:
    """Up to `max_chars` of `text`: its start and, when it is longer, its end (where conclusions are)."""
    if len(text) <= max_chars:
        return text
    head = (max_chars * 2) // 3
    tail = max_chars - head - 3
    return text[:head].rstrip() + " … " + text[-tail:].lstrip()


def chunk_embed_text(content: str, config: Config) -> str:
    """A chunk is embedded as it is (bounded)."""
    return bound_text(content, config.embed_chunk_max_chars)


def turn_embed_text(full_text: str, tool_summary: str, config: Config) -> str:
    """A turn is embedded as its conversation (start and end when long) and the start of its tool summary."""
    budget = config.embed_turn_max_chars
    summary = bound_text(tool_summary, budget // 4) if tool_summary else ""
    body = head_and_tail(bound_text(full_text, 8 * budget), budget - len(summary) - 1)
    return f"{body}\n{summary}".strip()


def _first_and_last(conversation: str, spans: list[list[Any]]) -> tuple[str, str]:
    """The first user message and the last substantial assistant message of a mirror (a closing "You're
    welcome." concludes nothing)."""
    first = next((conversation[s[1] : s[2]] for s in spans if s[0] == "user"), "")
    answers = [conversation[s[1] : s[2]] for s in spans if s[0] == "assistant"]
    last = next(
        (a for a in reversed(answers) if estimate_tokens(a) >= MIN_OUTCOME_TOKENS), answers[-1] if answers else ""
    )
    return first, last


def session_summary(conn: sqlite3.Connection, mirror_id: int, config: Config) -> str | None:
    """The extractive summary of a session, from its mirror: title, project, the first request, the last
    answer (its conclusions) and, for a session indexed here, the files it touched most and its PRs.

    None when the mirror is gone.
    """
    row = conn.execute(
        "SELECT m.session_id, m.computer, m.title, m.project, m.conversation_text, m.metadata, "
        "s.session_id IS NOT NULL AS local FROM mirrors m "
        "LEFT JOIN sessions s ON s.session_id = m.session_id AND s.computer = m.computer WHERE m.id = ?",
        (mirror_id,),
    ).fetchone()
    if row is None:
        return None
    spans = orjson.loads(row["metadata"]).get("messages", [])
    first, last = _first_and_last(row["conversation_text"], spans)
    parts = []
    if row["title"]:
        parts.append(f"Title: {row['title']}")
    if row["project"]:
        parts.append(f"Project: {PurePath(row['project']).name}")
    if first:
        parts.append("Request: " + head_and_tail(bound_text(first, 4 * SUMMARY_PART_CHARS), SUMMARY_PART_CHARS))
    if last and last != first:
        parts.append("Outcome: " + head_and_tail(bound_text(last, 4 * SUMMARY_PART_CHARS), SUMMARY_PART_CHARS))
    if row["local"]:
        files = [
            r[0]
            for r in conn.execute(
                "SELECT fm.file_path, count(*) AS n FROM turns t JOIN file_mentions fm ON fm.turn_id = t.id "
                "WHERE t.session_id = ? GROUP BY fm.file_path ORDER BY n DESC, fm.file_path LIMIT ?",
                (row["session_id"], SUMMARY_FILES),
            )
        ]
        if files:
            parts.append("Files: " + ", ".join(files))
        prs = [
            f"#{r[0]}" + (f" ({r[1]})" if r[1] else "")
            for r in conn.execute(
                "SELECT DISTINCT pr_number, repository FROM pr_links WHERE session_id = ? ORDER BY pr_number",
                (row["session_id"],),
            )
        ]
        if prs:
            parts.append("Pull requests: " + ", ".join(prs))
    return bound_text("\n".join(parts), config.embed_session_max_chars) or None


def embed_texts(conn: sqlite3.Connection, level: str, owner_ids: Iterable[int], config: Config) -> dict[int, str]:
    """The text each owner of `level` is embedded from (owners that no longer exist are left out)."""
    ids = list(owner_ids)
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    if level == "chunk":
        # A turn's only chunk, or one whose text the turn's own embedded text holds whole, reads as the turn
        # itself: the same text, so the worker reuses the turn's vector instead of computing one. (A chunk
        # embedded on its own before this rule keeps that vector: it is as right as ever.)
        rows = conn.execute(
            "SELECT c.id, c.content, t.full_text, t.tool_summary, "
            "(SELECT count(*) FROM chunks c2 WHERE c2.turn_id = c.turn_id) AS pieces "
            f"FROM chunks c JOIN turns t ON t.id = c.turn_id WHERE c.id IN ({marks})",
            ids,
        )
        texts = {}
        for chunk_id, content, full_text, tool_summary, pieces in rows:
            turn_text = turn_embed_text(full_text, tool_summary, config)
            own = chunk_embed_text(content, config)
            texts[chunk_id] = turn_text if pieces == 1 or own in turn_text else own
        return texts
    if level == "turn":
        rows = conn.execute(f"SELECT id, full_text, tool_summary FROM turns WHERE id IN ({marks})", ids)
        return {r[0]: turn_embed_text(r[1], r[2], config) for r in rows}
    if level == "session":
        summaries = {owner: session_summary(conn, owner, config) for owner in ids}
        return {owner: text for owner, text in summaries.items() if text is not None}
    raise ValueError(f"unknown level {level!r}")
