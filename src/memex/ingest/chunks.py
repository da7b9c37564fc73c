"""Cutting a turn's text into token-bounded, overlapping chunks."""

from __future__ import annotations

from bisect import bisect_left

from memex.textutil import token_spans


def chunk_text(text: str, max_tokens: int, overlap_tokens: int) -> list[str]:
    """Slices of `text` of at most `max_tokens` estimated tokens, consecutive ones sharing `overlap_tokens`.

    Cuts fall on token starts, moved back to the nearest line or space break when one is close, so a
    chunk rarely starts mid-word. Empty text gives no chunk.
    """
    text = text.strip()
    if not text:
        return []
    if len(text) <= max_tokens:  # a token is at least one character: certainly one chunk
        return [text]
    spans = token_spans(text)
    if len(spans) <= max_tokens:
        return [text]
    starts = [span[0] for span in spans]
    overlap_tokens = min(overlap_tokens, max_tokens // 2)
    chunks: list[str] = []
    start_token = 0
    while start_token < len(spans):
        end_token = min(start_token + max_tokens, len(spans))
        start = spans[start_token][0]
        end = len(text) if end_token == len(spans) else spans[end_token][0]
        if end_token < len(spans):
            window = text[start:end]
            brk = max(window.rfind("\n"), window.rfind(" "))
            if brk > len(window) // 2:
                end = start + brk
        piece = text[start:end].strip()
        if piece:
            chunks.append(piece)
        if end_token == len(spans):
            break
        tokens_taken = bisect_left(starts, end) - start_token
        start_token += max(1, tokens_taken - overlap_tokens)
    return chunks
