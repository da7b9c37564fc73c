"""A mirror as it travels between computers: redacted, then compressed JSON.

The same bytes go into the stream entry and into the per-computer hash of latest mirrors, and every
field a receiver needs is inside them (computer, session, `updated_at`), so an entry read from either
place is applied the same way.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import orjson

from memex.errors import WireError
from memex.mirrors.build import redact_mirror
from memex.mirrors.model import LABELS, Mirror

# Version of the payload layout; a receiver skips (and acknowledges) payloads of a version it does not know.
WIRE_FORMAT = 1
# Conversation text compresses 3–5×: less memory in Redis and less to carry.
ZLIB_LEVEL = 6
_REQUIRED = ("session_id", "computer", "agent", "conversation_text", "content_hash", "updated_at")


__all__ = ["WIRE_FORMAT", "Envelope", "WireError", "decode", "encode", "prepare", "redact_mirror"]


@dataclass
class Envelope:
    """A mirror received from another computer, with the time its computer last changed it."""

    mirror: Mirror
    updated_at: str


def encode(mirror: Mirror, updated_at: str) -> bytes:
    """The payload of a mirror that is ready to leave (redact it first: `prepare`)."""
    document = {"v": WIRE_FORMAT, **mirror.as_dict(), "updated_at": updated_at}
    return zlib.compress(orjson.dumps(document), ZLIB_LEVEL)


def prepare(mirror: Mirror, updated_at: str) -> bytes:
    """The payload of a local mirror: redacted, then encoded."""
    return encode(redact_mirror(mirror)[0], updated_at)


def decode(payload: bytes) -> Envelope:
    """The mirror a payload carries; WireError when it is damaged or of an unknown version."""
    try:
        document: dict[str, Any] = orjson.loads(zlib.decompress(payload))
    except (zlib.error, orjson.JSONDecodeError, TypeError) as exc:
        raise WireError(f"unreadable mirror payload: {exc}") from None
    if not isinstance(document, dict) or document.get("v") != WIRE_FORMAT:
        version = document.get("v") if isinstance(document, dict) else None
        raise WireError(f"mirror payload of unknown format {version!r}")
    if not all(isinstance(document.get(name), str) and document[name] for name in _REQUIRED):
        raise WireError("mirror payload without its session, computer or text")
    text = document["conversation_text"]
    mirror = Mirror(
        session_id=document["session_id"],
        computer=document["computer"],
        agent=document["agent"],
        project=_optional_text(document.get("project")),
        title=_optional_text(document.get("title")),
        timestamp_start=_optional_text(document.get("timestamp_start")),
        timestamp_end=_optional_text(document.get("timestamp_end")),
        conversation_text=text,
        metadata=_metadata(document.get("metadata"), len(text)),
        content_hash=document["content_hash"],
    )
    return Envelope(mirror, document["updated_at"])


def _optional_text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _metadata(value: Any, length: int) -> dict[str, Any]:
    """The metadata of a received mirror, its message spans kept only when every one is well formed (a
    reader slices the text with them)."""
    if not isinstance(value, dict):
        return {}
    spans = value.get("messages")
    if spans is not None and not (
        isinstance(spans, list)
        and all(
            isinstance(span, list)
            and len(span) == 4
            and span[0] in LABELS
            and isinstance(span[1], int)
            and isinstance(span[2], int)
            and 0 <= span[1] <= span[2] <= length
            and (span[3] is None or isinstance(span[3], str))
            for span in spans
        )
    ):
        value = {k: v for k, v in value.items() if k != "messages"}
    return value
