"""Messages' Markdown as the conversation view shows it: elements for the Markdown, text for any HTML, links
only to safe addresses, images not loaded, long messages folded between blocks."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memex.markdown import markdown
from memex.redact import redact
from memex.web.folding import folded_markdown
from memex.web.render import FOLD_HEAD_CHARS
from secret_corpus import CORPUS, Secret

TAGS = {"p", "br", "em", "strong", "s", "code", "pre", "a", "ul", "ol", "li", "blockquote", "hr"}
TAGS |= {"h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td"}
ATTRIBUTES = {"href", "rel", "class", "title", "start", "style"}


class Elements(HTMLParser):
    """Every element and attribute of a piece of HTML."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.found.append((tag, attrs))


def assert_inert(html: str) -> None:
    for tag, attrs in Elements(html).found:
        assert tag in TAGS, html
        for name, value in attrs:
            assert name in ATTRIBUTES, html
            if name == "href":
                assert not re.match(r"\s*(javascript|vbscript|data|file):", value or "", re.I), html
            if name == "style":
                assert re.fullmatch(r"text-align:(left|right|center)", value or ""), html


@pytest.mark.parametrize(
    "attempt",
    [
        '<script>alert("x")</script>',
        "<img src=x onerror=alert(1)>",
        "[x](javascript:alert(1))",
        "[x](JaVaScRiPt:alert(1))",
        "[x](&#106;avascript:alert(1))",
        "[x](vbscript:msgbox(1)) [y](data:text/html,<script>alert(1)</script>) [z](file:///etc/passwd)",
        "<javascript:alert(1)>",
        "[x][r]\n\n[r]: javascript:alert(1)",
        "![x](javascript:alert(1))",
        '```"><script>alert(1)</script>\ncode\n```',
        '<a href="javascript:alert(1)">a</a> <div onclick="alert(1)">d</div>',
    ],
)
def test_an_attempt_at_script_is_inert(attempt: str) -> None:
    html = str(markdown(attempt))
    assert_inert(html)
    assert "<script" not in html and "<img" not in html and "<div" not in html


@given(st.text(alphabet=st.sampled_from(list("<>[]()!`*_#-|:\"'=&;/ \nabjsvcript\t")), max_size=200))
def test_any_text_makes_only_harmless_elements(text: str) -> None:
    assert_inert(str(markdown(text)))


def test_safe_links_are_links() -> None:
    html = str(markdown("[a](https://x.org/a) [b](http://x.org) [c](mailto:me@x.org) [d](docs/a.md) [e](#top)"))
    assert re.findall(r'href="([^"]+)"', html) == [
        "https://x.org/a",
        "http://x.org",
        "mailto:me@x.org",
        "docs/a.md",
        "#top",
    ]
    assert html.count('rel="noreferrer nofollow"') == 5


def test_an_image_is_a_link_not_a_fetch() -> None:
    html = str(markdown('![the chart](https://tracker.example/p.png "t")'))
    assert "<img" not in html and 'href="https://tracker.example/p.png"' in html and "the chart" in html


def test_blocks_become_elements() -> None:
    html = str(
        markdown(
            "# One\n### Three\n\n- a\n- b\n\n1. x\n\n> q\n\n```sh\n  ls  -la\n```\n\n| a | b |\n|--:|---|\n| 1 | 2 |"
        )
    )
    assert "<h4>One</h4>" in html and "<h6>Three</h6>" in html  # below the message's <h3>
    assert "<ul>\n<li>a</li>" in html and "<ol>" in html and "<blockquote>" in html
    assert '<pre><code class="language-sh">  ls  -la\n</code></pre>' in html
    assert '<th style="text-align:right">a</th>' in html and "<td>2</td>" in html


def test_a_line_break_is_kept() -> None:
    assert str(markdown("first line\nsecond line")) == "<p>first line<br>\nsecond line</p>\n"


def test_a_long_code_block_is_folded_closed_and_reopened() -> None:
    code = "\n".join(f"    step {n} of the build" for n in range(200))
    text = f"Here is the log:\n\n```text\n{code}\n```\n\nDone."
    fold = folded_markdown(text)
    assert fold.rest and len(fold.head) <= FOLD_HEAD_CHARS + 10
    head, rest = str(markdown(fold.head)), str(markdown(fold.rest))
    assert head.count('<pre><code class="language-text">') == 1 and head.rstrip().endswith("</code></pre>")
    assert rest.startswith('<pre><code class="language-text">') and "<p>Done.</p>" in rest
    shown = re.findall(r"step \d+ of the build", head + rest)
    assert shown == [f"step {n} of the build" for n in range(200)]


