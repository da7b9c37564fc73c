"""Words that stand together answer together: a turn whose one paragraph holds the query's words is lifted
above one that gathers them from its prompt and its answer; irregular verbs find their other tenses."""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.ingest.indexer import discover, index_transcripts
from memex.search.hybrid import hybrid_search
from memex.search.irregular import irregular_forms
from memex.search.lexical import fts_query, word_coverage
from memex.store.queries import Filters
from transcripts import ClaudeSession, simple_turn


def test_irregular_verbs_find_their_other_tenses() -> None:
    assert irregular_forms("Bought") == ("buy", "bought") and irregular_forms("broke") == ("break", "broke", "broken")
    assert irregular_forms("fixed") == () and irregular_forms("cut") == ()
    # Each form is searched like a word of its own (stems as prefixes); an all-words search stays as written.
    assert fts_query("bought camera", match_all=False, stems=True) == '"buy" OR "bought"* OR "camera"*'
    assert fts_query("bought camera") == '"bought" AND "camera"'


def test_coverage_of_the_whole_text_and_of_its_best_paragraph(conn) -> None:
    query = "When did Evan start lifting weights?"
    texts = {
        1: "User: Evan: I started lifting weights last year\n\nAssistant: Sam: Nice one",
        2: "User: Evan: Nice one last year\n\nAssistant: Sam: I started lifting weights",
        3: "User: Evan: the old car broke down",
    }
    shares = word_coverage(conn, query, texts)
    assert shares[1].whole == shares[2].whole == pytest.approx(1.0)  # the same words, each somewhere
    assert shares[1].paragraph == pytest.approx(1.0)  # all in Evan's line
    assert shares[2].paragraph < 0.9  # Evan named in one line, what he started in the other
    assert shares[3].paragraph == shares[3].whole  # one paragraph: its share is the whole's
    # A turn's reaction (the user's next message) is the next turn's prompt: its words are not this turn's.
    reaction = word_coverage(conn, query, {4: "User: Nice one\n\nUser (next): Evan: I started lifting weights"})
    assert reaction[4].whole == 0.0 and reaction[4].paragraph == 0.0
    # A reaction of several paragraphs is left out whole; the tool summary after it is the turn's own again.
    long = "User: Nice one\n\nUser (next): thanks\n\nEvan: I started lifting weights\n\nFiles: gym/log.md"
    assert word_coverage(conn, query, {5: long})[5].whole == pytest.approx(0.0)
    assert 0.0 < word_coverage(conn, "Evan gym", {5: long})[5].whole < 1.0  # `gym` of gym/log.md, not Evan
    # `broken` counts where the text says `broke`.
    assert word_coverage(conn, "Evan broken", {3: texts[3]})[3].whole == pytest.approx(1.0)


def test_a_turn_holding_the_words_in_one_paragraph_comes_first(conn, config, tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-home-dev-shop"
    together = ClaudeSession(root / "aaaa0000-together.jsonl", "aaaa0000-together", cwd="/home/dev/shop")
    simple_turn(together, "The flaky redis test failed again on CI today, see the log", "Looking at it now.")
    spread = ClaudeSession(root / "bbbb0000-spread.jsonl", "bbbb0000-spread", cwd="/home/dev/shop")
    simple_turn(spread, "Is the flaky redis cache gone?", "The test failed.")
    index_transcripts(conn, config, discover({"claude": [root.parent]}))
    hits = hybrid_search(conn, config, "flaky redis test failed", Filters(), mode="lexical").results
    # Words alone rank the shorter turn first; its words are spread over a question and an answer.
    assert {h["session_id"]: h["explain"]["lexical"]["rank"] for h in hits} == {
        "bbbb0000-spread": 1,
        "aaaa0000-together": 2,
    }
    assert [h["session_id"] for h in hits] == ["aaaa0000-together", "bbbb0000-spread"]
