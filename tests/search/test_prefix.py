"""A query word ending in `*` is a prefix (`zebr*` finds zebra), and nothing else in a query is FTS5 syntax."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memex.search.highlight import match_spans
from memex.search.lexical import fts_query, word_coverage
from transcripts import ClaudeSession, simple_turn

CROSSING = "aaaa1111-0000-0000-0000-000000000001"
HERD = "bbbb2222-0000-0000-0000-000000000002"
FISH = "cccc3333-0000-0000-0000-000000000003"
SYNTAX = "dddd4444-0000-0000-0000-000000000004"
OTHER = "eeee5555-0000-0000-0000-000000000005"
ZEBRAS = {CROSSING, HERD, FISH}


def test_a_trailing_star_is_a_quoted_prefix_and_the_rest_stays_quoted() -> None:
    assert fts_query("zebr*") == '"zebr" *'
    assert fts_query("zebr* crossing") == '"zebr" * AND "crossing"'
    assert fts_query("src/mem*") == '"src/mem" *'  # the last token of the phrase is the prefix
    assert fts_query('"zebr*"') == '"zebr" *'  # quotes around the word are punctuation, as before
    # Every other character is text inside a phrase: quotes doubled, NEAR, AND, `:` and `^` inert.
    assert fts_query('NEAR(a col:xy* ^b zeb"ra*') == '"NEAR(a" AND "col:xy" * AND "^b" AND "zeb""ra" *'
    # Not a prefix: Markdown's emphasis over a word or several (its stars are dropped, as the index drops
    # them), a star the word also opens, a word ending in `**`, or fewer than two characters before the star.
    assert fts_query("*bold*") == '"bold"'
    assert fts_query("fix **not the race** now") == '"fix" AND "not" AND "the" AND "race" AND "now"'
    assert fts_query("***x y***, zebr*") == '"x" AND "y" AND "zebr" *'
    assert fts_query("zebr* *open") == '"zebr" * AND "*open"'  # a star that closes nothing stays a prefix
    assert fts_query("race**") == '"race**"'
    assert fts_query("a*") == '"a*"'
    # Any word: a prefix word has no stems of its own (the prefix finds its forms).
    assert fts_query("zebr* adopted", match_all=False, stems=True) == '"zebr" * OR "adopt"*'


# Characters FTS5's query syntax gives a meaning to, and words it reads as operators.
_SYNTAX = st.sampled_from(['"', "*", ":", "^", "(", ")", "-", "+", "{", "}", ".", "/", " ", "\x00", "_"])
_WORDS = st.sampled_from(["NEAR", "AND", "OR", "NOT", "zebr", "body", "a", "连接", "é"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_SYNTAX | _WORDS, max_size=12).map("".join), st.booleans(), st.booleans())
def test_no_query_is_fts5_syntax(query: str, match_all: bool, stems: bool) -> None:
    """Whatever a query holds, its expression parses: nothing a user types reaches FTS5 as syntax."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO t VALUES ('zebra near the body of 连接 text')")
    expression = fts_query(query, match_all, stems)
    if expression is not None:
        conn.execute("SELECT rowid FROM t WHERE t MATCH ?", (expression,)).fetchall()


def test_highlights_mark_each_word_a_prefix_begins_whole() -> None:
    text = "Zebras and a zebra-crossing; no zebu. The zebrafish."
    assert [text[s:e] for s, e in match_spans(text, "zebr*")] == ["Zebras", "zebra", "zebrafish"]
    assert [text[s:e] for s, e in match_spans(text, "zebr")] == []  # no word `zebr`: as FTS5 finds none
    path = "edit src/memex/cli.py and src/other.py"
    assert [path[s:e] for s, e in match_spans(path, "src/mem*")] == ["src/memex"]
    bold = "*bold* and bolder"
    assert [bold[s:e] for s, e in match_spans(bold, "*bold*")] == ["bold"]


def test_word_coverage_counts_a_prefix_word(conn) -> None:
    """A result is a words' match (not only a near miss) when it holds the words a prefix begins."""
    texts = {1: "the zebra crossing", 2: "a crossing", 3: "a horse"}
    shares = word_coverage(conn, "zebr* crossing", texts)
    assert shares[1].whole == pytest.approx(1.0)
    assert 0 < shares[2].whole < 1 and shares[3].whole == 0


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Three sessions with words beginning `zebr`, one whose text looks like FTS5 syntax, one unrelated."""
    root = tmp_path / "projects" / "-home-dev-zoo"
    texts = {
        CROSSING: ("the zebra crossing light is broken", "Fixed the crossing timer."),
        HERD: ("count the Zebras in the herd", "Counted twelve."),
        FISH: ("the zebrafish larvae imaging script", "Done."),
        SYNTAX: ('why does the query "NEAR" col:name fail on NEAR(a b)', "Quote each word."),
        OTHER: ("unrelated question about caching", "use functools.cache"),
    }
    for session_id, (prompt, answer) in texts.items():
        simple_turn(ClaudeSession(root / f"{session_id}.jsonl", session_id, cwd="/home/dev/zoo"), prompt, answer)
    return root


def _search(run, *args: str) -> list[dict]:
    result = run("search", *args, "--mode", "lexical", "--json", "--limit", "10")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_search_finds_the_words_a_prefix_begins_and_marks_them(run, corpus: Path) -> None:
    assert run("index", str(corpus)).exit_code == 0
    hits = _search(run, "zebr*")
    assert {hit["session_id"] for hit in hits} == ZEBRAS
    for hit in hits:
        marked = [hit["matched_chunk"][s:e] for s, e in hit["spans"]]
        assert marked and all(word.lower() in ("zebra", "zebras", "zebrafish") for word in marked), marked
    assert _search(run, "zebr") == []  # without the star: the word as written
    assert _search(run, "zebr*", "crossing")[0]["session_id"] == CROSSING  # then any word, as ever
    assert [hit["session_id"] for hit in _search(run, "zebras*")] == [HERD]
    assert "zebra" in run("search", "zebr*", "--mode", "lexical").stdout
    # Through a turn's tool output and the user's own words too (the same query building).
    assert {hit["session_id"] for hit in _search(run, "zebr*", "--role", "user")} == ZEBRAS


@pytest.mark.parametrize(
    "query",
    ['"NEAR"', "NEAR(a", "col:name", "col:na*", 'query "NEAR" col:name', "NEAR(a b)"],
)
def test_fts5_syntax_in_a_query_is_text(run, corpus: Path, query: str) -> None:
    assert run("index", str(corpus)).exit_code == 0
    assert [hit["session_id"] for hit in _search(run, query)] == [SYNTAX]


def test_queries_made_of_syntax_are_answered_not_refused(run, corpus: Path) -> None:
    assert run("index", str(corpus)).exit_code == 0
    for query in ('"zebr*', 'zebr"*', "NEAR(zebr* crossing)", "col:*", "^zebr*", "zebr**", "zebr* +x -y", "* AND OR"):
        result = run("search", "--mode", "lexical", "--json", "--", query)
        assert result.exit_code == 0 and "fts5" not in result.output.lower(), (query, result.output)
