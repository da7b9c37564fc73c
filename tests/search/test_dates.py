"""A query that names a day lifts the found turns of that time, and only those."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from memex.ingest.indexer import discover, index_transcripts
from memex.search.dates import SLACK_DAYS, named_days
from memex.search.hybrid import DATE_LIFT, _Fusion, _lift_named_days
from transcripts import ClaudeSession, Clock, simple_turn


def _around(first: date, last: date) -> tuple[str, str]:
    slack = timedelta(days=SLACK_DAYS)
    return ((first - slack).isoformat(), (last + slack).isoformat())


def test_days_named_with_their_year_become_day_ranges() -> None:
    march_16 = date(2022, 3, 16)
    assert named_days("what did we ship on March 16, 2022?") == [_around(march_16, march_16)]
    assert named_days("as of 16th March, 2022") == [_around(march_16, march_16)]
    assert named_days("the 2022-03-16 deploy") == [_around(march_16, march_16)]
    assert named_days("everything in Feb 2024") == [_around(date(2024, 2, 1), date(2024, 2, 29))]  # the month
    assert named_days("what happened in May") == []  # which year?
    assert named_days("on February 30, 2022") == []
    assert named_days("fix the flaky login test") == []


def test_found_turns_of_a_named_day_are_lifted(conn, config, tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-home-dev-shop"
    march = ClaudeSession(root / "march.jsonl", "aaaa0000-march", clock=Clock(datetime(2022, 3, 16, tzinfo=UTC)))
    simple_turn(march, "the deploy broke the login", "rolled it back")
    june = ClaudeSession(root / "june.jsonl", "bbbb0000-june", clock=Clock(datetime(2022, 6, 1, tzinfo=UTC)))
    simple_turn(june, "the deploy broke the login again", "fixed the config")
    simple_turn(june, "ok", "Done.")
    index_transcripts(conn, config, discover({"claude": [root.parent]}))
    turns = dict(conn.execute("SELECT session_id || line_index, id FROM turns").fetchall())
    in_march = turns["aaaa0000-march0"]
    in_june = [turn_id for key, turn_id in turns.items() if key.startswith("bbbb")]
    fusion = _Fusion(config.search_rrf_k)
    for turn_id in (in_march, in_june[0]):
        fusion.add_turn(turn_id, "lexical", 1, 1.0).score = 1.0
    _lift_named_days(conn, fusion, "why did the deploy break the login on March 17, 2022?")
    assert fusion.turns[in_march].score == pytest.approx(1 + DATE_LIFT)
    assert fusion.turns[in_june[0]].score == pytest.approx(1.0)
    assert in_june[1] not in fusion.turns  # nothing found it: the date adds no result of its own
    _lift_named_days(conn, fusion, "why did the deploy break the login?")
    assert fusion.turns[in_march].score == pytest.approx(1 + DATE_LIFT)
