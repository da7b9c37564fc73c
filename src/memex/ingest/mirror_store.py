"""How a mirror is stored: one `mirror_records` row and its conversation in `mirror_segments`.

A segment is a run of the conversation text ending at a paragraph break ("\\n\\n"), chosen by content
(content-defined chunking): the first break at least a quarter of MIRROR_SEGMENT_CHARS after the segment's
start whose preceding characters hash to an anchor value, or failing that the first one four times
MIRROR_SEGMENT_CHARS after it; the last segment ends with the text. Where a segment ends depends only on
the text from its start to that break, so a text that grew keeps every segment ending two characters or
more before the first change; and when text moves (the last half of a mirror cut to its cap slides along),
the cuts fall on the same anchors again after a segment or two, so the moved segments are the same texts at
new places: they keep their rows and full-text entries, and only their start changes. A segment knows its
digest; a mirror's content hash is made of those, so hashing a grown mirror reads no old text.
"""

from __future__ import annotations

import hashlib
import sqlite3
import zlib
from dataclasses import dataclass

from memex.config import MIRROR_SEGMENT_CHARS
from memex.textutil import fts_text

_BREAK = "\n\n"
# Characters before a paragraph break that decide whether it is an anchor.
_WINDOW = 16


@dataclass
class Segment:
    """A segment to write (`body` set), or one stored (`id` set), which a write may move to `start`."""

    start: int
    length: int
    digest: str | None
    body: str | None = None
    id: int | None = None
    title: str = ""


def digest(body: str) -> str:
    return hashlib.blake2b(body.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


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


def cut_segments(text: str, offset: int = 0) -> list[Segment]:
    """The segments of `text`, which starts at `offset` of the conversation, at the start of a segment."""
    segments, start = [], 0
    while start < len(text):
        stop = _segment_end(text, start)
        body = text[start:stop]
        segments.append(Segment(offset + start, len(body), digest(body), body))
        start = stop
    return segments


def stored_segments(conn: sqlite3.Connection, mirror_id: int | None) -> list[Segment]:
    """A stored mirror's segments in order (without their text)."""
    if mirror_id is None:
        return []
    rows = conn.execute(
        "SELECT id, start, length, digest, title FROM mirror_segments WHERE mirror_id = ? ORDER BY start",
        (mirror_id,),
    ).fetchall()
    return [Segment(r["start"], r["length"], r["digest"], None, r["id"], r["title"]) for r in rows]


def splice(conn: sqlite3.Connection, stored: list[Segment], cut: int, tail: str) -> tuple[int, list[Segment]]:
    """The segments of a text that is the stored one up to `cut`, then `tail`: how many stored segments
    stay where they are, and the segments after them (the stored text they cover before `cut` is read).
    Of those, a stored segment with the same text is reused, moved if its start changed (`id` set)."""
    kept = 0
    while kept < len(stored) and stored[kept].digest and stored[kept].start + stored[kept].length + 2 <= cut:
        kept += 1
    start = stored[kept].start if kept < len(stored) else cut
    if start < cut:
        ids = [s.id for s in stored[kept:]]
        rows = conn.execute(
            f"SELECT body FROM mirror_segments WHERE id IN ({','.join('?' * len(ids))}) ORDER BY start", ids
        )
        tail = "".join(r[0] for r in rows)[: cut - start] + tail
    reusable: dict[tuple[str | None, int], list[Segment]] = {}
    for old in stored[kept:]:
        reusable.setdefault((old.digest, old.length), []).append(old)
    fresh = cut_segments(tail, start)
    for index, new in enumerate(fresh):
        if same := reusable.get((new.digest, new.length)):
            old = same.pop(0)
            fresh[index] = Segment(new.start, new.length, new.digest, None, old.id, old.title)
    return kept, fresh


def write_segments(
    conn: sqlite3.Connection, mirror_id: int, stored: list[Segment], kept: int, fresh: list[Segment], title: str
) -> None:
    """Keep `kept` stored segments, then have `fresh` (new ones inserted, reused ones moved), drop the other
    stored ones; the first segment carries `title` (as full-text search reads it)."""
    reused = {s.id for s in fresh if s.id is not None}
    gone = [s.id for s in stored[kept:] if s.id not in reused]
    for index in range(0, len(gone), 500):
        chunk = gone[index : index + 500]
        conn.execute(f"DELETE FROM mirror_segments WHERE id IN ({','.join('?' * len(chunk))})", chunk)
    starts = {s.id: s.start for s in stored}
    for segment in [*stored[:kept], *(s for s in fresh if s.id is not None)]:
        if starts[segment.id] != segment.start:
            conn.execute("UPDATE mirror_segments SET start = ? WHERE id = ?", (segment.start, segment.id))
        if segment.title != (wanted := title if segment.start == 0 else ""):
            conn.execute("UPDATE mirror_segments SET title = ? WHERE id = ?", (wanted, segment.id))
    conn.executemany(
        "INSERT INTO mirror_segments (mirror_id, start, length, body, digest, title, fts_body) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (mirror_id, s.start, s.length, s.body, s.digest, title if s.start == 0 else "", fts_text(s.body or ""))
            for s in fresh
            if s.id is None
        ],
    )


def stored_text(conn: sqlite3.Connection, mirror_id: int) -> str:
    """A stored mirror's whole conversation text."""
    rows = conn.execute("SELECT body FROM mirror_segments WHERE mirror_id = ? ORDER BY start", (mirror_id,))
    return "".join(r[0] for r in rows)


@dataclass
class MirrorState:
    """How far a local session's conversation had got at its resume line, when its mirror was stored."""

    line_index: int  # the resume line: everything below is about the entries before it
    messages: int  # how many messages they make
    last_chars: int  # the length of the last of them (a later assistant line may extend it)
    chars: int  # the length of them all
    head: int | None = None  # a mirror cut to its cap: the messages of its first half ...
    tail_start: int | None = None  # ... and the first message of its last half
    content_hash: str = ""  # the stored mirror this belongs to ("" for none)
    recipe: str = ""  # the mirror recipe it was made with


def load_state(conn: sqlite3.Connection, session_id: str) -> MirrorState | None:
    row = conn.execute(
        "SELECT line_index, messages, last_chars, chars, head, tail_start, content_hash, recipe FROM mirror_state "
        "WHERE session_id = ?",
        (session_id,),
    ).fetchone()
    return MirrorState(*row) if row else None


def save_state(conn: sqlite3.Connection, session_id: str, state: MirrorState) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO mirror_state (session_id, line_index, messages, last_chars, chars, head, "
        "tail_start, content_hash, recipe) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            session_id,
            state.line_index,
            state.messages,
            state.last_chars,
            state.chars,
            state.head,
            state.tail_start,
            state.content_hash,
            state.recipe,
        ),
    )
