"""Lexical search: FTS5 BM25 over chunks, grouped to turns."""

from __future__ import annotations

import math
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from itertools import accumulate
from typing import ClassVar, Final

from memex.plain import FrozenRecord, Record
from memex.search.irregular import irregular_forms
from memex.store.queries import Filters, where
from memex.textutil import fts_text, has_cjk, lazy_pattern

# Candidate chunks fetched per wanted turn: several chunks of one turn can match.
CANDIDATES_PER_RESULT = 5
# An any-word query leaves out words found in more than this share of the chunks (as prompt recall does,
# memex.config.recall_common_term_pct), once the store is big enough for shares to mean something.
COMMON_WORD_SHARE = 0.05
MIN_CHUNKS_FOR_RARITY = 2_000
# An any-word query keeps its rarest words while the chunks holding them add up to at most this many (the
# two rarest always): BM25 ranks every chunk it matches, ~1 µs each. At 100k turns (bench/query_latency.py's
# store, 20 real prompts) 100,000 kept 0.95 of the lexical top 10 and cut the query's mean CPU 30 -> 23 ms;
# 30,000 cut it to 13 ms but kept only 0.59 of the top 10.
ANY_WORD_POSTINGS = 100_000
# Connections whose words' counts TermRarity.of keeps (the daemon API's pool lends 4, plus its own).
KEPT_CONNECTIONS = 8
# Ranked chunks are checked against the filters at most this many at a time (SQL parameters).
MAX_LOOKUP_BATCH = 8_192
# FTS5's matches best first, by BM25 (higher is better). Ordered by `bm25()` rather than by FTS5's `rank`
# column, SQLite's own sorter ranks them: with a LIMIT it keeps only that many (a heap) where FTS5's sorted
# plan sorts every match. The same rows in the same order (ties too: 460 queries compared at 100k turns),
# and 30% less time (an any-word prompt matching 54k chunks: 62 -> 43 ms; without a LIMIT 62 -> 54 ms).
_RANKED_CHUNKS = "SELECT rowid, -bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts)"
# Words too common to find anything by (English, French, German, Spanish): left out of an any-word
# query, and of what a prompt is recalled by.
STOPWORDS = set(
    """a about above after again against all am an and any are aren't as at be because been before being
        below between both but by can can't cannot could couldn't did didn't do does doesn't doing don't
        down during each few for from further had hadn't has hasn't have haven't having he her here hers
        herself him himself his how i i'd i'll i'm i've if in into is isn't it it's its itself let's me more
        most my myself no nor not of off on once only or other ought our ours ourselves out over own same
        she should shouldn't so some such than that that's the their theirs them themselves then there
        there's these they this those through to too under until up very was wasn't we we're were weren't
        what what's when where which while who whom why why's with won't would wouldn't you you're your
        yours yourself yourselves please could would will shall may might must also just now hey hi hello
        thanks thank okay ok yes yeah want need like get got make made let lets use using used way thing
        things something anything know think see look tell show give take try help able sure really actually
        maybe still even already again well much many le la les un une des du de et est en que qui dans pour
        pas sur au aux ce cette il elle je tu nous vous ils mais ou donc ne se sa son ses avec par plus
        comment pourquoi der die das ein eine und ist nicht zu den dem mit von auf für im ich du wir sie es
        wie was warum el los las una unos y es en que por para con no se lo como qué del al""".split()  # noqa: SIM905 - a word list reads better as text
)
_EDGE_PUNCTUATION = "\"'`()[]{}<>,;:!?"
_CJK_RUN = lazy_pattern(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u1100-\u11ff]+")

