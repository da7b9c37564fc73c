"""Recall for a prompt: the past turns of other sessions most worth showing the agent, or none.

`recall` is what the prompt hook calls. Lexically, a turn is recalled only when it clears a relevance
floor: it must hold a large enough share of the prompt's meaningful words, weighted by how rare each word
is in the store (a turn sharing only "test" and "file" with the prompt is noise, one sharing "worktree" is
not). `semantic_recall` adds turns that say the same in other words (or another language): their vector
must beat the query's content-free anchors by a wider margin than search asks (memex.search.anchors). The
warm server, which keeps the model loaded, runs both; a hook answering cold runs the lexical part only.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from memex.config import Config
from memex.search.lexical import _CJK_RUN, STOPWORDS, Ranking, TermRarity, search_chunks, term_tokens
from memex.store.queries import Filters, turns_by_ids
from memex.textutil import has_cjk, strip_system_reminders

if TYPE_CHECKING:
    import numpy as np

    from memex.background import Background
    from memex.embed.model import Embedder

# Lexical candidates examined per turn wanted: most fail the relevance floor.
CANDIDATES_PER_HIT = 4
# Text of a candidate turn checked for the prompt's words (a turn's text can be 200,000 characters).
COVERAGE_TEXT_CHARS = 40_000

_EDGE = "\"'`()[]{}<>,;:!?.*#@"


@dataclass
class Recalled:
    """One recalled turn: its row (turn and session fields), BM25 score and weighted word coverage."""

    turn: dict[str, Any]
    score: float
    coverage: float
    matched: list[str] = field(default_factory=list)
    same_project: bool = False


def _is_identifier(word: str) -> bool:
    return bool(re.search(r"[_./\\0-9]", word) or re.search(r"[a-z][A-Z]", word))


def query_terms(prompt: str, max_terms: int) -> list[str]:
    """The prompt's meaningful words: no stopwords, CJK runs as character pairs, identifiers kept whole.

    Identifiers (snake_case, paths, camelCase, words with digits) come first when there are too many.
    """
    text = strip_system_reminders(prompt)
    identifiers: list[str] = []
    words: list[str] = []
    for raw in text.split():
        word = raw.strip(_EDGE)
        if not word or not re.search(r"\w", word):
            continue
        if has_cjk(word):
            for piece in re.split(f"({_CJK_RUN().pattern})", word):
                piece = piece.strip(_EDGE)
                if not piece or not re.search(r"\w", piece):
                    continue
                if _CJK_RUN().fullmatch(piece):
                    pairs = [piece] if len(piece) <= 2 else [piece[i : i + 2] for i in range(len(piece) - 1)]
                    words.extend(pairs)
                elif piece.lower() not in STOPWORDS and len(piece) > 1:
                    words.append(piece.lower())
            continue
        folded = word.lower()
        if _is_identifier(word):
            identifiers.append(folded)
        elif folded not in STOPWORDS and len(folded) > 1:
            words.append(folded)
    return list(dict.fromkeys(identifiers + words))[:max_terms]


def _padded(tokens: list[str]) -> str:
    """Tokens as one space-separated string with a space at each end, so `in` finds whole-token phrases."""
    return " " + " ".join(tokens) + " "


def _turn_text(conn: sqlite3.Connection, turn_id: int) -> str:
    """A turn's searchable text (its chunks), capped."""
    parts, size = [], 0
    for row in conn.execute("SELECT content FROM chunks WHERE turn_id = ? ORDER BY chunk_index", (turn_id,)):
        parts.append(row[0])
        size += len(row[0])
        if size >= COVERAGE_TEXT_CHARS:
            break
    return "\n".join(parts)[:COVERAGE_TEXT_CHARS]


