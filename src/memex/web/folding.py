"""Long messages folded between Markdown blocks for the conversation view (never inside a code block's
fences); the Markdown itself is rendered by `memex.markdown`."""

from __future__ import annotations

import itertools
import re

from memex.markdown import MD
from memex.web.render import FOLD_CHARS, FOLD_HEAD_CHARS, Folded


def folded_markdown(text: str | None) -> Folded:
    """`render.folded` for Markdown: a long text cut at the start of its last top-level block within the
    head's size (a list, a table, a code block kept whole), or, when one block runs past it, at a line as
    `folded` cuts; a code block cut so (also one in a list item or a quote) is closed in the head and opened
    again in the rest."""
    text = (text or "").replace("\r\n", "\n").replace("\r", "\n")
    if len(text) <= FOLD_CHARS:
        return Folded(text, "")
    starts = list(itertools.accumulate((len(line) + 1 for line in text.split("\n")), initial=0))
    tokens = [t for t in MD.parse(text) if t.nesting >= 0 and t.map]
    blocks = [t.map[0] for t in tokens if t.level == 0 and t.map]
    between = [starts[line] for line in blocks if FOLD_HEAD_CHARS // 2 < starts[line] <= FOLD_HEAD_CHARS]
    if between:
        return Folded(text[: between[-1]], text[between[-1] :])
    cut = text.rfind("\n", 0, FOLD_HEAD_CHARS)
    cut = cut if cut > FOLD_HEAD_CHARS // 2 else FOLD_HEAD_CHARS
    last = text.count("\n", 0, cut)  # the head's last line
    for token in tokens:
        first, end = token.map or (0, 0)  # `end`: the line after the closing fence
        if token.type == "fence" and first <= last < end - 1:
            opener = text[starts[first] : starts[first + 1] - 1]
            items = [t.map for t in tokens if t.type == "list_item_open" and t.map]
            # Where the list items holding the block end (the lines after them), innermost first.
            ends = sorted({starts[stop] for start, stop in items if start <= first and end <= stop < len(starts) - 1})
            return _cut_fence(text, cut, token.markup, opener, starts[end], ends)
    return Folded(text[:cut], text[cut:])


# A list item's marker before a code block on its first line (`1. ```sh`): its lines are indented as wide.
_LIST_MARKER = re.compile(r"[-*+]|\d{1,9}[.)]")


def _cut_fence(text: str, cut: int, fence: str, opener: str, after: int, item_ends: list[int]) -> Folded:
    """`text` cut at `cut`, inside the code block opened by the line `opener` and closed before `after`:
    the block closed in the head as its container (a list item, a quote) goes on, and opened again in the
    rest, at the top level when the container was a list item (its code lines, and the item's lines after
    them, unindented as much). `item_ends`: where the list items holding the block end, innermost first; in
    the rest, each is set apart by a blank line, as the rest is rendered without the list it belongs to: the
    next item (`2. two`) after a paragraph would be read as that paragraph's next line (only a list starting
    at 1 may interrupt one)."""
    container = _LIST_MARKER.sub(lambda m: " " * len(m.group()), opener[: opener.index(fence)])
    head = f"{text[:cut]}\n{container}{fence}"
    bounds = [cut, *item_ends, len(text)]
    parts = [text[start:stop] for start, stop in itertools.pairwise(bounds)]
    if not container.strip():  # a list item's (or an indented) block: its lines lose the item's indent
        opener = opener[len(container) :]
        width = len(container.expandtabs(TAB_STOP))
        inside = parts[0] if item_ends else text[cut:after]  # the code lines, and the rest of their item
        first, *lines = inside.split("\n")  # the cut line's rest stays as it is: cut mid-line
        parts[0] = "\n".join([first, *(_unindent(line, width) for line in lines)]) + parts[0][len(inside) :]
    rest = parts[0]
    for part in parts[1:]:
        rest += ("" if rest.endswith("\n\n") else "\n") + part
    return Folded(head, opener + ("" if rest[:1] == "\n" else "\n") + rest)


# Markdown's tab stops: a tab indents to the next multiple of 4 columns.
TAB_STOP = 4


def _unindent(line: str, width: int) -> str:
    """`line` without up to `width` columns of its leading spaces and tabs (a tab reaching past them leaves
    the columns it overshot as spaces)."""
    column = at = 0
    while at < len(line) and column < width and line[at] in " \t":
        column = column + 1 if line[at] == " " else (column // TAB_STOP + 1) * TAB_STOP
        at += 1
    return " " * max(column - width, 0) + line[at:]