# FTS5's unicode61 tokenizer: letters and digits make tokens; everything else (including `_`) separates.
FTS_TOKEN = re.compile(r"[^\W_]+")
# An any-word search also finds the other forms of an English word (`adopt` finds `adopted`, `symbolize`
# `symbolizes`): its Snowball stem as a prefix, when the stem is at least this long (`cent` would find
# `center`). The index is not stemmed (code identifiers must match as written), so the
# stem is matched as a prefix. On LoCoMo's dev conversations this lifted lexical Recall@10 by 4 points.
MIN_STEM_CHARS = 5
# An English word's search finds at most this many of its indexed forms (plurals, tenses, -ion, -er …).
MAX_STEM_FORMS = 12
_LATIN_WORD = re.compile(r"[A-Za-z]+")
# Paragraphs: blank-line separated (a turn's prompt, answer and reaction are paragraphs of their own).
_PARAGRAPH = re.compile(r"\n\s*\n")
# The label of a turn's reaction (the user's next message, `ingest.turns.Turn.full_text`): that message is the
# next turn's own prompt, so it makes no paragraph of this one (`own_paragraphs`). On LoCoMo's dev
# conversations, leaving it out of the best paragraph: hybrid Recall@5 0.731 -> 0.739, MRR 0.587 -> 0.605
# (Recall@10 0.817 -> 0.818); out of the words' BM25 and whole coverage too, Recall@10 0.819 -> 0.822.
_REACTION = "User (next): "
# The lines of a turn's tool summary (`ingest.turns.Turn.tool_summary`), after the reaction in a chunk's text.
_SUMMARY_LABELS = ("Tools: ", "Files: ", "Commands: ")


# A word ending in `*` asks for every word its last token begins (`zebr*`: zebra, zebras), when that token
# has at least this many characters: `a*` would match most of the index, and BM25 ranks every match.
MIN_PREFIX_CHARS = 2


