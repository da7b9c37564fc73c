"""Results sized for MCP clients: one page of items under a size budget, and the offset of the next page.

Claude Code warns when a tool's result passes 10,000 tokens and refuses it past 25,000
(`MAX_MCP_OUTPUT_TOKENS`); other clients cut it silently. Every memex tool result is compact JSON of at
most `MAX_RESULT_CHARS` characters and `MAX_RESULT_TOKENS` estimated tokens (`textutil.estimate_tokens`
counts every punctuation mark of the JSON, so it errs high): a page holds as many items as fit, and
`next_offset` says where the next page starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from memex.textutil import estimate_tokens

# Under the 10,000-token warning of Claude Code with room for the client's own framing; in English about
# 8,000 characters of text are 2,000 tokens, so the character cap binds first there, the token cap in CJK.
MAX_RESULT_CHARS = 32_000
MAX_RESULT_TOKENS = 8_000
# A search hit's long fields (its turn's whole text can be a long tool-heavy exchange) are cut here so a
# page shows several hits; `show_session` gives the whole turn.
HIT_FIELD_CHARS = 2_000
# A turn or message read with `show_session` keeps this much of each field before the page budget applies.
READ_FIELD_CHARS = 20_000
# A field is never cut shorter than this when one item alone must be made to fit.
MIN_FIELD_CHARS = 200


def dumps(value: Any) -> str:
    """Compact JSON (what a tool returns as text)."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()


def fits(text: str) -> bool:
    return len(text) <= MAX_RESULT_CHARS and estimate_tokens(text) <= MAX_RESULT_TOKENS


def clip(item: dict[str, Any], limit: int, fields: Iterable[str] | None = None) -> dict[str, Any]:
    """`item` with each string field (of `fields`, default all) longer than `limit` characters cut, those
    fields named in `truncated`."""
    names = list(fields) if fields is not None else [k for k, v in item.items() if isinstance(v, str)]
    out = dict(item)
    cut = [name for name in names if isinstance(out.get(name), str) and len(out[name]) > limit]
    for name in cut:
        text = out[name]
        out[name] = text[:limit] + f" … [{len(text) - limit} more characters]"
    if cut:
        out["truncated"] = sorted(set(out.get("truncated", [])) | set(cut))
    return out


def fill(
    envelope: dict[str, Any], key: str, items: Sequence[dict[str, Any]], offset: int, more: bool
) -> dict[str, Any]:
    """`envelope` with `key` holding the first of `items` (the page starting at `offset`) that fit the
    budget, `offset`, and `next_offset`: where the next page starts, null when nothing follows (`more`:
    items exist past the end of `items`). The first item always goes in, its fields cut to fit if need be."""
    result = {**envelope, key: [], "offset": offset, "next_offset": offset}
    chars, tokens = _size(result)
    page: list[dict[str, Any]] = []
    for item in items:
        text = dumps(item)
        item_chars, item_tokens = len(text) + 1, estimate_tokens(text) + 1
        if chars + item_chars > MAX_RESULT_CHARS or tokens + item_tokens > MAX_RESULT_TOKENS:
            if page:
                break
            item = _shrink(item, MAX_RESULT_CHARS - chars, MAX_RESULT_TOKENS - tokens)
            text = dumps(item)
            item_chars, item_tokens = len(text) + 1, estimate_tokens(text) + 1
        page.append(item)
        chars, tokens = chars + item_chars, tokens + item_tokens
    end = offset + len(page)
    result[key] = page
    result["next_offset"] = end if (more or len(page) < len(items)) else None
    return result


def _size(value: Any) -> tuple[int, int]:
    text = dumps(value)
    return len(text), estimate_tokens(text)


def _shrink(item: dict[str, Any], chars: int, tokens: int) -> dict[str, Any]:
    """`item` with its string fields cut shorter and shorter until it fits `chars` and `tokens`."""
    limit = max(MIN_FIELD_CHARS, chars // 2)
    while True:
        smaller = clip(item, limit)
        text = dumps(smaller)
        if (len(text) < chars and estimate_tokens(text) < tokens) or limit <= MIN_FIELD_CHARS:
            return smaller
        limit = max(MIN_FIELD_CHARS, limit // 2)
