"""Highlights: where a query's words occur in a result, as `--json` spans and marked terminal excerpts."""

from __future__ import annotations

from memex.cli.search import marked_excerpt
from memex.search.highlight import highlighted_excerpt, match_spans


def marked(text: str, query: str) -> list[str]:
    return [text[start:end] for start, end in match_spans(text, query)]


def test_words_match_as_the_index_matches_them() -> None:
    text = "We call parse_config_file() from src/config.py; Parse-Config-File was renamed. The café opens."
    assert marked(text, "parse_config_file") == ["parse_config_file", "Parse-Config-File"]
    assert marked(text, "CAFE src/config.py") == ["src/config.py", "café"]
    # A word is a whole token: `config` is not marked inside `configuration`, nor `parse` in `parser`.
    assert marked("the configuration parser", "config parse") == []


def test_stopwords_are_marked_only_when_nothing_else_is_left() -> None:
    text = "how to remove the worktree"
    assert marked(text, "how to remove the worktree") == ["remove", "worktree"]
    assert marked(text, "how to") == ["how", "to"]


def test_cjk_words_match_by_character_pairs() -> None:
    assert marked("集成测试一直卡住，原来是连接池耗尽了", "连接池") == ["连接池"]


def test_an_excerpt_starts_before_the_first_match_and_keeps_its_spans() -> None:
    text = "filler words here. " * 30 + "Then   the\n\nparse_config_file call failed.  " + "more text " * 60
    excerpt, spans = highlighted_excerpt(text, "parse_config_file failed", 200)
    assert excerpt.startswith("…") and excerpt.endswith("…") and "\n" not in excerpt and "  " not in excerpt
    assert [excerpt[s:e] for s, e in spans] == ["parse_config_file", "failed"]
    assert len(excerpt) <= 202


def test_the_terminal_marks_the_spans() -> None:
    text = marked_excerpt("The parse_config_file call failed", "parse_config_file")
    styled = [text.plain[span.start : span.end] for span in text.spans]
    assert styled == ["parse_config_file"] and "bold" in str(text.spans[0].style)


def test_an_excerpt_from_the_spans_a_hit_carries_is_the_one_found_afresh() -> None:
    text = "setup: " + "words before " * 20 + "then parse_config_file failed twice, parse_config_file again"
    query = "parse_config_file failed"
    assert highlighted_excerpt(text, query, 120, match_spans(text, query)) == highlighted_excerpt(text, query, 120)
    assert marked_excerpt(text, query, [list(s) for s in match_spans(text, query)]).spans == (
        marked_excerpt(text, query).spans
    )
