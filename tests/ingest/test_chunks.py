"""Chunks: a turn's text cut to a token bound, consecutive chunks sharing an overlap."""

from __future__ import annotations

from itertools import pairwise

from memex.ingest.chunks import chunk_text
from memex.textutil import estimate_tokens


def test_chunks_stay_within_the_bound_and_overlap() -> None:
    text = " ".join(f"word{i}" for i in range(1000))
    chunks = chunk_text(text, 100, 20)
    assert len(chunks) == 13
    assert all(estimate_tokens(chunk) <= 100 for chunk in chunks)
    for first, second in pairwise(chunks):
        assert first.split()[-20:] == second.split()[:20]  # the overlap: the last 20 tokens start the next
    words = {w for chunk in chunks for w in chunk.split()}
    assert words == set(text.split())  # nothing lost at the borders


def test_cjk_text_is_cut_by_character() -> None:
    text = "我们需要自动补全功能" * 50  # no spaces: every character is a token
    chunks = chunk_text(text, 100, 20)
    assert [estimate_tokens(c) for c in chunks] == [100] * 6
    assert chunks[0][-20:] == chunks[1][:20]


def test_short_and_empty_text() -> None:
    assert chunk_text("", 100, 20) == [] and chunk_text("  \n ", 100, 20) == []
    assert chunk_text("one short turn", 100, 20) == ["one short turn"]
