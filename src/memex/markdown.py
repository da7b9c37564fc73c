"""Messages' Markdown as safe HTML, for the viewer's conversation view and the exported HTML page: raw HTML
shown as text, links only to web, mail or relative addresses, images shown as links (a page loads nothing
from the network), headings under the message's own."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.token import Token
from markupsafe import Markup

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
