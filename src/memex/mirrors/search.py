"""Search over mirrors: BM25 over their title and conversation, and the result rows of mirror hits.

A session indexed here is found through its turns; its mirror hit only strengthens its best turn. A session
known only by its mirror (another computer's) is a hit of its own, with an excerpt of its conversation.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

from memex.mirrors.model import LABELS, mirror_from_row
from memex.search.highlight import spans_json
from memex.search.lexical import _words, fts_terms, prefix_word
from memex.store.queries import Filters, where
from memex.textutil import has_cjk

# Title words count double: a session named for a subject is about it.
TITLE_WEIGHT = 2.0
EXCERPT_CHARS = 400
CONTEXT_CHARS = 4_000
# Phrases looked up at most per query (its first): each is a SELECT of the lookup's compound, which SQLite
# bounds at 500, and a pasted page as a query would otherwise be refused ("too many terms").
MAX_TERMS = 64


def _match_offset(text: str, query: str) -> int:
    """Where the first query word occurs in `text` (case-insensitive), or 0."""
    lowered = text.lower()
    best = -1
    for word in _words(query):
        word = prefix_word(word)[0]  # `zebr*` begins `zebra`
        needle = word.lower() if not has_cjk(word) else re.sub(r"\s+", "", word)
        found = lowered.find(needle)
        if found >= 0 and (best < 0 or found < best):
            best = found
    return max(best, 0)


def excerpt(text: str, query: str, size: int = EXCERPT_CHARS) -> str:
    """About `size` characters of `text` around the first place the query matches, on one line."""
    at = _match_offset(text, query)
    start = max(0, at - size // 3)
    piece = " ".join(text[start : start + size].split())
    return ("…" if start > 0 else "") + piece + ("…" if start + size < len(text) else "")


def message_context(text: str, spans: list[list[Any]], query: str) -> str:
    """The matched message and the one before it, with their speaker labels (a turn-sized view)."""
    at = _match_offset(text, query)
    index = next((i for i, span in enumerate(spans) if span[1] <= at <= span[2]), None)
    if index is None:
        return text[:CONTEXT_CHARS]
    first = max(0, index - 1)
    start = spans[first][1] - len(LABELS.get(spans[first][0], "User")) - 2
    piece = text[max(0, start) : spans[index][2]]
    return piece if len(piece) <= CONTEXT_CHARS else piece[:CONTEXT_CHARS] + "…"


def _ranked(
    conn: sqlite3.Connection, terms: list[str], match_all: bool, scoped: tuple[list[str], list[Any]], limit: int
) -> list[sqlite3.Row]:
    """Mirrors holding all (or any) of the FTS5 phrases `terms`, best first.

    A mirror is indexed in segments, so each phrase is looked up apart and the hits are grouped per
    mirror: all words must occur in the conversation, not in one segment. A mirror's score is, for each
    phrase, BM25 of its best segment (the title is in the first), summed over the phrases: the BM25 of
    the whole conversation for a mirror of one segment, as most are."""
    clauses, params = scoped
    # (bm25() cannot be aggregated where it is computed: the lookups are materialized first.)
    lookups = " UNION ALL ".join(
        f"SELECT {index} AS term, s.mirror_id, -bm25(mirrors_fts, {TITLE_WEIGHT}, 1.0) AS score FROM mirrors_fts "
        "JOIN mirror_segments s INDEXED BY mirror_segments_owner ON s.id = mirrors_fts.rowid "
        "WHERE mirrors_fts MATCH ?"
        for index in range(len(terms))
    )
    having = f" HAVING count(*) = {len(terms)}" if match_all else ""
    return conn.execute(
        f"WITH hits AS MATERIALIZED ({lookups}), "
        "best AS (SELECT mirror_id, term, max(score) AS score FROM hits GROUP BY mirror_id, term) "
        f"SELECT m.id, sum(b.score) AS score FROM best b JOIN mirror_records m ON m.id = b.mirror_id{where(clauses)} "
        f"GROUP BY m.id{having} ORDER BY score DESC LIMIT ?",
        [*terms, *params, limit],
    ).fetchall()


def search_mirrors(conn: sqlite3.Connection, query: str, filters: Filters, limit: int) -> list[dict[str, Any]]:
    """Mirrors matching `query` by BM25 (all words first, any word when that finds too few), best first."""
    scoped = filters.mirror_clauses("m")
    if scoped is None:
        return []
    found: dict[int, float] = {}
    for match_all in (True, False):
        terms = fts_terms(query, match_all)[:MAX_TERMS]
        if not terms:
            return []
        for row in _ranked(conn, terms, match_all, scoped, limit):
            found.setdefault(row["id"], row["score"])
        if len(found) >= limit or len(_words(query)) <= 1:
            break
    hits = mirror_hits(conn, list(found)[:limit], query)
    for hit in hits:
        hit["score"] = round(found[hit["mirror_id"]], 4)
    return hits


def mirror_hits(conn: sqlite3.Connection, mirror_ids: list[int], query: str) -> list[dict[str, Any]]:
    """Result rows for mirrors (in the order given): the excerpt and the message around what matched."""
    if not mirror_ids:
        return []
    marks = ",".join("?" * len(mirror_ids))
    rows = {r["id"]: r for r in conn.execute(f"SELECT * FROM mirrors WHERE id IN ({marks})", mirror_ids)}
    hits = []
    for mirror_id in mirror_ids:
        if mirror_id not in rows:
            continue
        mirror = mirror_from_row(rows[mirror_id])
        text, spans = mirror.conversation_text, mirror.metadata.get("messages", [])
        matched = excerpt(text, query)
        hits.append(
            {
                "source": "mirror",
                "id": None,
                "mirror_id": mirror_id,
                "session_id": mirror.session_id,
                "agent_id": "",
                "line_index": None,
                "kind": "mirror",
                "is_sidechain": 0,
                "provisional": 0,
                "prompt_text": "",
                "full_text": message_context(text, spans, query),
                "tool_summary": "",
                "started_at": mirror.timestamp_start,
                "ended_at": mirror.timestamp_end,
                "agent": mirror.agent,
                "computer": mirror.computer,
                "project_dir": mirror.project,
                "title": mirror.title,
                "score": 0.0,
                "matched_chunk": matched,
                "spans": spans_json(matched, query),
            }
        )
    return hits
