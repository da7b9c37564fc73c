"""Word-level BM25: the chunks FTS5 matched, ranked again with one term per query word.

FTS5's `bm25()` scores each token of its MATCH expression as a term of its own: an English word searched by
its forms (`"adopt" OR "adopted" OR "adoption"`, irregular ones too: `buy`, `bought`) counts as several
terms, each with its own idf and saturating apart, so a chunk repeating one common word in several forms can
outrank one holding two rare words. Here a word's forms count together as one term, weighted by the idf of
its rarest token. `bench/retrieval.py`, hybrid R@5 / R@10 / MRR: dev 0.736 / 0.811 / 0.602 -> 0.737 / 0.819 /
0.605, test 0.700 / 0.788 / 0.580 -> 0.712 / 0.789 / 0.589; the words alone dev 0.652 / 0.721 / 0.543 -> 0.677
/ 0.739 / 0.556, test 0.631 / 0.698 / 0.532 -> 0.645 / 0.707 / 0.553. A turn is scored by its own words, its
reaction left out (`lexical.own_paragraphs`): hybrid dev 0.737 / 0.822 / 0.608, test 0.714 / 0.798 / 0.593.

Only the hybrid search (and its lexical mode) searches a word by its forms, so only it re-ranks: prompt
recall and scoped search match each word as written, one FTS5 term per word already.
"""

from __future__ import annotations

import sqlite3
from collections import Counter

from memex.search.irregular import irregular_forms
from memex.search.lexical import STOPWORDS, LexicalHit, TermRarity, _words, own_paragraphs, term_tokens, word_stem

# BM25's term saturation and length normalisation. FTS5 fixes k1 1.2 and b 0.75; on LoCoMo dev k1 0.6, 1.2
# and 2.0 and b 0.3-1.0 all gave hybrid R@10 0.815-0.819 (0.6 the best): the gain is the one term per word.
K1 = 0.6
B = 0.75


class _Word:
    """One query word as a BM25 term: its idf, the tokens it is found as, and its multi-token phrases."""

    __slots__ = ("forms", "idf", "phrases")

    def __init__(self, idf: float) -> None:
        self.idf = idf
        self.forms: set[str] = set()
        self.phrases: set[str] = set()


def _query_words(query: str, rarity: TermRarity) -> list[_Word]:
    """The query's words (stopwords out unless nothing else is left), each once, with every form the stemmed
    any-word search matches it by: the word, its irregular forms, their stems' indexed forms."""
    words: dict[str, _Word] = {}
    for word in [w for w in _words(query) if w.lower() not in STOPWORDS] or _words(query):
        tokens = term_tokens(word)
        if not tokens:
            continue
        term = words.setdefault(" ".join(tokens), _Word(rarity.idf(tokens)))
        for variant in irregular_forms(word) or (word,):
            found = term_tokens(variant)
            if len(found) == 1:
                term.forms.add(found[0])
            elif found:
                term.phrases.add(" ".join(found))
            stem = word_stem(variant)
            # The indexed forms the search matched: every token the stem begins (as word_coverage marks them)
            # ranked LoCoMo alike and cost twice the CPU (1.6 ms against 0.9 per query over 300 hits).
            if stem:
                term.forms.update(rarity.forms(stem))
    return list(words.values())


def average_length(conn: sqlite3.Connection) -> float:
    """The mean token count of the indexed chunks, from FTS5's own totals (the `averages` record, rowid 1 of
    `chunks_fts_data`: the row count then each column's token count, as SQLite varints)."""
    row = conn.execute("SELECT block FROM chunks_fts_data WHERE id = 1").fetchone()
    if not row or not row[0]:
        return 0.0
    values: list[int] = []
    at, block = 0, bytes(row[0])
    while len(values) < 2 and at < len(block):
        value = 0
        for step in range(9):
            if at >= len(block):  # a record cut short: no average to trust
                return 0.0
            byte = block[at]
            at += 1
            if step == 8:  # a ninth byte gives all its 8 bits
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values[1] / values[0] if len(values) == 2 and values[0] else 0.0


def rerank(
    conn: sqlite3.Connection, query: str, hits: list[LexicalHit], texts: dict[int, str], rarity: TermRarity
) -> list[LexicalHit]:
    """`hits` (each a turn's best chunk by FTS5) best first by the word-level BM25 of their chunks' `texts`,
    FTS5's order among equals; each hit's score and rank are the new ones."""
    words = _query_words(query, rarity)
    if not hits or not words:
        return hits
    average = average_length(conn) or 1.0
    scored: list[tuple[float, int, LexicalHit]] = []
    for position, hit in enumerate(hits):
        # The turn's own words: its reaction is the next turn's prompt (`lexical.own_paragraphs`).
        own = own_paragraphs(texts.get(hit.chunk_id, ""))
        tokens = [token for paragraph in own for token in term_tokens(paragraph)]
        counts = Counter(tokens)
        norm = K1 * (1 - B + B * len(tokens) / average)
        joined = f" {' '.join(tokens)} " if any(w.phrases for w in words) else ""
        score = 0.0
        for word in words:
            tf = sum(counts[form] for form in word.forms if form in counts)
            tf += sum(joined.count(f" {phrase} ") for phrase in word.phrases)
            if tf:
                score += word.idf * tf * (K1 + 1) / (tf + norm)
        scored.append((-score, position, hit))
    scored.sort(key=lambda item: (item[0], item[1]))
    ranked = [hit for _, _, hit in scored]
    for rank, (negative, _, hit) in enumerate(scored, 1):
        hit.score, hit.rank = -negative, rank
    return ranked
