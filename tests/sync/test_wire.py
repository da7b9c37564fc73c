"""A mirror on the wire: redacted message by message, compressed, read back whole; damaged or foreign
payloads are refused."""

from __future__ import annotations

import zlib

import orjson
import pytest

from memex.mirrors.build import _render, content_hash
from memex.mirrors.model import Mirror
from memex.sync.wire import WireError, decode, encode, prepare, redact_mirror

SECRET = "ghp_" + "a1B2c3D4e5" * 4


def mirror() -> Mirror:
    text, spans = _render(
        [
            ["user", f"my token is {SECRET}, why does the push fail?", "2026-05-01T10:00:00.000Z"],
            ["assistant", "Revoke it first. Then run `git push` again.", "2026-05-01T10:00:05.000Z"],
            ["user", "done, thanks", None],
        ]
    )
    found = Mirror("s-1", "alpha", "claude", "/home/dev/shop", f"push fails ({SECRET})", None, None, text)
    found.metadata = {"format": 1, "messages": spans, "prs": [7]}
    found.content_hash = content_hash(found)
    return found


def test_round_trip_with_redaction() -> None:
    envelope = decode(prepare(mirror(), "2026-05-01T10:01:00.000Z"))
    received = envelope.mirror
    assert envelope.updated_at == "2026-05-01T10:01:00.000Z"
    assert SECRET not in received.conversation_text and SECRET not in (received.title or "")
    assert [m["text"] for m in received.messages()] == [
        "my token is [REDACTED:github-token], why does the push fail?",
        "Revoke it first. Then run `git push` again.",
        "done, thanks",
    ]
    assert received.metadata["redacted"] == 2 and received.metadata["prs"] == [7]
    assert received.content_hash == content_hash(received) != mirror().content_hash


def test_nothing_to_redact_keeps_the_text() -> None:
    clean = mirror()
    clean.title = "push fails"
    clean.conversation_text = clean.conversation_text.replace(SECRET, "a-placeholder")
    clean.metadata["messages"][0][2] -= len(SECRET) - len("a-placeholder")
    for span in clean.metadata["messages"][1:]:
        span[1] -= len(SECRET) - len("a-placeholder")
        span[2] -= len(SECRET) - len("a-placeholder")
    redacted, count = redact_mirror(clean)
    assert count == 0 and redacted.conversation_text == clean.conversation_text


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"plain text",
        zlib.compress(b"not json"),
        zlib.compress(b"[1, 2]"),
        zlib.compress(orjson.dumps({"v": 99, "session_id": "s"})),
        zlib.compress(orjson.dumps({"v": 1, "session_id": "s", "computer": "c"})),
    ],
)
def test_damaged_or_foreign_payloads_are_refused(payload: bytes) -> None:
    with pytest.raises(WireError):
        decode(payload)


def test_malformed_message_spans_are_dropped() -> None:
    bad = mirror()
    bad.metadata["messages"] = [["user", 0, 10_000, None], ["robot", 0, 1, None]]
    received = decode(encode(bad, "2026-05-01T10:01:00.000Z")).mirror
    assert "messages" not in received.metadata and received.messages() == []
    assert received.metadata["prs"] == [7]
