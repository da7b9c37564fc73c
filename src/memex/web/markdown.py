"""Messages' Markdown as safe HTML for the conversation view: raw HTML shown as text, links only to web,
mail or relative addresses, images shown as links (the viewer loads nothing from the network), headings
under the message's own, and long messages folded between blocks (never inside a code block's fences)."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.token import Token
from markupsafe import Markup

from memex.web.render import FOLD_CHARS, FOLD_HEAD_CHARS, Folded

SAFE_SCHEMES = ("http", "https", "mailto")
_SCHEME = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9+.-]*):")
# A message's header is an <h3>: its Markdown headings come below it (# -> h4 … ### and deeper -> h6), and
# the page keeps one <h1>.
HEADING_SHIFT = 3


class SafeMarkdown(MarkdownIt):
    """CommonMark with tables and strikethrough; raw HTML off; a line break kept as typed (a prompt is
    rarely written as Markdown paragraphs, and a pasted log would otherwise run into one line)."""

    def __init__(self) -> None:
        super().__init__("commonmark", {"html": False, "breaks": True, "xhtmlOut": False})
        self.enable(["table", "strikethrough"])
        self.add_render_rule("link_open", _link_open)
        self.add_render_rule("image", _image)
        self.add_render_rule("heading_open", _heading)
        self.add_render_rule("heading_close", _heading)

    def validateLink(self, url: str) -> bool:
        """Only http(s), mailto and relative links (no `javascript:`, `data:`, `file:`): markdown-it gives the
        address with its entities decoded, so `&#106;avascript:` is caught too."""
        return is_safe_link(url)


def is_safe_link(url: str) -> bool:
    scheme = _SCHEME.match(url)
    return scheme is None or scheme.group(1).lower() in SAFE_SCHEMES


def _link_open(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    tokens[idx].attrSet("rel", "noreferrer nofollow")  # a transcript's link tells the site nothing
    return str(self.renderToken(tokens, idx, options, env))


def _image(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """An image as a link to it: shown, it would be fetched (a tracking pixel in a pasted page)."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or "image"
    src = escapeHtml(str(token.attrGet("src") or ""))
    return f'<a class="image" href="{src}" rel="noreferrer nofollow">[image: {escapeHtml(alt)}]</a>'


def _heading(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    token.tag = f"h{min(6, int(token.tag[1:]) + HEADING_SHIFT)}"
    return str(self.renderToken(tokens, idx, options, env))


MD = SafeMarkdown()


def markdown(text: str | None) -> Markup:
    """`text` (already redacted where it is redacted: the viewer gets plain text) as HTML; every character
    of it escaped but for the Markdown made into elements."""
    return Markup(MD.render(text or ""))  # markdown-it escapes the text itself: raw HTML is off


def folded_markdown(text: str | None) -> Folded:
    """`render.folded` for Markdown: a long text cut at the start of its last top-level block within the
    head's size (a list, a table, a code block kept whole), or, when one block runs past it, at a line as
    `folded` cuts; a code block cut so is closed in the head and opened again in the rest."""
    text = (text or "").replace("\r\n", "\n").replace("\r", "\n")
    if len(text) <= FOLD_CHARS:
        return Folded(text, "")
    starts = list(itertools.accumulate((len(line) + 1 for line in text.split("\n")), initial=0))
    blocks = [(t, t.map) for t in MD.parse(text) if t.level == 0 and t.nesting >= 0 and t.map]
    between = [starts[lines[0]] for _, lines in blocks if FOLD_HEAD_CHARS // 2 < starts[lines[0]] <= FOLD_HEAD_CHARS]
    if between:
        return Folded(text[: between[-1]], text[between[-1] :])
    cut = text.rfind("\n", 0, FOLD_HEAD_CHARS)
    cut = cut if cut > FOLD_HEAD_CHARS // 2 else FOLD_HEAD_CHARS
    head, rest = text[:cut], text[cut:]
    last = text.count("\n", 0, cut)  # the head's last line
    for token, (first, end) in blocks:  # `end`: the line after the closing fence
        if token.type == "fence" and first <= last < end - 1:
            opener = text[starts[first] : starts[first + 1] - 1]
            indent = opener[: len(opener) - len(opener.lstrip())]
            return Folded(f"{head}\n{indent}{token.markup}", opener + ("" if rest[:1] == "\n" else "\n") + rest)
    return Folded(head, rest)
