"""Searches on request, by words only: tool output (`--in tools`) and one voice of the conversation
(`--role user|assistant`).

Neither has vectors. Tool output is kept out of embeddings (and of mirrors) on purpose: it is long, noisy
and local, and "what was that error" is a question of exact words. A role is a property of an entry (a
prompt is the user's, an assistant message the assistant's), while chunks and their vectors hold a whole
turn, both voices together; so a role search reads `entries_fts` (one document per message) and a hit is
the turn holding that message. Both rank by BM25: every word first, any word when that finds too few.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from memex.plain import Record
from memex.redact import redact
from memex.search.highlight import highlighted_excerpt, spans_json
from memex.search.lexical import _words, fts_query, term_tokens
from memex.store.queries import Filters, turns_by_ids, where

SCOPES = ("conversation", "tools", "all")
ROLES = ("user", "assistant")
# The entry kinds whose text is each voice's own words (a user's meta messages and command output are not).
ROLE_KINDS = {"user": "prompt", "assistant": "assistant"}
# A hit shows at most this many characters of the tool output (or message) it matched, around the first
# match: a tool output may be 16,000 characters (`tool_output_max_chars`), a result is read at a glance.
EXCERPT_CHARS = 600
# Matching documents read per wanted result (several outputs of one turn, several turns of one session).
CANDIDATES_PER_RESULT = 5


class _Match(Record):
    __slots__ = ("chars", "is_error", "line_index", "owner_id", "score", "text", "tool_name", "turn_id")
    turn_id: int
    owner_id: int  # the tool output's id, or the entry's
    score: float
    text: str
    tool_name: str | None
    is_error: int
    chars: int
    line_index: int

    def __init__(
        self,
        turn_id: int,
        owner_id: int,
        score: float,
        text: str,
        tool_name: str | None = None,
        is_error: int = 0,
        chars: int = 0,
        line_index: int = 0,
    ) -> None:
        self.turn_id = turn_id
        self.owner_id = owner_id
        self.score = score
        self.text = text
        self.tool_name = tool_name
        self.is_error = is_error
        self.chars = chars
        self.line_index = line_index


def _ranked(
    conn: sqlite3.Connection,
    sql: str,
    table: str,
    kind: str | None,
    query: str,
    filters: Filters,
    limit: int,
    per_session: int,
) -> list[_Match]:
    """The best match of each turn, best first, at most `per_session` turns per session. `sql` selects
    (turn_id, owner_id, score, text, tool_name, is_error, chars, line_index, session_id) from the FTS5
    `table` joined to turns `t` and sessions `s`, with `{where}` for the conditions and a row limit after;
    `kind` keeps entries of that kind."""
    found: dict[int, _Match] = {}
    per: dict[str, int] = {}
    for match_all in (True, False):
        expression = fts_query(query, match_all)
        if expression is None:
            return []
        clauses, params = filters.turn_clauses("t", "s")
        clauses = [f"{table} MATCH ?", *(["e.kind = ?"] if kind else []), *clauses]
        values = [expression, *([kind] if kind else []), *params, limit * per_session * CANDIDATES_PER_RESULT]
        for row in conn.execute(sql.format(where=where(clauses)), values):
            if row["turn_id"] in found or per.get(row["session_id"], 0) >= per_session:
                continue
            per[row["session_id"]] = per.get(row["session_id"], 0) + 1
            found[row["turn_id"]] = _Match(*tuple(row)[:8])
        if len(found) >= limit or len(_words(query)) <= 1:
            break
    return list(found.values())[:limit]


_TOOL_SQL = (
    "SELECT o.turn_id, o.id, -bm25(tool_outputs_fts) AS score, o.text, o.tool_name, o.is_error, o.chars, "
    "o.line_index, t.session_id FROM tool_outputs_fts JOIN tool_outputs o ON o.id = tool_outputs_fts.rowid "
    "JOIN turns t ON t.id = o.turn_id JOIN sessions s ON s.session_id = t.session_id"
    "{where} ORDER BY bm25(tool_outputs_fts) LIMIT ?"
)
_ROLE_SQL = (
    "SELECT t.id AS turn_id, e.id, -bm25(entries_fts) AS score, e.text, NULL, 0, length(e.text), e.line_index, "
    "t.session_id FROM entries_fts JOIN entries e ON e.id = entries_fts.rowid "
    "JOIN turns t ON t.session_id = e.session_id AND t.agent_id = e.agent_id "
    "AND e.line_index BETWEEN t.line_index AND t.end_line_index "
    "JOIN sessions s ON s.session_id = t.session_id{where} ORDER BY bm25(entries_fts) LIMIT ?"
)


def search_tool_outputs(
    conn: sqlite3.Connection, query: str, filters: Filters, limit: int = 10, per_session: int = 1
) -> list[dict[str, Any]]:
    """Turns whose tool output holds the query's words, best first, as search result rows (`source`
    "tool": the turn that ran the tool, the tool's name, an excerpt of its output)."""
    matches = _ranked(conn, _TOOL_SQL, "tool_outputs_fts", None, query, filters, limit, per_session)
    return _rows(conn, query, matches, "tool")


