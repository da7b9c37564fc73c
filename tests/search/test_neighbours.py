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


def test_places_count_the_turns_of_the_same_agent_between_found_turns(conn) -> None:
    """Positions differ by the turns of that agent of the session between two turns (a subagent's turns
    and gaps in the line numbers do not count); a turn of another session or agent is in a run of its own."""
    from memex.search.hybrid import _places

    for session in ("s1", "s2"):
        conn.execute(
            "INSERT INTO sessions (session_id, agent, computer, started_at, updated_at) "
            "VALUES (?, 'claude', 'here', '2026-01-01', '2026-01-01')",
            (session,),
        )
    ids = {}
    for session, agent, line in [("s1", "", 0), ("s1", "", 5), ("s1", "sub", 6), ("s1", "", 9), ("s1", "", 20)]:
        ids[session, agent, line] = conn.execute(
            "INSERT INTO turns (session_id, agent_id, line_index, end_line_index, kind, full_text) "
            "VALUES (?, ?, ?, ?, 'prompt', 'x')",
            (session, agent, line, line),
        ).lastrowid
    ids["s2", "", 1] = conn.execute(
        "INSERT INTO turns (session_id, line_index, end_line_index, kind, full_text) VALUES ('s2', 1, 1, 'prompt', 'x')"
    ).lastrowid
    found = [ids["s1", "", 5], ids["s1", "", 20], ids["s1", "sub", 6], ids["s2", "", 1], 999_999]
    places = _places(conn, found)
    assert set(places) == set(found) - {999_999}  # a turn gone is not placed
    assert places[ids["s1", "", 20]][2] - places[ids["s1", "", 5]][2] == 2  # lines 9 and 20 come after 5
    assert places[ids["s1", "sub", 6]][:2] == ("s1", "sub") and places[ids["s2", "", 1]][:2] == ("s2", "")
