"""How a mirror is stored: one `mirror_records` row and its conversation in `mirror_segments`.

A segment is a run of the conversation text ending at a paragraph break ("\\n\\n") chosen by content
(content-defined chunking): the first break at least a quarter of MIRROR_SEGMENT_CHARS after the segment's
start whose preceding characters hash to an anchor value, or failing that the first one four times
MIRROR_SEGMENT_CHARS after it; the last segment ends with the text. Where a segment ends depends only on
the text from its start to that break, so a text that grew keeps every segment ending two characters or
more before the first change; and when text moves (the last half of a mirror cut to its cap slides along),
the cuts fall on the same anchors again after a segment or two, so the moved segments are the same texts
at new places: they keep their rows and full-text entries, and only their start changes.

A segment also holds the spans of the messages that end in it, relative to its start, and a digest of its
spans and text: a mirror's content hash is made of those, so hashing a grown mirror reads none of its old
text or spans.
"""

from __future__ import annotations

import sqlite3
import zlib
from typing import Any

import orjson

from memex.config import MIRROR_SEGMENT_CHARS
from memex.digest import blake2b
from memex.plain import Record
from memex.store import mirrors as store
from memex.textutil import fts_text

_BREAK = "\n\n"
# Characters before a paragraph break that decide whether it is an anchor.
_WINDOW = 16


class Segment(Record):
    """A segment to write (`body` set), or one stored (`id` set), which a write may move to `start`."""

    __slots__ = ("body", "digest", "id", "length", "spans", "start", "title")

    start: int
    length: int
    digest: str | None
    spans: list[list[Any]]  # [role, start, end, timestamp], from `start`
    body: str | None
    id: int | None
    title: str

    def __init__(
        self,
        start: int,
        length: int,
        digest: str | None,
        spans: list[list[Any]] | None = None,
        body: str | None = None,
        id: int | None = None,
        title: str = "",
    ) -> None:
        self.start = start
        self.length = length
        self.digest = digest
        self.spans = [] if spans is None else spans
        self.body = body
        self.id = id
        self.title = title


def _digest(body: str, spans: list[list[Any]]) -> str:
    hasher = blake2b(orjson.dumps(spans), digest_size=16)  # JSON first: it ends where it ends
    hasher.update(body.encode("utf-8", "surrogatepass"))
    return hasher.hexdigest()