@pytest.mark.parametrize(
    ("before", "indent", "after"),
    [
        ("1. Run the build:\n\n   ```text", "   ", "   ```\n\n2. Done."),  # a list item's code block
        ("- ```text", "  ", "  ```\n- Done."),  # opened on the item's own line
        ("- Build:\n  - then run:\n\n    ```text", "    ", "    ```\n\n- Done."),  # in a nested list: 4 spaces
        ("> Here:\n>\n> ```text", "> ", "> ```\n\nDone."),  # in a quote
        ("-\t```text", "\t", "\t```\n\nDone."),  # a tab after the marker: its lines indented by a tab
    ],
    ids=["list-item", "on-the-marker-line", "nested-list", "quote", "tab-indented"],
)
def test_a_long_code_block_in_a_list_item_or_a_quote_is_folded_closed_and_reopened(
    before: str, indent: str, after: str
) -> None:
    """The code block inside a container is closed as the container goes on, and its rest is code again: not
    a paragraph of its lines, nor what follows the block swallowed by its closing fence read as an opener."""
    code = "\n".join(f"{indent}step {n} of the build" for n in range(200))
    fold = folded_markdown(f"Steps:\n\n{before}\n{code}\n{after}\n")
    assert fold.rest
    head, rest = str(markdown(fold.head)), str(markdown(fold.rest))
    assert head.count('<pre><code class="language-text">') == 1 and "</code></pre>" in head
    assert rest.removeprefix("<blockquote>\n").startswith('<pre><code class="language-text">')
    assert rest.count("<pre>") == 1 and "Done." in rest.split("</code></pre>")[1]  # after the block, not in it
    shown = re.findall(r"step (\d+) of the build", head + rest)
    assert [int(n) for n in shown] == list(range(200)) and not re.search(r"\n[ \t]+step", head + rest)


@pytest.mark.parametrize(
    ("before", "indent", "after", "start"),
    [
        ("1. one\n\n   ```text", "   ", "   ```\n2. two", "2"),
        ("1. one\n\n   ```text", "   ", "   ```\n   and then\n2. two", "2"),  # the item goes on after its block
        ("10. one\n\n    ```text", "    ", "    ```\n    and then\n11. two", "11"),  # indented as wide as code
        ("1. one\n   - sub\n\n     ```text", "     ", "     ```\n   and then\n2. two", "2"),  # the outer item's
    ],
    ids=["next-item", "item-goes-on", "wide-marker", "nested"],
)
def test_the_item_after_a_folded_code_block_in_a_numbered_list_is_still_an_item(
    before: str, indent: str, after: str, start: str
) -> None:
    """Rendered without its list, the rest of an item whose code block was folded ends before the next item:
    `2. two` is an item numbered 2, never a line of the paragraph before it (only a list starting at 1 may
    interrupt a paragraph), and the item's own text after its block is a paragraph, not code."""
    code = "\n".join(f"{indent}step {n} of the build" for n in range(200))
    fold = folded_markdown(f"{before}\n{code}\n{after}\n")
    assert fold.rest
    rest = str(markdown(fold.rest))
    assert rest.count("<pre>") == 1 and rest.rstrip().endswith(f'<ol start="{start}">\n<li>two</li>\n</ol>')
    if "and then" in after:
        assert "<p>and then</p>" in rest.split("</code></pre>")[1]


def test_a_long_message_is_folded_between_blocks() -> None:
    text = "\n\n".join(f"- item {n}\n- more {n}" if n % 2 else f"Paragraph {n} " + "word " * 30 for n in range(40))
    fold = folded_markdown(text)
    assert fold.head + fold.rest == text
    assert FOLD_HEAD_CHARS // 2 < len(fold.head) <= FOLD_HEAD_CHARS
    assert re.match(r"(- item|Paragraph) \d+", fold.rest)  # a block's first line
    assert folded_markdown("short").rest == ""


@pytest.mark.parametrize("secret", CORPUS, ids=lambda s: s.name)
def test_a_redacted_message_renders_no_secret(secret: Secret) -> None:
    """Redaction reads the plain text (a received mirror's sender, a tool hit's excerpt), rendering comes
    after: a secret in a code block, in inline code or in a link's text is replaced, and its marker shown.
    (The other order would leak: redacting the HTML misses 7 of these 97, their quotes become &quot;.)"""
    text = f"Set it:\n\n```sh\n{secret.text}\n```\n\nor `{secret.text}`, see [{secret.text}](https://example.org)"
    html = str(markdown(redact(text)[0]))
    assert secret.leaked_in(html) is None
    if secret.kind:
        assert f"[REDACTED:{secret.kind}]" in html


def test_a_code_line_cut_in_its_middle_keeps_the_rest_as_it_is() -> None:
    """A list item's code block cut inside one long line (no line end in reach): the line's rest is not
    unindented as a line of its own would be."""
    head = "- Build:\n\n  ```text\n  "
    text = head + "x" * (FOLD_HEAD_CHARS - len(head)) + "      after the cut\n" + "  more\n" * 400 + "  ```\n\nDone."
    fold = folded_markdown(text)
    assert fold.rest.startswith("```text\n      after the cut\nmore\n")
