"""The result types compare and print as dataclasses do (their eq and repr are written once, not compiled
per class at import)."""

from __future__ import annotations

import pytest

from memex.results import Injection, Recall, SessionSummary


def test_results_compare_and_print_by_their_fields() -> None:
    recall = Recall("some text", 2)
    assert recall == Recall("some text", 2)
    assert recall != Recall("some text", 3)
    assert recall != Injection("some text", 2)  # same fields, another kind of result
    assert repr(recall) == "Recall(text='some text', hits=2)"
    with pytest.raises(TypeError):
        hash(recall)  # mutable: unhashable, as a dataclass with eq


def test_a_session_summary_with_defaults_is_its_json() -> None:
    summary = SessionSummary("s1", "claude", "box", "/p", "T", "2026-01-01", None, None, 3, 0, [7])
    assert summary == SessionSummary("s1", "claude", "box", "/p", "T", "2026-01-01", None, None, 3, 0, [7])
    assert summary.to_json()["prs"] == [7] and summary.to_json()["source"] == "local"
    assert summary.to_json()["subagent_names"] == []
    assert "prs=[7], source='local', subagent_names=[])" in repr(summary)
