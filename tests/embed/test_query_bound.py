"""A query's text is bounded like the texts it is compared with: a prompt with a pasted log is embedded from
its head and tail, not for seconds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memex.config import load_config
from memex.embed.model import bounded_query, embedded_query

LIMIT = 800


@given(st.text(max_size=3 * LIMIT), st.integers(min_value=40, max_value=2 * LIMIT))
def test_a_query_keeps_its_head_and_tail_within_the_limit(text: str, limit: int) -> None:
    bounded = bounded_query(text, limit)
    if len(text) <= limit:
        assert bounded == text
        return
    assert len(bounded) <= limit + len(" … ")
    assert bounded.startswith(text[: limit // 2])
    assert bounded.endswith(text[len(text) - limit // 8 :])


def test_a_question_after_a_pasted_log_is_kept() -> None:
    log = "\n".join(f"2026-11-24 12:00:{i:02d} ERROR worker {i} failed: connection reset" for i in range(200))
    prompt = f"Here is the log:\n{log}\nWhy does the embedding worker keep failing?"
    bounded = bounded_query(prompt, LIMIT)
    assert bounded.startswith("Here is the log:")
    assert bounded.endswith("Why does the embedding worker keep failing?")
    assert len(bounded) <= LIMIT + 3


@pytest.mark.model
def test_a_long_query_is_embedded_from_its_bounded_text(tmp_path: Path) -> None:
    config = load_config({"MEMEX_HOME": str(tmp_path)})
    prompt = "why does the retry loop never stop? " + "traceback line in client.py " * 200
    embedder, vector = embedded_query(config, None, prompt)
    expected = embedder.embed_queries([bounded_query(prompt, config.embed_turn_max_chars)])[0]
    assert np.allclose(vector, expected, atol=1e-6)
    assert not np.allclose(vector, embedder.embed_queries([prompt])[0], atol=1e-3)