def _phrase(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def prefix_word(word: str) -> tuple[str, bool]:
    """A query word without its trailing `*`, and whether the star asked for a prefix: not a word the
    star also opens (`*bold*` is Markdown) or that ends in `**`, nor one whose last token is shorter than
    MIN_PREFIX_CHARS."""
    body = word.rstrip("*")
    if body == word or word.startswith("*") or word.endswith("**"):  # `**` closes Markdown's bold
        return word, False
    tokens = term_tokens(body)
    if not tokens or len(tokens[-1]) < MIN_PREFIX_CHARS:  # a CJK character is a token of its own: too short
        return word, False
    return body, True


# Markdown emphasis over one word or several (`*bold*`, `**not the race**`): its stars are no prefix's.
_EMPHASIS = re.compile(r"(?<!\S)(\*{1,3})(?=[^\s*])(.+?)(?<=[^\s*])\1(?![\w*])")


def _words(query: str) -> list[str]:
    words = []
    query = query.replace("\x00", " ")  # FTS5 ends a quoted phrase at a NUL ("unterminated")
    for word in _EMPHASIS.sub(r"\2", query).split():
        word = word.strip(_EDGE_PUNCTUATION)
        if re.search(r"\w", word):
            words.append(word)
    return words


@lru_cache(maxsize=4096)
def word_stem(word: str) -> str | None:
    """The Snowball stem of a plain English word, when it is a prefix of the word worth searching by."""
    if not _LATIN_WORD.fullmatch(word):
        return None
    import snowballstemmer  # only an any-word search with stems needs it

    stem = snowballstemmer.stemmer("english").stemWord(word.lower())
    if stem.endswith("e") and not word.lower().startswith(stem):  # diving -> dive: `div` is the shared part
        stem = stem[:-1]
    return stem if len(stem) >= MIN_STEM_CHARS and word.lower().startswith(stem) else None


def own_paragraphs(text: str) -> list[str]:
    """A turn's (or its chunk's) paragraphs, blank-line separated, but its reaction: the user's next message
    is the next turn's own prompt, so its words make no match of this turn (they are the next one's: its
    neighbour, which lends to it). Left out of the word-level BM25 (`search.wordrank`) and of the whole
    turn's word coverage too (it was already out of the best paragraph), `bench/retrieval.py` hybrid R@5 /
    R@10 / MRR: dev 0.737 / 0.819 / 0.605 -> 0.737 / 0.822 / 0.608, test 0.712 / 0.789 / 0.589 -> 0.714 /
    0.798 / 0.593. A reaction of several paragraphs is left out whole, up to the tool summary that follows it
    in a chunk (`ingest.pipeline.prepare_turns`); a chunk of a long turn that begins inside the reaction
    bears no label, and its words still count."""
    own: list[str] = []
    reaction = False
    for piece in _PARAGRAPH.split(text):
        if piece.startswith(_REACTION):
            reaction = True
        elif reaction and piece.startswith(_SUMMARY_LABELS):
            reaction = False
        if not reaction:
            own.append(piece)
    return own


class Coverage(FrozenRecord):
    """The share of a query's word weight a text holds: in all (`whole`), and in its best paragraph alone."""

    __slots__ = ("paragraph", "whole")

    whole: Final[float]
    paragraph: Final[float]

    def __init__(self, whole: float, paragraph: float) -> None:
        self.whole = whole
        self.paragraph = paragraph


def word_coverage(
    conn: sqlite3.Connection, query: str, texts: dict[int, str], rarity: TermRarity | None = None
) -> dict[int, Coverage]:
    """For each text, the share of the query's words it holds, each word weighted by its rarity (BM25's
    idf; a word the store never saw weighs most), in all and in its best paragraph (blank-line separated)
    alone, its reaction left out of both (`own_paragraphs`). Stopwords count only when the query has nothing else; an
    English word counts when any of its forms is there (as the stemmed any-word search finds it, irregular
    verbs included)."""
    words = [w for w in _words(query) if w.lower() not in STOPWORDS] or _words(query)
    rarity = rarity or TermRarity.of(conn)
    weights: dict[str, float] = {}
    # Each word's marks in a text's tokens: the word itself, or the start of one of its forms (of any
    # word, for a prefix `zebr*`).
    marks: dict[str, list[str]] = {}
    for word in words:
        body, prefix = prefix_word(word)
        tokens = term_tokens(body)
        if tokens and prefix:
            weights[" ".join(tokens) + "*"] = rarity.idf_of(rarity.phrase_df(word))
            marks[" ".join(tokens) + "*"] = [f" {' '.join(tokens)}"]
        elif tokens:
            weights[" ".join(tokens)] = rarity.idf(tokens)
    total = sum(weights.values())
    for word in words:
        if prefix_word(word)[1]:
            continue
        for variant in irregular_forms(word) or (word,):
            stem = word_stem(variant)
            found = marks.setdefault(" ".join(term_tokens(word)), [])
            found.append(f" {' '.join(term_tokens(variant))} ")
            if stem:
                found.append(f" {stem}")

    def held(haystack: str) -> float:
        return sum(
            weight for phrase, weight in weights.items() if any(mark in haystack for mark in marks.get(phrase, ()))
        )

    shares = {}
    for owner, text in texts.items():
        # Each paragraph's tokens, read once: the whole text's are theirs joined.
        paragraphs = [tokens for tokens in (" ".join(term_tokens(p)) for p in own_paragraphs(text)) if tokens]
        whole = held(" " + " ".join(paragraphs) + " ") / total if total else 0.0
        best = max((held(f" {p} ") for p in paragraphs), default=0.0) / total if whole else 0.0
        shares[owner] = Coverage(whole, best)
    return shares


def fts_terms(
    query: str, match_all: bool = True, stems: bool = False, forms: Callable[[str], list[str]] | None = None
) -> list[str]:
    """The FTS5 phrases of a user's query, each once: every word becomes a quoted phrase, so `snake_case`
    and `src/a/b.py` match as written and FTS5 syntax in the query is inert; a word ending in `*` is a
    quoted phrase whose last token is a prefix (`"zebr" *`, `prefix_word`). Without `match_all` (any word
    may match) stopwords are left out and CJK runs are split into overlapping character pairs, so a
    sentence still finds its words; with `stems`, a plain English word also finds its other forms: those
    `forms(stem)` lists (the indexed words of that stem), or else every word the stem begins."""
    terms: list[str] = []
    words = _words(query)
    if not match_all:  # any word may match: the common ones would match everything
        words = [w for w in words if w.lower() not in STOPWORDS] or words
    for word in words:
        body, prefix = prefix_word(word)
        if prefix:  # its forms are the words it begins: no stems
            terms.append(_phrase(fts_text(body) or body) + " *")
            continue
        if match_all or not has_cjk(word):
            for variant in (irregular_forms(word) if stems and not match_all else ()) or (word,):
                stem = word_stem(variant) if stems and not match_all else None
                if stem and forms is not None:
                    terms.extend(_phrase(form) for form in forms(stem) or [fts_text(variant) or variant])
                else:
                    terms.append(f'"{stem}"*' if stem else _phrase(fts_text(variant) or variant))
            continue
        for piece in re.split(f"({_CJK_RUN().pattern})", word):
            if not piece.strip() or not re.search(r"\w", piece):
                continue
            if _CJK_RUN().fullmatch(piece) and len(piece) > 2:
                terms.extend(_phrase(f"{piece[i]} {piece[i + 1]}") for i in range(len(piece) - 1))
            else:
                terms.append(_phrase(fts_text(piece) or piece))
    return list(dict.fromkeys(terms))


def fts_query(
    query: str, match_all: bool = True, stems: bool = False, forms: Callable[[str], list[str]] | None = None
) -> str | None:
    """An FTS5 MATCH expression for a user's query (`fts_terms`: all of them, or any), or None when it
    holds nothing searchable."""
    terms = fts_terms(query, match_all, stems, forms)
    return (" AND " if match_all else " OR ").join(terms) if terms else None


class LexicalHit(Record):
    """A turn found by BM25, with its best chunk."""

    __slots__ = ("chunk_id", "rank", "score", "turn_id")

    turn_id: int
    chunk_id: int
    score: float  # BM25, higher is better
    rank: int  # 1-based position among lexical hits

    def __init__(self, turn_id: int, chunk_id: int, score: float, rank: int) -> None:
        self.turn_id = turn_id
        self.chunk_id = chunk_id
        self.score = score
        self.rank = rank


def search_chunks(
    conn: sqlite3.Connection,
    query: str,
    filters: Filters,
    limit: int,
    stems: bool = False,
    rarity: TermRarity | None = None,
    ranking: Ranking | None = None,
) -> list[LexicalHit]:
    """The best `limit` turns for `query` by BM25 (all words first; any word when that finds too few,
    with `stems` also the other forms of its English words; `rarity`: the words' counts, when the caller
    reads them too; `ranking`: FTS5's matches shared with the caller's other searches of the same words)."""
    hits: dict[int, LexicalHit] = {}
    for match_all in (True, False):
        if match_all:
            expression = fts_query(query)
        else:
            rarity = rarity or TermRarity.of(conn)
            expression = fts_query(_any_word_terms(rarity, query, stems), False, stems, rarity.forms)
        if expression is None:
            return []
        for chunk_id, turn_id, score in ranked_chunks(
            conn, expression, filters, limit * CANDIDATES_PER_RESULT, ranking
        ):
            if turn_id not in hits:
                hits[turn_id] = LexicalHit(turn_id, chunk_id, score, 0)
        if len(hits) >= limit or len(_words(query)) <= 1:
            break
    ranked = list(hits.values())[:limit]
    for position, hit in enumerate(ranked, 1):
        hit.rank = position
    return ranked


class Ranking:
    """FTS5's matches of each expression, best first, ranked once for every search of the same words under
    other filters: prompt recall searches the project's turns, then everyone's. With filters FTS5 ranks
    every match before the first comes out (BM25 of each, then a sort): at 100k turns the second search
    of an any-word query cost ~25 ms of CPU again, to read the first few hundred of the same matches."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._read: dict[str, tuple[list[tuple[int, float]], sqlite3.Cursor]] = {}

    def reader(self, expression: str) -> _Replay:
        """The matches of `expression` from the best, those read before replayed."""
        if expression not in self._read:
            cursor = self.conn.execute(_RANKED_CHUNKS, (expression,))
            self._read[expression] = ([], cursor)
        return _Replay(*self._read[expression])


class _Replay:
    """One reader of a shared ranking: the rows read before, then the cursor's next ones (kept for others)."""

    def __init__(self, rows: list[tuple[int, float]], cursor: sqlite3.Cursor) -> None:
        self.rows, self.cursor, self.at = rows, cursor, 0

    def fetchmany(self, size: int) -> list[tuple[int, float]]:
        missing = self.at + size - len(self.rows)
        if missing > 0:
            self.rows.extend(self.cursor.fetchmany(missing))
        batch = self.rows[self.at : self.at + size]
        self.at += len(batch)
        return batch


def ranked_chunks(
    conn: sqlite3.Connection, expression: str, filters: Filters, count: int, ranking: Ranking | None = None
) -> list[tuple[int, int, float]]:
    """(chunk id, turn id, BM25) of the best `count` chunks matching `expression` that the filters admit
    (`ranking`: FTS5's matches, shared with other searches).

    FTS5 finds the matches and SQLite ranks them (`_RANKED_CHUNKS`); the best are looked up a batch at a
    time (each twice the last) until `count` of them pass the filters. Joined to their turns and sessions
    first, every match was read in three tables before SQLite sorted them: the any-word queries of 20 real
    prompts over 300k chunks took 41 ms of CPU (median), 15 ms so.
    """
    clauses, params = filters.turn_clauses("t", "s")
    best: sqlite3.Cursor | _Replay
    if ranking is not None:
        best = ranking.reader(expression)
    else:
        best = conn.execute(
            _RANKED_CHUNKS + ("" if clauses else " LIMIT ?"), (expression,) if clauses else (expression, count)
        )
    joins = "FROM chunks c JOIN turns t ON t.id = c.turn_id JOIN sessions s ON s.session_id = t.session_id"
    found: list[tuple[int, int, float]] = []
    size = count * 2 if clauses else count
    while len(found) < count and (batch := best.fetchmany(size)):
        marks = ",".join("?" * len(batch))
        sql = f"SELECT c.id, c.turn_id {joins}{where([f'c.id IN ({marks})', *clauses])}"
        turns = dict(conn.execute(sql, [*(r[0] for r in batch), *params]).fetchall())
        found.extend((chunk_id, turns[chunk_id], score) for chunk_id, score in batch if chunk_id in turns)
        size = min(size * 2, MAX_LOOKUP_BATCH)
    return found[:count]


def _any_word_terms(rarity: TermRarity, query: str, stems: bool) -> str:
    """The words of an any-word query: those found in at most COMMON_WORD_SHARE of the chunks, the rarest
    first while the chunks holding them (all their forms, with `stems`) add up to ANY_WORD_POSTINGS (two
    at least); when fewer than two are that rare, the query's two rarest words (stopwords count: they
    leave the query after, so a common name does not join the one rare word). BM25 ranks every chunk an
    any-word query matches, so its cost is what its words' posting lists hold (a 20-word question over
    300k chunks matched 180k: 220 ms), and a common word ranks little."""
    words = _words(query)
    if len(words) <= 2 or rarity.total < MIN_CHUNKS_FOR_RARITY:
        return query
    ranked = sorted(words, key=rarity.phrase_df)
    kept = [w for w in ranked if rarity.phrase_df(w) <= COMMON_WORD_SHARE * rarity.total]
    if len(kept) < 2:
        return " ".join(ranked[:2])
    within = sum(total <= ANY_WORD_POSTINGS for total in accumulate(rarity.postings(w, stems) for w in kept))
    return " ".join(kept[: max(2, within)])


def chunk_texts(conn: sqlite3.Connection, chunk_ids: list[int]) -> dict[int, str]:
    """The content of the given chunks."""
    if not chunk_ids:
        return {}
    marks = ",".join("?" * len(chunk_ids))
    return {
        r["id"]: r["content"] for r in conn.execute(f"SELECT id, content FROM chunks WHERE id IN ({marks})", chunk_ids)
    }


def fold(text: str) -> str:
    """Lower case without diacritics (as FTS5 `remove_diacritics 2` compares)."""
    lowered = text.lower()
    if lowered.isascii():  # nothing to decompose (most of what is searched)
        return lowered
    decomposed = unicodedata.normalize("NFKD", lowered)
    # The combining marks among the text's distinct characters, dropped in one pass (not one per character).
    marks = {ord(ch): None for ch in set(decomposed) if unicodedata.combining(ch)}
    return decomposed.translate(marks) if marks else decomposed


def term_tokens(text: str) -> list[str]:
    """The FTS tokens of a term or a text (CJK characters one token each): a term matches as a phrase."""
    folded = fold(text)
    found = FTS_TOKEN.findall(folded)
    if not has_cjk(folded):  # one look at the whole text, not one per token
        return found
    tokens = []
    for token in found:
        tokens.extend(list(token) if has_cjk(token) else [token])
    return tokens


class TermRarity:
    """Inverse document frequency of FTS tokens, read from an fts5vocab table over the chunk index.

    fts5vocab counts a word's chunks by reading its whole posting list (a common word: milliseconds), so
    `TermRarity.of` keeps what it read while the store has not changed.
    """

    _kept: ClassVar[dict[int, tuple[sqlite3.Connection, tuple[int, int], TermRarity]]] = {}
    _keeping: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def of(cls, conn: sqlite3.Connection) -> TermRarity:
        """The counts of this connection's store: those read before, unless a write (by this connection
        or any other) came since. A few connections are remembered (a daemon's, a warm server's)."""
        state = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
        kept = cls._kept.get(id(conn))
        if kept is not None and kept[0] is conn and kept[1] == state:
            return kept[2]
        rarity = cls(conn)
        with cls._keeping:  # a daemon answers requests on threads
            cls._kept.pop(id(conn), None)
            cls._kept[id(conn)] = (conn, state, rarity)
            while len(cls._kept) > KEPT_CONNECTIONS:
                del cls._kept[next(iter(cls._kept))]
        return rarity

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.memex_vocab USING fts5vocab(main, 'chunks_fts', 'row')")
        self.total = conn.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]
        self.cache: dict[str, int] = {}
        self._forms: dict[str, list[str]] = {}

    def df(self, token: str) -> int:
        if token not in self.cache:
            row = self.conn.execute("SELECT doc FROM temp.memex_vocab WHERE term = ?", (token,)).fetchone()
            self.cache[token] = row[0] if row else 0
        return self.cache[token]

    def phrase_df(self, term: str) -> int:
        """Chunks holding the term at most (its rarest token's count; for a prefix `zebr*`, its last token
        counts the chunks of every word it begins, as many as the store has at most)."""
        body, prefix = prefix_word(term)
        tokens = term_tokens(body)
        if not prefix:
            return min((self.df(t) for t in tokens), default=0)
        return min([*(self.df(t) for t in tokens[:-1]), self.prefix_df(tokens[-1])])

    def prefix_df(self, prefix: str) -> int:
        """Chunks holding a word that begins with `prefix`, at most (their counts summed, up to the total)."""
        key = prefix + "*"
        if key not in self.cache:
            row = self.conn.execute(
                "SELECT coalesce(sum(doc), 0) FROM temp.memex_vocab WHERE term >= ? AND term < ?",
                (prefix, prefix + "\U0010ffff"),
            ).fetchone()
            self.cache[key] = min(row[0], self.total)
        return self.cache[key]

    def forms(self, stem: str) -> list[str]:
        """The indexed words of an English stem (`adopt`: adopt, adopted, adoption), the most frequent
        first, at most MAX_STEM_FORMS: what its prefix query `"adopt"*` would find minus the words that
        only begin with it (`work`: not workflow, workspace), in one range read of the vocabulary. A prefix
        query merges the posting lists of every word it begins, which made any-word search three times
        slower (bench/query_latency.py)."""
        if stem not in self._forms:
            rows = self.conn.execute(
                "SELECT term, doc FROM temp.memex_vocab WHERE term >= ? AND term < ?", (stem, stem + "\U0010ffff")
            ).fetchall()
            same = sorted((r for r in rows if word_stem(r[0]) == stem or r[0] == stem), key=lambda r: -r[1])
            for term, doc in same:
                self.cache.setdefault(term, doc)
            self._forms[stem] = [term for term, _ in same[:MAX_STEM_FORMS]]
        return self._forms[stem]

    def postings(self, word: str, stems: bool = False) -> int:
        """Chunks an any-word query finds by `word` at most: with `stems`, those of all its indexed forms."""
        stem = word_stem(word) if stems else None
        forms = self.forms(stem) if stem else []
        return sum(self.df(form) for form in forms) if forms else self.phrase_df(word)

    def idf(self, tokens: list[str]) -> float:
        """BM25's idf of a phrase, from its rarest token (a phrase is at most as common as that).

        A word the store never saw gets the highest weight: it cannot match, and a prompt about something
        new must not be answered by turns that share only its common words.
        """
        return self.idf_of(min((self.df(t) for t in tokens), default=0))

    def idf_of(self, df: int) -> float:
        """BM25's idf of a term found in `df` chunks."""
        return math.log(1 + (self.total - df + 0.5) / (df + 0.5))

    def known(self, term: str) -> str | None:
        """The term, or its singular when only that is indexed (the index does not stem); None if unknown."""
        if min((self.df(t) for t in term_tokens(term)), default=0) > 0:
            return term
        for cut in ("es", "s"):
            if term.endswith(cut) and len(term) > len(cut) + 2 and self.df(term[: -len(cut)]) > 0:
                return term[: -len(cut)]
        return None
