"""A found turn lends part of its score to the found turns next to it in its session (an answer often
spans a few consecutive turns); a turn nothing found is never added."""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.ingest.indexer import discover, index_transcripts
from memex.search.hybrid import NEIGHBOUR_REACH, NEIGHBOUR_SHARE, _Fusion, _lend_to_neighbours, _passes_floor
from transcripts import ClaudeSession, simple_turn


def test_found_turns_lend_to_found_neighbours_within_reach(conn, config, tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-home-dev-shop"
    for name in ("aaaa0000-one", "bbbb0000-two"):
        session = ClaudeSession(root / f"{name}.jsonl", name, cwd="/home/dev/shop")
        for i in range(10):
            simple_turn(session, f"step {i} of {name}", f"did step {i}")
    index_transcripts(conn, config, discover({"claude": [root.parent]}))
    order = {
        (r[0], i): r[1]
        for session in ("aaaa0000-one", "bbbb0000-two")
        for i, r in enumerate(
            conn.execute("SELECT session_id, id FROM turns WHERE session_id = ? ORDER BY line_index", (session,))
        )
    }
    one = [order[("aaaa0000-one", i)] for i in range(10)]
    two = [order[("bbbb0000-two", i)] for i in range(10)]
    found = [one[0], one[1], one[1 + NEIGHBOUR_REACH + 1], two[2]]  # one[4] is out of one[1]'s reach
    fusion = _Fusion(config.search_rrf_k)
    for turn_id in found:
        fusion.add_turn(turn_id, "lexical", 1, 1.0).score = 1.0
    _lend_to_neighbours(conn, fusion)
    scores = {turn_id: candidate.score for turn_id, candidate in fusion.turns.items()}
    assert set(scores) == set(found)  # the turns between them, found by nothing, are not added
    assert scores[one[0]] == pytest.approx(1 + NEIGHBOUR_SHARE)
    assert scores[one[1]] == pytest.approx(1 + NEIGHBOUR_SHARE)
    assert scores[one[4]] == pytest.approx(1.0)  # too far from the others
    assert scores[two[2]] == pytest.approx(1.0)  # next to one[1]'s position, but in another session


def test_a_turn_next_to_one_that_holds_the_words_is_vouched_for(conn, config, tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-home-dev-shop"
    session = ClaudeSession(root / "aaaa0000-one.jsonl", "aaaa0000-one", cwd="/home/dev/shop")
    for i in range(8):
        simple_turn(session, f"step {i}", f"did step {i}")
    index_transcripts(conn, config, discover({"claude": [root.parent]}))
    turns = [r[0] for r in conn.execute("SELECT id FROM turns ORDER BY line_index")]
    fusion = _Fusion(config.search_rrf_k)
    fusion.add_turn(turns[3], "lexical", 1, 1.0).lexical = True  # holds the query's words
    near = fusion.add_turn(turns[3 + NEIGHBOUR_REACH], "chunk", 1, 1.0, cosine=0.5)  # found by meaning only
    far = fusion.add_turn(turns[3 + NEIGHBOUR_REACH + 1], "chunk", 2, 1.0, cosine=0.5)
    near.best_cosine = far.best_cosine = 0.5
    _lend_to_neighbours(conn, fusion)
    assert near.vouched and not far.vouched
    assert _passes_floor(near, floor=0.9, best=0.9)  # below the floor, but next to the words
    assert not _passes_floor(far, floor=0.9, best=0.9)
    assert not _passes_floor(near, floor=2.0, best=0.9)  # a query of code names: only the turns holding them
