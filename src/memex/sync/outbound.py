"""Search hits as the HTTP API sends them to another computer: redacted from their whole texts.

A hit carries pieces cut from longer texts: the chunk that matched (a slice of its turn), an excerpt,
the message around a mirror's match. A secret the cut split (a key body without its `BEGIN` line, the
second half of a token) is no longer recognisable in the piece, so every piece is redacted as a part of
the whole text it was cut from, or cut again from the redacted whole (a tool output's excerpt: from the
redacted output).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from memex.mirrors.build import redact_mirror
from memex.mirrors.model import mirror_from_row
from memex.mirrors.search import excerpt, message_context
from memex.redact import redact, redact_slice, secret_spans
from memex.search.highlight import spans_json
from memex.search.scoped import excerpt_of
from memex.store.queries import mirror_row, tool_output_text

# Whole texts of a hit, redacted as they are.
_WHOLE_FIELDS = ("prompt_text", "title", "tool_summary", "subagent_name", "subagent_description")
# Every text of a hit `redacted_hit` redacts (the pieces, and the whole texts).
REDACTED_FIELDS = frozenset(("full_text", "matched_chunk", *_WHOLE_FIELDS))


def redacted_hit(conn: sqlite3.Connection, hit: dict[str, Any], query: str) -> dict[str, Any]:
    """A copy of a search result (`memex search --json` shape) fit to leave this computer."""
    clean = dict(hit)
    if hit.get("source") == "mirror":
        _mirror_pieces(conn, clean, query)
    else:
        _turn_pieces(clean, query)
    if hit.get("source") == "tool":  # the excerpt is of a tool's output: cut again from the redacted output
        output = tool_output_text(conn, hit.get("tool_output_id"))
        clean["matched_chunk"] = excerpt_of(redact(output)[0], query) if output else ""
    for name in _WHOLE_FIELDS:
        if isinstance(clean.get(name), str):
            clean[name] = redact(clean[name])[0]
    if "spans" in clean and clean.get("matched_chunk") != hit.get("matched_chunk"):
        clean["spans"] = spans_json(clean.get("matched_chunk") or "", query)  # redaction moved the text
    return clean


def _turn_pieces(hit: dict[str, Any], query: str) -> None:
    full = hit.get("full_text") or ""
    chunk = hit.get("matched_chunk") or ""
    secrets = secret_spans(full)  # found once for the whole text and its chunk
    redacted_full = redact_slice(full, 0, len(full), secrets)[0]
    at = full.find(chunk) if chunk else -1
    if at >= 0:  # a chunk: a slice of the turn's text
        hit["matched_chunk"] = redact_slice(full, at, at + len(chunk), secrets)[0]
    else:  # an excerpt (whitespace folded), or a chunk no longer in the text: cut again from the clean text
        hit["matched_chunk"] = excerpt(redacted_full, query)
    hit["full_text"] = redacted_full


def _mirror_pieces(conn: sqlite3.Connection, hit: dict[str, Any], query: str) -> None:
    row = mirror_row(conn, hit["mirror_id"]) if hit.get("mirror_id") is not None else None
    if row is None:  # gone meanwhile: nothing of it is sent
        hit["full_text"] = hit["matched_chunk"] = ""
        return
    mirror, _ = redact_mirror(mirror_from_row(row))
    text, spans = mirror.conversation_text, mirror.metadata.get("messages", [])
    hit["full_text"] = message_context(text, spans, query)
    hit["matched_chunk"] = excerpt(text, query)
