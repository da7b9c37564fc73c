"""What gets embedded: the text of a chunk, of a turn, and the extractive summary of a session.

Only what carries meaning is embedded: conversation text, tool summaries and session facts, never raw
tool output (turns and chunks hold none). Every text is bounded, so nothing (a pasted log, base64, minified
code) can cost the model more than a page of prose. Changing a recipe here means bumping
`memex.config.EMBED_TEXT_VERSION`, unless a vector computed before stays right (`ChunkBudget`).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import groupby
from pathlib import PurePath
from typing import Any

import orjson

from memex.config import Config
from memex.digest import blake2b
from memex.embed.worth import language_lines
from memex.textutil import estimate_tokens

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
    return blake2b(text.encode("utf-8", "replace"), digest_size=8).hexdigest()


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


def _ends(text: str, chars: int) -> str:
    """`text`, or only its first and last `chars` when it is longer than both (cheap to bound, same ends)."""
    return text if len(text) <= 2 * chars else text[:chars] + "\n" + text[-chars:]


def _turn_parts(full_text: str, tool_summary: str, config: Config) -> tuple[str, str]:
    """The conversation part and the tool-summary part a turn's vector is computed from."""
    budget = config.embed_turn_max_chars
    summary = bound_text(tool_summary, budget // 4) if tool_summary else ""
    return head_and_tail(bound_text(_ends(full_text, 8 * budget), 1 << 62), budget - len(summary) - 1), summary


def turn_embed_text(full_text: str, tool_summary: str, config: Config) -> str:
    """A turn is embedded as its conversation (start and end when long) and the start of its tool summary."""
    body, summary = _turn_parts(full_text, tool_summary, config)
    return f"{body}\n{summary}".strip()


def _spans(text: str, pieces: Iterable[str]) -> list[tuple[int, int]]:
    """Where each piece (found in order, each after the start of the previous) lies in `text`."""
    spans, start = [], 0
    for piece in pieces:
        at = text.find(piece, start) if piece else -1
        if at >= 0:
            spans.append((at, at + len(piece)))
            start = at
    return spans


@dataclass(frozen=True)
class ChunkBudget:
    """How much of a long turn its chunk vectors read; lexical search reads all of it.

    The turn's own vector reads the start and end of its conversation; chunk vectors add the middle of a
    long turn, but only its language (`worth.language_lines`: not code, diffs, logs, JSON or paths), only
    the start of each chunk's (`read_chars`), and for at most `per_turn` chunks, those with the most
    language. A chunk with less than `min_chars` of language of its own, or with less than `min_share` of
    its text read by no other vector of its turn (the turn's, the previous chunk's), shares the turn's vector.
    6 chunks and half their text, not 8 and a quarter: 5% fewer model tokens on the shared corpus (README,
    "Embedding cost"), for 4 of 212 known items found by meaning alone (none by words and meaning).
    A vector computed under another budget reads the same chunk, only more or less of it: it stays right,
    so the budget is no part of `model_version` (changing it re-embeds nothing).
    """

    language_only: bool = True
    read_chars: int = 400
    per_turn: int = 6
    min_chars: int = 160
    min_share: float = 0.5


CHUNK_BUDGET = ChunkBudget()
# Every chunk read whole but for what other vectors of its turn read (the rule before `ChunkBudget`).
UNBOUNDED = ChunkBudget(language_only=False, read_chars=1 << 62, per_turn=1 << 62, min_chars=0, min_share=0.25)


def chunk_unread_texts(
    contents: list[str], full_text: str, tool_summary: str, config: Config, budget: ChunkBudget | None = None
) -> list[str | None]:
    """For a turn's chunks (in order), the text each chunk's own vector reads, or None when the chunk
    shares the turn's vector.

    Chunks overlap their predecessor (`chunk_overlap_tokens`), and the turn's own vector reads the start and
    the end of its conversation and the start of its tool summary: that text is already embedded once. A
    chunk's vector is computed from the rest, its pieces joined by " … "; when the rest is under
    `budget.min_share` of the chunk it carries too little of its own to be worth a vector. What is left is
    then cut to `budget` (`CHUNK_BUDGET`). A chunk that cannot be placed in the turn's text (a cut that
    split a long run) keeps its whole text, within the same budget.
    """
    budget = budget or CHUNK_BUDGET
    whole = bound_text(full_text + ("\n\n" + tool_summary if tool_summary else ""), 1 << 62)
    body, summary = _turn_parts(full_text, tool_summary, config)
    read = _spans(whole, [p.strip() for p in body.split(" … ")] + [summary])
    unread: list[str | None] = []
    start = covered_to = 0
    for content in contents:
        own = chunk_embed_text(content, config)
        at = whole.find(own[:64], start) if own else -1
        if at < 0:
            unread.append(_within(own, budget))
            continue
        end = at + len(own)
        gaps = [(max(at, covered_to), end)]
        for lo, hi in read:
            gaps = [part for a, b in gaps for part in ((a, min(b, lo)), (max(a, hi), b)) if part[0] < part[1]]
        text = " … ".join(u for u in (whole[a:b].strip() for a, b in gaps) if u)
        unread.append(_within(text, budget) if len(text) >= budget.min_share * len(own) else None)
        start, covered_to = at + 1, max(covered_to, end)
    ranked = sorted((i for i, text in enumerate(unread) if text), key=lambda i: -len(unread[i] or ""))
    kept = set(ranked[: budget.per_turn])
    return [_start(text, budget.read_chars) if i in kept and text else None for i, text in enumerate(unread)]


def _start(text: str, max_chars: int) -> str:
    """The start of `text`, at most `max_chars`, cut between words."""
    return text if len(text) <= max_chars else text[:max_chars].rsplit(None, 1)[0]


def _within(text: str, budget: ChunkBudget) -> str | None:
    """`text` as the budget lets a chunk vector read it (uncut yet), or None when too little is left."""
    if budget.language_only:
        text = language_lines(text)
    return text if text and len(text) >= budget.min_chars else None


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
        # A chunk's vector reads only what no other vector of its turn reads, within the chunk budget
        # (`chunk_unread_texts`); a chunk with too little of its own (a turn's only chunk, one the turn's
        # text holds, one of code, one past the turn's budget) reads as the turn itself: the same text, so
        # the worker reuses the turn's vector instead of computing one. (A chunk embedded whole before this
        # rule keeps that vector: it is as right as ever.)
        rows = conn.execute(
            "SELECT c.turn_id, c.id, c.content, t.full_text, t.tool_summary FROM chunks c "
            "JOIN turns t ON t.id = c.turn_id "
            f"WHERE c.turn_id IN (SELECT turn_id FROM chunks WHERE id IN ({marks})) ORDER BY c.turn_id, c.chunk_index",
            ids,
        ).fetchall()
        wanted, texts = set(ids), {}
        for _turn_id, group in groupby(rows, key=lambda r: r[0]):
            members = list(group)
            full_text, tool_summary = members[0][3], members[0][4]
            turn_text = turn_embed_text(full_text, tool_summary, config)
            unread = chunk_unread_texts([m[2] for m in members], full_text, tool_summary, config)
            for member, own in zip(members, unread, strict=True):
                if member[1] in wanted:
                    texts[member[1]] = turn_text if own is None or len(members) == 1 else own
        return texts
    if level == "turn":
        turns = conn.execute(f"SELECT id, full_text, tool_summary FROM turns WHERE id IN ({marks})", ids)
        return {r[0]: turn_embed_text(r[1], r[2], config) for r in turns}
    if level == "session":
        summaries = {owner: session_summary(conn, owner, config) for owner in ids}
        return {owner: text for owner, text in summaries.items() if text is not None}
    raise ValueError(f"unknown level {level!r}")
