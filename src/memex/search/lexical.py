"""Lexical search: FTS5 BM25 over chunks, grouped to turns."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from memex.store.queries import Filters, turns_by_ids, where
from memex.textutil import fts_text, has_cjk

# Candidate chunks fetched per wanted turn: several chunks of one turn can match.
CANDIDATES_PER_RESULT = 5
_EDGE_PUNCTUATION = "\"'`()[]{}<>,;:!?"
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff]+")


def _phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def _words(query: str) -> list[str]:
    words = []
    for word in query.split():
        word = word.strip(_EDGE_PUNCTUATION)
        if re.search(r"\w", word):
            words.append(word)
    return words


def fts_query(query: str, match_all: bool = True) -> str | None:
    """An FTS5 MATCH expression for a user's query, or None when it holds nothing searchable.

    Every word becomes a quoted phrase, so `snake_case` and `src/a/b.py` match as written and FTS5
    syntax in the query is inert. With `match_all` every word must match; otherwise any may, and CJK
    runs are split into overlapping character pairs so a sentence still finds its words.
    """
    terms: list[str] = []
    for word in _words(query):
        if match_all or not has_cjk(word):
            terms.append(_phrase(fts_text(word) or word))
            continue
        for piece in re.split(f"({_CJK_RUN.pattern})", word):
            if not piece.strip() or not re.search(r"\w", piece):
                continue
            if _CJK_RUN.fullmatch(piece) and len(piece) > 2:
                terms.extend(_phrase(f"{piece[i]} {piece[i + 1]}") for i in range(len(piece) - 1))
            else:
                terms.append(_phrase(fts_text(piece) or piece))
    if not terms:
        return None
    return (" AND " if match_all else " OR ").join(dict.fromkeys(terms))


@dataclass
class LexicalHit:
    """A turn found by BM25, with its best chunk."""

    turn_id: int
    chunk_id: int
    score: float  # BM25, higher is better
    rank: int  # 1-based position among lexical hits


def search_chunks(conn: sqlite3.Connection, query: str, filters: Filters, limit: int) -> list[LexicalHit]:
    """The best `limit` turns for `query` by BM25 (all words first; any word when that finds too few)."""
    hits: dict[int, LexicalHit] = {}
    for match_all in (True, False):
        expression = fts_query(query, match_all)
        if expression is None:
            return []
        clauses, params = filters.turn_clauses("t", "s")
        rows = conn.execute(
            "SELECT c.id AS chunk_id, c.turn_id, -bm25(chunks_fts) AS score "
            "FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
            "JOIN turns t ON t.id = c.turn_id JOIN sessions s ON s.session_id = t.session_id "
            f"{where(['chunks_fts MATCH ?', *clauses])} ORDER BY bm25(chunks_fts) LIMIT ?",
            [expression, *params, limit * CANDIDATES_PER_RESULT],
        ).fetchall()
        for row in rows:
            if row["turn_id"] not in hits:
                hits[row["turn_id"]] = LexicalHit(row["turn_id"], row["chunk_id"], row["score"], 0)
        if len(hits) >= limit or len(_words(query)) <= 1:
            break
    ranked = list(hits.values())[:limit]
    for position, hit in enumerate(ranked, 1):
        hit.rank = position
    return ranked


def chunk_texts(conn: sqlite3.Connection, chunk_ids: list[int]) -> dict[int, str]:
    """The content of the given chunks."""
    if not chunk_ids:
        return {}
    marks = ",".join("?" * len(chunk_ids))
    return {
        r["id"]: r["content"] for r in conn.execute(f"SELECT id, content FROM chunks WHERE id IN ({marks})", chunk_ids)
    }


def lexical_search(conn: sqlite3.Connection, query: str, filters: Filters, limit: int = 10) -> list[dict[str, Any]]:
    """Turns matching `query`, best first, each with its full text and the chunk that matched."""
    hits = search_chunks(conn, query, filters, limit)
    turns = turns_by_ids(conn, [h.turn_id for h in hits])
    chunks = chunk_texts(conn, [h.chunk_id for h in hits])
    results = []
    for hit in hits:
        turn = turns[hit.turn_id]
        results.append({**turn, "score": round(hit.score, 4), "matched_chunk": chunks.get(hit.chunk_id, "")})
    return results
