"""Secrets out of what the MCP tools answer: it goes to the calling agent's model provider, so it is
redacted as search results over the HTTP API and hook injections are (`memex.redact`).

Every text is redacted whole, before the page cuts it (`pages.clip`): a piece of a secret a cut left
is no longer recognisable. A search hit's pieces (its chunk, a tool output's excerpt, a mirror's
context) are redacted as parts of the texts they were cut from, as the daemon does for another computer
(`sync.outbound.redacted_hit`).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from memex.redact import redact


def redacted(value: Any) -> Any:
    """`value` (JSON-like: dicts, lists, strings, numbers) with every string in it redacted."""
    if isinstance(value, str):
        return redact(value)[0] if value else value
    if isinstance(value, dict):
        return {key: redacted(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [redacted(item) for item in value]
    return value


def redacted_hit(conn: sqlite3.Connection, hit: dict[str, Any], query: str) -> dict[str, Any]:
    """A search hit (`SearchHit.to_json`) with its pieces redacted from their wholes (as the daemon's API
    sends it), and every other string redacted as it is."""
    from memex.sync.outbound import REDACTED_FIELDS
    from memex.sync.outbound import redacted_hit as outbound

    clean = outbound(conn, hit, query)
    return {key: value if key in REDACTED_FIELDS else redacted(value) for key, value in clean.items()}