def _anchored(text: str, at: int) -> bool:
    """True when the paragraph break at `at` is an anchor: its preceding characters hash to 0 modulo the
    odds that make segments about MIRROR_SEGMENT_CHARS long (real mirrors break a paragraph about every
    150 characters)."""
    odds = max(1, (MIRROR_SEGMENT_CHARS - MIRROR_SEGMENT_CHARS // 4) // 150)
    return zlib.crc32(text[at - _WINDOW : at].encode("utf-8", "surrogatepass")) % odds == 0


def _segment_end(text: str, start: int) -> int:
    """Where the segment that starts at `start` ends (see the module's description)."""
    at = text.find(_BREAK, start + max(_WINDOW, MIRROR_SEGMENT_CHARS // 4))
    while at >= 0:
        if at >= start + 4 * MIRROR_SEGMENT_CHARS or _anchored(text, at):
            return at
        at = text.find(_BREAK, at + 1)
    return len(text)


def cut_segments(text: str, offset: int = 0, spans: list[list[Any]] | None = None) -> list[Segment]:
    """The segments of `text`, which starts a segment at `offset` of the conversation, each with the
    `spans` (of the conversation, in order) of the messages that end in it."""
    bounds, start = [], 0
    while start < len(text):
        bounds.append((start, _segment_end(text, start)))
        start = bounds[-1][1]
    owned: list[list[list[Any]]] = [[] for _ in bounds]
    at = 0
    for role, first, last, stamp in (spans or []) if bounds else []:
        while at < len(bounds) - 1 and last > offset + bounds[at][1]:
            at += 1
        base = offset + bounds[at][0]
        owned[at].append([role, first - base, last - base, stamp])
    return [
        Segment(offset + a, b - a, _digest(text[a:b], own), own, text[a:b])
        for (a, b), own in zip(bounds, owned, strict=True)
    ]


def stored_segments(conn: sqlite3.Connection, mirror_id: int | None) -> list[Segment]:
    """A stored mirror's segments in order (without their text and spans)."""
    if mirror_id is None:
        return []
    rows = store.segments_of(conn, mirror_id)
    return [Segment(r["start"], r["length"], r["digest"], id=r["id"], title=r["title"]) for r in rows]


def _ids(segments: list[Segment]) -> list[int]:
    return [s.id for s in segments if s.id is not None]


def stored_text(conn: sqlite3.Connection, segments: list[Segment]) -> str:
    """The text of these stored segments (of one mirror)."""
    return "".join(store.segment_bodies(conn, _ids(segments))) if segments else ""


def stored_spans(conn: sqlite3.Connection, segments: list[Segment]) -> list[list[Any]]:
    """The message spans these stored segments hold, in the conversation's offsets."""
    spans = []
    for start, stored in store.segment_spans(conn, _ids(segments)) if segments else ():
        spans += [[role, first + start, last + start, stamp] for role, first, last, stamp in orjson.loads(stored)]
    return spans


def splice(
    conn: sqlite3.Connection,
    stored: list[Segment],
    cut: int,
    tail: str,
    spans: list[list[Any]],
    frozen: int = 0,
) -> tuple[int, list[Segment]]:
    """The segments of a text that is the stored one up to `cut`, then `tail`: how many stored segments
    stay where they are, and the segments after them.

    `spans` are the messages' spans (any may be given: those ending in the segments kept are left out);
    the stored spans of the segments cut again that start before `frozen` are kept as well (the messages
    a resumed conversation did not read again). A stored segment with the same text and spans is reused,
    moved if its start changed (`id` set)."""
    kept = 0
    while kept < len(stored) and stored[kept].digest and stored[kept].start + stored[kept].length + 2 <= cut:
        kept += 1
    rest = stored[kept:]
    start = rest[0].start if rest else cut
    earlier: list[list[Any]] = []
    if start < cut:
        tail = stored_text(conn, rest)[: cut - start] + tail
        earlier = [span for span in stored_spans(conn, rest) if span[1] < frozen]
    fresh = cut_segments(tail, start, [*earlier, *(span for span in spans if span[2] > start)])
    reusable: dict[tuple[str | None, int], list[Segment]] = {}
    for old in rest:
        reusable.setdefault((old.digest, old.length), []).append(old)
    for index, new in enumerate(fresh):
        if same := reusable.get((new.digest, new.length)):
            old = same.pop(0)
            fresh[index] = Segment(new.start, new.length, new.digest, new.spans, id=old.id, title=old.title)
    return kept, fresh


def write_segments(
    conn: sqlite3.Connection, mirror_id: int, stored: list[Segment], kept: int, fresh: list[Segment], title: str
) -> None:
    """Keep `kept` stored segments, then have `fresh` (new ones inserted, reused ones moved), drop the other
    stored ones; the first segment carries `title` (as full-text search reads it)."""
    reused = {s.id for s in fresh if s.id is not None}
    gone = [s.id for s in stored[kept:] if s.id not in reused]
    store.delete_segments(conn, [i for i in gone if i is not None])
    starts = {s.id: s.start for s in stored}
    for segment in [*stored[:kept], *(s for s in fresh if s.id is not None)]:
        assert segment.id is not None
        if starts[segment.id] != segment.start:
            store.move_segment(conn, segment.id, segment.start)
        if segment.title != (wanted := title if segment.start == 0 else ""):
            store.retitle_segment(conn, segment.id, wanted)
    store.insert_segments(
        conn,
        [
            (
                mirror_id,
                s.start,
                s.length,
                s.digest,
                title if s.start == 0 else "",
                orjson.dumps(s.spans).decode(),
                s.body,
                fts_text(s.body or ""),
            )
            for s in fresh
            if s.id is None
        ],
    )


class MirrorState(Record):
    """How far a local session's conversation had got at its resume line, when its mirror was stored."""

    __slots__ = (
        "chars",
        "content_hash",
        "head",
        "last_chars",
        "last_role",
        "last_start",
        "last_timestamp",
        "line_index",
        "messages",
        "recipe",
        "tail_start",
    )

    line_index: int  # the resume line: what follows is about the entries before it
    messages: int  # how many messages they make
    chars: int  # the length of them all
    last_role: str | None  # the last of them: its speaker,
    last_start: int | None  # where its text starts in the mirror (None: cut out of it),
    last_chars: int  # its length (a later assistant line may extend it)
    last_timestamp: str | None  # and its time
    head: int | None  # a mirror cut to its cap: the messages of its first half ...
    tail_start: int | None  # ... and the first message of its last half
    content_hash: str  # the stored mirror this belongs to ("" for none)
    recipe: str  # the mirror recipe it was made with

    def __init__(
        self,
        line_index: int,
        messages: int,
        chars: int,
        last_role: str | None = None,
        last_start: int | None = None,
        last_chars: int = 0,
        last_timestamp: str | None = None,
        head: int | None = None,
        tail_start: int | None = None,
        content_hash: str = "",
        recipe: str = "",
    ) -> None:
        self.line_index = line_index
        self.messages = messages
        self.chars = chars
        self.last_role = last_role
        self.last_start = last_start
        self.last_chars = last_chars
        self.last_timestamp = last_timestamp
        self.head = head
        self.tail_start = tail_start
        self.content_hash = content_hash
        self.recipe = recipe


def load_state(conn: sqlite3.Connection, session_id: str) -> MirrorState | None:
    row = store.load_state(conn, session_id)
    return MirrorState(*row) if row else None


def save_state(conn: sqlite3.Connection, session_id: str, state: MirrorState) -> None:
    store.save_state(conn, session_id, [getattr(state, name) for name in store.STATE_COLUMNS])
