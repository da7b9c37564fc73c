"""A found turn lends part of its score to the found turns next to it in its session (an answer often
spans a few consecutive turns); a turn nothing found is never added."""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.ingest.indexer import discover, index_transcripts
from memex.search.hybrid import (
    NEIGHBOUR_REACH,
    NEIGHBOUR_SHARE,
    _Fusion,
    _lend_to_neighbours,
    _passes_floor,
    _vouched,
)
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


def test_a_turn_next_to_a_justified_one_is_vouched_for(conn, config, tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-home-dev-shop"
    session = ClaudeSession(root / "aaaa0000-one.jsonl", "aaaa0000-one", cwd="/home/dev/shop")
    for i in range(12):
        simple_turn(session, f"step {i}", f"did step {i}")
    index_transcripts(conn, config, discover({"claude": [root.parent]}))
    turns = [r[0] for r in conn.execute("SELECT id FROM turns ORDER BY line_index")]
    fusion = _Fusion(config.search_rrf_k)
    words = fusion.add_turn(turns[2], "lexical", 1, 1.0)
    words.lexical = True  # holds the query's words
    meaning = fusion.add_turn(turns[9], "chunk", 1, 1.0, cosine=0.95)  # clears the floor by meaning
    found = {i: fusion.add_turn(turns[i], "chunk", i, 1.0, cosine=0.5) for i in (4, 5, 7)}  # below the floor
    for candidate in [meaning, *found.values()]:
        candidate.best_cosine = candidate.parts["chunk"]["cosine"]
    _lend_to_neighbours(conn, fusion)
    justified = {c.key[1] for c in fusion.turns.values() if _passes_floor(c, floor=0.9, best=0.95)}
    assert justified == {turns[2], turns[9]}
    assert _vouched(found[4], justified, floor=0.9)  # two turns after the words
    assert _vouched(found[7], justified, floor=0.9)  # two turns before the hit found by meaning
    assert not _vouched(found[5], justified, floor=0.9)  # three turns from either
    assert not _vouched(found[4], justified, floor=2.0)  # a query of code names: only the turns holding them
