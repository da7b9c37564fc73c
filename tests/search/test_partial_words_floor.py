"""A turn holding some of the query's words (not enough to answer by words alone) clears a slightly lower
semantic floor than one found by meaning alone; the relative margin and a code-name query's floor hold."""

from __future__ import annotations

from memex.search.hybrid import (
    MIN_WORD_COVERAGE,
    PARTIAL_FLOOR_RELIEF,
    PARTIAL_WORD_COVERAGE,
    RELATIVE_COSINE_MARGIN,
    _Candidate,
    _passes_floor,
)


def _turn(coverage: float, cosine: float) -> _Candidate:
    candidate = _Candidate(("turn", 1), "s", coverage=coverage, best_cosine=cosine)
    candidate.lexical = coverage >= MIN_WORD_COVERAGE
    return candidate


def test_some_of_the_query_words_lower_the_semantic_floor() -> None:
    floor, best = 0.80, 0.82
    just_below = floor - PARTIAL_FLOOR_RELIEF / 2
    assert _passes_floor(_turn(PARTIAL_WORD_COVERAGE, just_below), floor, best)
    assert not _passes_floor(_turn(PARTIAL_WORD_COVERAGE / 2, just_below), floor, best)  # too few words
    assert not _passes_floor(_turn(0.0, just_below), floor, best)  # meaning alone
    too_low = floor - PARTIAL_FLOOR_RELIEF * 2
    assert not _passes_floor(_turn(PARTIAL_WORD_COVERAGE, too_low), floor, best)


def test_the_relative_margin_and_a_code_name_floor_still_hold() -> None:
    floor = 0.80
    far_best = floor + RELATIVE_COSINE_MARGIN + 0.01
    assert not _passes_floor(_turn(PARTIAL_WORD_COVERAGE, floor), floor, far_best)
    assert not _passes_floor(_turn(PARTIAL_WORD_COVERAGE, 0.99), 2.0, 0.99)  # a query of code names
    assert _passes_floor(_turn(MIN_WORD_COVERAGE, 0.0), 2.0, 0.99)  # its words answer by themselves
