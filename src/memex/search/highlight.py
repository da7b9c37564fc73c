"""Where a query's words occur in a text: the spans a result marks, and an excerpt around the first.

A query word matches as FTS5 matches it: a phrase of tokens (letters and digits; `_`, `.`, `/` and the
like separate them), compared without case or diacritics, each CJK character a token of its own.
Stopwords are marked only when the query is made of nothing else. A word ending in `*` (`zebr*`) marks each
word its last token begins, whole (`zebra`). Offsets are Python string indices
(code points) into the text given.
"""

from __future__ import annotations

from memex.redact import clear_cut
from memex.search.lexical import FTS_TOKEN, STOPWORDS, _words, fold, prefix_word
from memex.textutil import has_cjk

# Characters an excerpt shows before its first match (the rest of its size comes after).
LEAD_CHARS = 80


def _tokens(text: str) -> list[tuple[str, int, int]]:
    """(folded token, start, end) of every FTS token of `text` (a CJK character is a token)."""
    found = []
    for match in FTS_TOKEN.finditer(text):
        word, start = match.group(0), match.start()
        if word.isascii():  # most tokens: folding is lower case
            found.append((word.lower(), start, match.end()))
        elif has_cjk(word):
            for offset, char in enumerate(word):
                found.append((fold(char), start + offset, start + offset + 1))
        else:
            found.append((fold(word), start, match.end()))
    return found


def _phrases(query: str) -> list[tuple[list[str], bool]]:
    """The token phrases to look for, each with whether its last token is a prefix (`zebr*`): each query
    word (stopwords only when nothing else is left), a CJK run as every pair of its characters."""
    words = _words(query)
    words = [w for w in words if w.lower() not in STOPWORDS] or words
    phrases: list[tuple[list[str], bool]] = []
    for word in words:
        body, prefix = prefix_word(word)
        tokens = [fold(t) for t in FTS_TOKEN.findall(body)]
        if not tokens:
            continue
        if has_cjk(body):
            chars = [c for t in tokens for c in (list(t) if has_cjk(t) else [t])]
            if not prefix:
                phrases.extend((chars[i : i + 2], False) for i in range(max(1, len(chars) - 1)))
                continue
            tokens = chars
        phrases.append((tokens, prefix))
    unique = {(tuple(p), prefix): (p, prefix) for p, prefix in phrases}
    return list(unique.values())


def match_spans(text: str, query: str) -> list[tuple[int, int]]:
    """The (start, end) spans of `text` where a word of `query` occurs, in order, not overlapping."""
    if not text or not query.strip():
        return []
    tokens = _tokens(text)
    folded = [t[0] for t in tokens]
    spans: list[tuple[int, int]] = []
    for phrase, prefix in _phrases(query):
        size = len(phrase)
        head, last = phrase[:-1], phrase[-1]
        for i in range(len(folded) - size + 1):
            if folded[i : i + size - 1] == head and (
                folded[i + size - 1].startswith(last) if prefix else folded[i + size - 1] == last
            ):
                spans.append((tokens[i][1], tokens[i + size - 1][2]))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def spans_json(text: str, query: str) -> list[list[int]]:
    """`match_spans` as `--json` gives them: [start, end] pairs."""
    return [[start, end] for start, end in match_spans(text, query)]


def highlighted_excerpt(
    text: str, query: str, size: int, spans: list[tuple[int, int]] | None = None
) -> tuple[str, list[tuple[int, int]]]:
    """About `size` characters of `text` on one line (whitespace collapsed), starting a little before
    the first match, and the spans of the query's words in it (offsets into the excerpt). `spans`: the
    query's `match_spans` in `text` when already known (a search hit carries them)."""
    spans = match_spans(text, query) if spans is None else spans
    start = 0
    if spans and spans[0][0] > LEAD_CHARS:
        start = spans[0][0] - LEAD_CHARS
        while start > 0 and not text[start - 1].isspace() and spans[0][0] - start < 2 * LEAD_CHARS:
            start -= 1  # begin at a word
    end = start + clear_cut(text[start:], size)  # never halve a secret (see `memex.textutil.shorten`)
    out: list[str] = ["…"] if start > 0 else []
    length = len(out)
    where: dict[int, int] = {}  # offset in `text` -> offset in the excerpt
    after_space = True
    for position in range(start, end):
        where[position] = length
        char = text[position]
        if char.isspace():
            if after_space:
                continue
            char = " "
        after_space = char == " "
        out.append(char)
        length += 1
    where[end] = length
    body = "".join(out).rstrip()
    marked = [(where[s], where[e]) for s, e in spans if start <= s and e <= end]
    marked = [(s, min(e, len(body))) for s, e in marked if s < len(body)]
    return body + ("…" if end < len(text) else ""), marked
