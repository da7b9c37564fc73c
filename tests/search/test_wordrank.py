"""Word-level BM25: the words' hits ranked with one term per query word, its forms counted together."""

from __future__ import annotations

from test_lexical import _store as store_turns

from memex.search.lexical import LexicalHit, TermRarity, chunk_texts, search_chunks
from memex.search.wordrank import average_length, rerank
from memex.store.queries import Filters


def _store(conn, chunks: dict[str, str]) -> dict[str, int]:
    """One session of one turn and one chunk per entry; the turn id of each session."""
    return store_turns(conn, {session_id: [text] for session_id, text in chunks.items()})


def _searched(conn, query: str) -> tuple[list[LexicalHit], list[LexicalHit]]:
    """The any-word search's hits for `query` (words by their forms), and those hits re-ranked."""
    rarity = TermRarity(conn)
    hits = search_chunks(conn, query, Filters(), 50, stems=True, rarity=rarity)
    return hits, rerank(conn, query, hits, chunk_texts(conn, [hit.chunk_id for hit in hits]), rarity)


def test_two_rare_words_outrank_a_common_word_repeated_in_its_forms(conn) -> None:
    """Asked "adopting a zebrafish, painting": the chunk holding both rarer words ("adopted", an inflected
    form, and "zebrafish") comes before the one repeating the common word "painting" in four forms. FTS5's
    `bm25()` scores each form as a term of its own, each saturating apart, and ranks the repetition first;
    one term per word does not."""
    forms = ("paint", "paints", "painted", "painting")
    chunks = {f"paint-{form}-{i}": f"the {form} of the hallway {i}" for form in forms for i in range(8)}
    chunks.update({f"rare-{i}": f"they adopted a plan {i}" for i in range(3)})
    chunks.update({f"fish-{i}": f"a zebrafish tank {i}" for i in range(3)})
    chunks["repeats"] = "paint paints painted painting paint paints painted painting"
    chunks["answers"] = "we adopted a zebrafish"
    turns = _store(conn, chunks)
    hits, ranked = _searched(conn, "adopting a zebrafish, painting")
    plain = [hit.turn_id for hit in hits]
    assert plain.index(turns["repeats"]) < plain.index(turns["answers"])  # what FTS5's order gives

    order = [hit.turn_id for hit in ranked]
    assert order[0] == turns["answers"] and order.index(turns["repeats"]) > 0
    assert sorted(order) == sorted(plain)  # the same hits, none found or lost
    assert [hit.rank for hit in ranked] == list(range(1, len(ranked) + 1))
    assert [hit.score for hit in ranked] == sorted((hit.score for hit in ranked), reverse=True)


def test_average_length_is_fts5s_own_total(conn) -> None:
    """The mean chunk length BM25 normalises by is the one FTS5 keeps (its token totals)."""
    _store(conn, {"a": "one two three", "b": "four five six seven eight", "c": "naïve café"})
    assert average_length(conn) == (3 + 5 + 2) / 3


def test_a_turn_does_not_match_by_its_reaction(conn) -> None:
    """A turn's reaction (the user's next message, `User (next): `) is the next turn's own prompt: its words
    rank that turn, not this one. The turn whose own answer holds them comes first, though it is longer."""
    chunks = {f"filler-{i}": f"User: the weather {i}\n\nAssistant: it rained" for i in range(6)}
    chunks["reacted"] = "User: how was the weekend\n\nAssistant: quiet\n\nUser (next): we adopted a zebrafish"
    chunks["answers"] = "User: any news at all this week\n\nAssistant: we adopted a zebrafish at last"
    turns = _store(conn, chunks)
    hits, ranked = _searched(conn, "adopted zebrafish")
    assert {turns["reacted"], turns["answers"]} <= {hit.turn_id for hit in hits}  # FTS5 finds both

    assert ranked[0].turn_id == turns["answers"]
    assert next(hit.score for hit in ranked if hit.turn_id == turns["reacted"]) == 0.0
