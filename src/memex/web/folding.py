"""Long messages folded between Markdown blocks for the conversation view (never inside a code block's
fences); the Markdown itself is rendered by `memex.markdown`."""

from __future__ import annotations

import itertools

from memex.markdown import MD
from memex.web.render import FOLD_CHARS, FOLD_HEAD_CHARS, Folded


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