def search_role(
    conn: sqlite3.Connection, query: str, filters: Filters, role: str, limit: int = 10, per_session: int = 1
) -> list[dict[str, Any]]:
    """Turns where the user (a prompt) or the assistant (its messages) wrote the query's words, best first."""
    matches = _ranked(conn, _ROLE_SQL, "entries_fts", ROLE_KINDS[role], query, filters, limit, per_session)
    return _rows(conn, query, matches, "turn")


def excerpt_of(text: str, query: str) -> str:
    """About EXCERPT_CHARS of `text` around the first match of the query, on one line. Only a window around
    the first place a query token occurs is marked up: a 16,000-character output costs no more than a page."""
    start, end = 0, len(text)
    if len(text) > 4 * EXCERPT_CHARS:
        folded = text.lower()
        found = [at for token in term_tokens(query) if (at := folded.find(token)) >= 0]
        if found:
            start = max(0, min(found) - EXCERPT_CHARS)
            end = min(len(text), min(found) + 2 * EXCERPT_CHARS)
        else:  # folded differently (diacritics): the first page
            end = 2 * EXCERPT_CHARS
    excerpt, _ = highlighted_excerpt(text[start:end], query, EXCERPT_CHARS)
    if start and not excerpt.startswith("…"):
        excerpt = "…" + excerpt
    if end < len(text) and not excerpt.endswith("…"):
        excerpt += "…"
    return excerpt


def _rows(conn: sqlite3.Connection, query: str, matches: list[_Match], source: str) -> list[dict[str, Any]]:
    turns = turns_by_ids(conn, [m.turn_id for m in matches])
    rows: list[dict[str, Any]] = []
    for match in matches:
        # A tool's output is where secrets get printed (`cat .env`, a token in a log), and an excerpt may be
        # handed to an agent (MCP) and its model: it is cut from the redacted output.
        excerpt = excerpt_of(redact(match.text)[0] if source == "tool" else match.text, query)
        row = {
            **turns[match.turn_id],
            "source": source,
            "score": round(match.score, 6),
            "matched_chunk": excerpt,
            "spans": spans_json(excerpt, query),
            "explain": {"lexical": {"rank": len(rows) + 1, "bm25": round(match.score, 4)}},
        }
        if source == "tool":
            row.update(
                tool_output_id=match.owner_id,
                tool_name=match.tool_name,
                tool_is_error=bool(match.is_error),
                tool_output_chars=match.chars,
                tool_line_index=match.line_index,
            )
        rows.append(row)
    return rows


def interleaved(lists: list[list[dict[str, Any]]], limit: int, per_session: int, rrf_k: int) -> list[dict[str, Any]]:
    """Result rows of several searches (`--in all`: the conversation's, tool output's) as one list: by
    reciprocal rank in their own list (`1 / (rrf_k + rank)`: their scores do not compare), the first list
    first on a tie, at most `per_session` rows per session."""
    ranked = sorted(
        ((1 / (rrf_k + rank), -order, row) for order, rows in enumerate(lists) for rank, row in enumerate(rows, 1)),
        key=lambda item: (item[0], item[1]),
        reverse=True,
    )
    chosen: list[dict[str, Any]] = []
    per: dict[str, int] = {}
    for _, _, row in ranked:
        if per.get(row["session_id"], 0) >= per_session:
            continue
        per[row["session_id"]] = per.get(row["session_id"], 0) + 1
        chosen.append(row)
        if len(chosen) == limit:
            break
    return chosen
