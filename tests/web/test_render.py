"""What the pages make of texts: highlighted excerpts, folded long texts, which links are made."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from memex.web.render import EXCERPT_CHARS, folded, is_web_link, marked


def test_marked_pieces_cover_an_excerpt_with_the_spans_highlighted() -> None:
    text = "x" * 500 + "the zebra token rotation" + "y" * 1_000
    start = text.index("zebra")
    pieces = marked(text, [[start, start + 5], [text.index("rotation"), text.index("rotation") + 8]])
    assert [p for p, hl in pieces if hl] == ["zebra", "rotation"]
    assert pieces[0] == ("…", False) and pieces[-1] == ("…", False)
    body = "".join(p for p, _ in pieces[1:-1])
    assert body in text and len(body) == EXCERPT_CHARS


@given(st.text(max_size=300), st.lists(st.tuples(st.integers(-5, 320), st.integers(-5, 320)), max_size=6))
def test_marked_never_invents_text(text: str, spans: list[tuple[int, int]]) -> None:
    pieces = marked(text, [list(s) for s in spans])
    body = "".join(p for p, _ in pieces if p != "…")
    assert body in text
    assert all(p in text for p, hl in pieces if hl)


def test_no_spans_gives_the_head() -> None:
    assert marked("short text", None) == [("short text", False)]


def test_long_texts_fold_at_a_line_short_ones_do_not() -> None:
    assert folded("short").rest == ""
    long = "\n".join(f"line {n}" for n in range(1_000))
    cut = folded(long)
    assert cut.head + cut.rest == long and cut.rest.startswith("\n") and cut.rest


def test_only_http_links() -> None:
    assert is_web_link("https://github.com/dev/shop/pull/7")
    assert not is_web_link("javascript:alert(1)") and not is_web_link("JAVASCRIPT:alert(1)")