def recall(
    conn: sqlite3.Connection,
    prompt: str,
    session_id: str | None,
    project_dir: str | None,
    *,
    max_hits: int = 5,
    max_per_session: int = 2,
    min_coverage: float = 0.5,
    min_terms: int = 2,
    max_query_terms: int = 24,
    common_term_share: float = 0.05,
) -> list[Recalled]:
    """Past turns of other sessions relevant to `prompt`, same project first, best first; [] when none clears
    the relevance floor. Never a turn of `session_id` (the asking session, subagents included)."""
    terms = query_terms(prompt, max_query_terms)
    if not terms:
        return []
    rarity = TermRarity.of(conn)
    if rarity.total == 0:
        return []
    known = [k for k in dict.fromkeys(rarity.known(term) for term in terms) if k]
    unknown = len(terms) - len(known)
    if not known:
        return []
    weights = {term: rarity.idf(term_tokens(term)) for term in known}
    total_weight = sum(weights.values()) + unknown * rarity.idf([])
    needed_terms = min(min_terms, len(terms))
    # A word found in a large share of the store ranks almost nothing, yet its long posting list is most of
    # the cost of an OR query: such words stay out of the search (the two rarest words always go in) and
    # still count for coverage.
    by_rarity = sorted(known, key=rarity.phrase_df)
    searched = [t for t in by_rarity if rarity.phrase_df(t) <= common_term_share * rarity.total]
    query = " ".join(searched if len(searched) >= 2 else by_rarity[:2])
    scopes: list[tuple[bool, Filters]] = []
    if project_dir:
        scopes.append((True, Filters(project=project_dir, exclude_session=session_id)))
    scopes.append((False, Filters(exclude_session=session_id)))

    chosen: list[Recalled] = []
    seen: set[int] = set()
    per_session: dict[str, int] = {}
    ranking = Ranking(conn)  # the same words in each scope: FTS5 ranks their matches once
    for same_project, filters in scopes:
        found = search_chunks(conn, query, filters, max_hits * CANDIDATES_PER_HIT, ranking=ranking)
        hits = [h for h in found if h.turn_id not in seen]
        rows = turns_by_ids(conn, [h.turn_id for h in hits])
        for hit in hits:
            seen.add(hit.turn_id)
            turn = rows[hit.turn_id]
            if per_session.get(turn["session_id"], 0) >= max_per_session:
                continue
            haystack = _padded(term_tokens(_turn_text(conn, hit.turn_id)))
            matched = [t for t in known if _padded(term_tokens(t)) in haystack]
            coverage = sum(weights[t] for t in matched) / total_weight
            if len(matched) < needed_terms or coverage < min_coverage:
                continue
            per_session[turn["session_id"]] = per_session.get(turn["session_id"], 0) + 1
            chosen.append(Recalled(turn, hit.score, coverage, matched, same_project))
            if len(chosen) >= max_hits:
                return chosen
    return chosen


def recall_query_vector(
    conn: sqlite3.Connection, config: Config, prompt: str, session_id: str | None
) -> Background[tuple[Embedder, np.ndarray]] | None:
    """The prompt's embedding (and the embedder), started in a thread: the warm server embeds a prompt
    while lexical recall searches its words. None when no turn of another session has a vector (the model
    is neither loaded nor run). When lexical recall fills every place, the thread's ~12 ms of CPU were
    spent for nothing; the answer never waits for it."""
    from memex.background import Background
    from memex.embed.model import embedded_query
    from memex.search.hybrid import has_vectors  # the cold hook path (lexical only) never imports them

    if not has_vectors(conn, config, "turn", Filters(exclude_session=session_id)):
        return None
    return Background(partial(embedded_query, config, None, strip_system_reminders(prompt)))


def semantic_recall(
    conn: sqlite3.Connection,
    config: Config,
    prompt: str,
    session_id: str | None,
    project_dir: str | None,
    chosen: list[Recalled],
    max_hits: int,
    max_per_session: int,
    query_vector: Background[tuple[Embedder, np.ndarray]] | None = None,
) -> list[Recalled]:
    """`chosen` (lexical recall) completed with turns near the prompt by meaning, up to `max_hits`.
    `query_vector`: the prompt's embedding started meanwhile (`recall_query_vector`), else embedded here."""
    from memex.search.anchors import semantic_floor
    from memex.search.hybrid import filtered_search
    from memex.search.vector import vector_index

    others = Filters(exclude_session=session_id)
    query_vector = query_vector or recall_query_vector(conn, config, prompt, session_id)
    if len(chosen) >= max_hits or query_vector is None:
        return chosen
    embedder, query = query_vector.result()
    floor = (
        semantic_floor(config, embedder, query) + (config.recall_semantic_margin - config.search_semantic_margin) / 1000
    )
    index = vector_index(config, "turn", embedder.dimension)
    wanted = max_hits * CANDIDATES_PER_HIT
    found = filtered_search(conn, index, query, "turn", others, wanted, need=wanted)
    neighbours = [n for n in found if n.cosine >= floor]
    taken = {r.turn["id"] for r in chosen}
    per_session: dict[str, int] = {}
    for hit in chosen:
        per_session[hit.turn["session_id"]] = per_session.get(hit.turn["session_id"], 0) + 1
    rows = turns_by_ids(conn, [n.owner_id for n in neighbours if n.owner_id not in taken])
    result = list(chosen)
    for neighbour in neighbours:
        turn = rows.get(neighbour.owner_id)
        if turn is None or per_session.get(turn["session_id"], 0) >= max_per_session:
            continue
        per_session[turn["session_id"]] = per_session.get(turn["session_id"], 0) + 1
        same_project = bool(project_dir) and turn["project_dir"] == project_dir
        result.append(Recalled(turn, neighbour.cosine, 0.0, [], same_project))
        if len(result) >= max_hits:
            break
    return result
