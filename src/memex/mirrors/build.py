"""Mirrors: the conversation-only text of a session, the artefact that travels between computers.

A mirror holds what the user and the assistant said to each other in the session's main stream, read from
the stored entries: prompts, assistant text and compaction summaries. Tool calls, tool results, thinking,
injected context, empty text and `<system-reminder>` blocks are not in it, nor are subagents' chats.
`conversation_text` is the messages as `User: …` / `Assistant: …` paragraphs (what full-text search
indexes); `metadata["messages"]` gives each message's speaker, character span and time, so a reader
never has to parse the text back.

A session that grew is not read again from its start: `mirror_state` keeps how far the conversation had
got at the session's resume line (the entries before it never change on an append), so the next ingest
reads only the entries after it and writes only the segments of the text that changed (`mirrors.segments`).
The result is the mirror a rebuild from every entry gives, to the character.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

import orjson

from memex.config import MIRROR_SEGMENT_CHARS
from memex.digest import blake2b
from memex.errors import MemexError
from memex.mirrors import segments
from memex.mirrors.model import LABELS, Mirror, mirror_from_row
from memex.mirrors.segments import MirrorState, Segment, load_state, save_state
from memex.plain import Record
from memex.redact import clear_cut, redact
from memex.store import mirrors as store
from memex.textutil import fts_text, strip_system_reminders

MIRROR_FORMAT = 1
# What a stored mirror depends on besides the entries: a resume state made with another recipe is not used.
RECIPE = f"{MIRROR_FORMAT}/{MIRROR_SEGMENT_CHARS}"
_ROLES = {"prompt": "user", "assistant": "assistant", "compact_summary": "summary"}
# One pasted log or generated file must not become most of a mirror (they travel between computers):
# a message keeps its first 20,000 characters, and a mirror its first and last 1,000,000.
MAX_MESSAGE_CHARS = 20_000
MAX_MIRROR_CHARS = 2_000_000
_CUT = "\n[… cut by memex …]"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


# --- the conversation: entries -> messages -> text ---------------------------------------------------


def message_text(raw: str | None) -> str:
    """An entry's text as a mirror keeps it: no system reminders, trimmed, cut at MAX_MESSAGE_CHARS (never
    inside a secret, which redaction would no longer recognise once cut)."""
    text = strip_system_reminders(raw or "").strip()
    if len(text) <= MAX_MESSAGE_CHARS:
        return text
    return text[: clear_cut(text, MAX_MESSAGE_CHARS)] + _CUT


class Gap(Record):
    """Messages a stored mirror cut out (see `_fit`), known only by their number; `after`: the length of
    the messages that mirror kept after them (the message before those did not fit beside them)."""

    __slots__ = ("after", "count")

    count: int
    after: int

    def __init__(self, count: int, after: int) -> None:
        self.count = count
        self.after = after


class Conversation:
    """A session's messages ([role, text, timestamp]), read entry by entry in line order.

    The lines of one assistant response are one message, its repeated blocks count once (`seen`), and
    consecutive assistant messages are joined. One resumed from a stored mirror (`_resume`) may know its
    first messages only by number and size: they stay in the stored text (`count` and `chars` include
    them), and what joins the last of them is kept in `extension`.
    """

    def __init__(self, count: int = 0, chars: int = 0, last: tuple[Any, int, Any] | None = None) -> None:
        self.messages: list[Any] = []  # [role, text, timestamp] lists, or a Gap
        self.count = count
        self.chars = chars  # the length of all messages' texts
        # The last message not in `messages`: its speaker, length and time.
        self.last_role: Any
        self._last_timestamp: Any
        self.last_role, self._last_chars, self._last_timestamp = last or (None, 0, None)
        self.extension = ""
        self.seen: set[tuple[str, str]] = set()

    def add(self, kind: str, raw: str | None, timestamp: str | None, message_id: str | None) -> None:
        text = message_text(raw)
        if not text:
            return
        role = _ROLES[kind]
        if role == "assistant" and message_id:
            if (message_id, text) in self.seen:
                return
            self.seen.add((message_id, text))
        if role == "assistant" and self.last_role == "assistant":
            if self.messages:
                self.messages[-1][1] += "\n\n" + text
            else:
                self.extension += "\n\n" + text
            self.chars += 2 + len(text)
            return
        self.messages.append([role, text, timestamp])
        self.count, self.chars, self.last_role = self.count + 1, self.chars + len(text), role

    def read(self, rows: list[sqlite3.Row], resume_line: int) -> MirrorState:
        """Add the rows; returns the state of the conversation before the first row at or after
        `resume_line`, where the next ingest resumes (its last message not yet placed in the text)."""
        mark = None
        for row in rows:
            if mark is None and row["line_index"] >= resume_line:
                mark = self.mark(resume_line)
            self.add(row["kind"], row["text"], row["timestamp"], row["message_id"])
        return mark or self.mark(resume_line)

    def mark(self, line: int) -> MirrorState:
        if self.messages:
            role, text, timestamp = self.messages[-1]
            role, length = role, len(text)
        else:
            role, length, timestamp = self.last_role, self._last_chars + len(self.extension), self._last_timestamp
        return MirrorState(line, self.count, self.chars, role, None, length, timestamp, recipe=RECIPE)


def _render(messages: list[list[Any]], offset: int = 0, after: bool = False) -> tuple[str, list[list[Any]]]:
    """The text of the messages and each one's [role, start, end, timestamp] in it; placed at `offset` of
    the conversation, `after` other messages (a paragraph break first)."""
    parts: list[str] = []
    spans = []
    for role, text, timestamp in messages:
        label = f"{LABELS[role]}: "
        if parts or after:
            parts.append("\n\n")
            offset += 2
        spans.append([role, offset + len(label), offset + len(label) + len(text), timestamp])
        parts.append(label + text)
        offset += len(label) + len(text)
    return "".join(parts), spans


class NeedsRebuild(MemexError):
    """A resumed conversation cannot be finished without the messages its stored mirror cut out."""


def _halves(messages: list[Any], total: int) -> tuple[int, int] | None:
    """How many messages the first and the last half keep of a conversation longer than MAX_MIRROR_CHARS
    (None when it fits whole). A Gap (what a stored mirror already cut) may stand between the halves: the
    first half ends at it (the message after the first half did not fit, and has not changed since), and
    so does the last half when it holds at least as much as the stored one did after the Gap (the message
    before that did not fit then, so it does not now); NeedsRebuild when it holds less."""
    if total <= MAX_MIRROR_CHARS:
        if any(isinstance(m, Gap) for m in messages):
            raise NeedsRebuild
        return None
    half = MAX_MIRROR_CHARS // 2
    head, used = 0, 0
    for message in messages:
        if isinstance(message, Gap) or used + len(message[1]) > half:
            break
        head, used = head + 1, used + len(message[1])
    tail, used = 0, 0
    for message in reversed(messages[head:]):
        if isinstance(message, Gap) and used < message.after:
            raise NeedsRebuild
        if isinstance(message, Gap) or used + len(message[1]) > half:
            break
        tail, used = tail + 1, used + len(message[1])
    return head, tail


def _fit(messages: list[Any], count: int, halves: tuple[int, int] | None) -> list[list[Any]]:
    """Messages trimmed to their halves: the first and the last half kept, a note between them."""
    if halves is None:
        return messages
    head, tail = halves
    note = ["summary", f"[… {count - head - tail} messages cut by memex …]", None]
    return [*messages[:head], note, *messages[len(messages) - tail :]]


def _record_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    """A mirror's metadata as its record keeps it: the message spans are in its segments."""
    return {**metadata, "messages": []} if "messages" in metadata else metadata


def content_hash(mirror: Mirror, digests: list[str] | None = None) -> str:
    """A digest of everything a mirror says (its computer and session id aside). Its text and message
    spans count through the digests of its segments (`mirrors.segments`), which a mirror that grew already
    has for most of it."""
    if digests is None:
        spans = mirror.metadata.get("messages", [])
        digests = [str(s.digest) for s in segments.cut_segments(mirror.conversation_text, 0, spans)]
    payload = orjson.dumps(
        [
            mirror.agent,
            mirror.project,
            mirror.title,
            mirror.timestamp_start,
            mirror.timestamp_end,
            digests,
            _record_metadata(mirror.metadata),
        ],
        option=orjson.OPT_SORT_KEYS,
    )
    return blake2b(payload, digest_size=16).hexdigest()


# --- a local session's mirror: rebuilt from every entry, or continued from the stored one ------------


class _Build(Record):
    """A local session's new mirror and the state to resume from next time. Its text is the stored one up
    to `cut`, then `conversation_text`; its message spans are `metadata["messages"]`, after the stored ones
    that start before `frozen` (those of a continued conversation that were not read again)."""

    __slots__ = ("count", "cut", "frozen", "mirror", "state")

    mirror: Mirror
    state: MirrorState
    count: int  # messages in all
    cut: int
    frozen: int  # stored spans starting before this are kept

    def __init__(self, mirror: Mirror, state: MirrorState, count: int, cut: int = 0, frozen: int = 0) -> None:
        self.mirror = mirror
        self.state = state
        self.count = count
        self.cut = cut
        self.frozen = frozen


class _Stored(Record):
    """A local session's stored mirror, as much of it as continuing it needs."""

    __slots__ = ("content_hash", "id", "segments")

    id: int | None
    content_hash: str
    segments: list[Segment]

    def __init__(self, id: int | None = None, content_hash: str = "", segments: list[Segment] | None = None) -> None:
        self.id = id
        self.content_hash = content_hash
        self.segments = [] if segments is None else segments


def _stored(conn: sqlite3.Connection, session: sqlite3.Row) -> _Stored:
    row = store.record_of(conn, session["session_id"], session["computer"])
    if row is None:
        return _Stored()
    return _Stored(row["id"], row["content_hash"], segments.stored_segments(conn, row["id"]))


def _shell(conn: sqlite3.Connection, session: sqlite3.Row, text: str, spans: list[list[Any]]) -> Mirror:
    """The session's mirror with this text and these message spans (its content hash left to compute)."""
    prs = store.pr_numbers(conn, session["session_id"])
    return Mirror(
        session_id=session["session_id"],
        computer=session["computer"],
        agent=session["agent"],
        project=session["project_dir"],
        title=session["title"],
        timestamp_start=session["started_at"],
        timestamp_end=session["ended_at"],
        conversation_text=text,
        metadata={"format": MIRROR_FORMAT, "messages": spans, "prs": prs},
    )


def _place(index: int, count: int, halves: tuple[int, int] | None) -> int | None:
    """Where message `index` of a conversation of `count` lies among its mirror's (None: cut out)."""
    if index < 0 or halves is None:
        return index if index >= 0 else None
    head, tail = halves
    if index < head:
        return index
    return head + 1 + index - (count - tail) if index >= count - tail else None


def _whole(conn: sqlite3.Connection, session: sqlite3.Row, conversation: Conversation, state: MirrorState) -> _Build:
    """The mirror of a conversation whose messages are all at hand (or cut out already, as a Gap)."""
    halves = _halves(conversation.messages, conversation.chars)
    text, spans = _render(_fit(conversation.messages, conversation.count, halves))
    if halves is not None:
        state.head, state.tail_start = halves[0], conversation.count - halves[1]
    place = _place(state.messages - 1, conversation.count, halves)
    state.last_start = spans[place][1] if place is not None else None
    return _Build(_shell(conn, session, text, spans), state, conversation.count)


def _rebuild(conn: sqlite3.Connection, session: sqlite3.Row) -> _Build:
    conversation = Conversation()
    state = conversation.read(store.conversation_entries(conn, session["session_id"], 0), session["resume_line_index"])
    return _whole(conn, session, conversation, state)


def build_mirror(conn: sqlite3.Connection, session_id: str) -> Mirror | None:
    """The mirror of a local session, from all its stored entries; None when it holds no conversation."""
    session = store.mirrored_session(conn, session_id)
    if session is None:
        return None
    build = _rebuild(conn, session)
    if not build.count:
        return None
    build.mirror.content_hash = content_hash(build.mirror)
    return build.mirror


def _seen_before(conn: sqlite3.Connection, session_id: str, line: int, rows: list[sqlite3.Row]) -> set[tuple[str, str]]:
    """The (response id, text) pairs of the assistant lines before `line` of the responses in `rows`."""
    ids = sorted({r["message_id"] for r in rows if r["kind"] == "assistant" and r["message_id"]})
    seen = set()
    for message_id, raw in store.assistant_texts_before(conn, session_id, ids, line):
        if text := message_text(raw):
            seen.add((message_id, text))
    return seen


def _resume(state: MirrorState, stored: _Stored) -> Conversation | None:
    """The conversation as it stood at the state's line, with the stored mirror's help; None when the
    stored mirror is not the one the state was saved with, or no longer holds the state's last message."""
    if (state.recipe, state.content_hash) != (RECIPE, stored.content_hash) or any(
        s.digest is None for s in stored.segments
    ):
        return None
    if state.messages and state.last_start is None:
        return None
    last = (state.last_role, state.last_chars, state.last_timestamp)
    return Conversation(state.messages, state.chars, last if state.messages else None)


def _stored_messages(conn: sqlite3.Connection, stored: _Stored, state: MirrorState) -> list[Any]:
    """The stored mirror's messages up to the state's last one (cut back to its length then). Of a cut
    mirror: its first half, a Gap, and the messages of its last half up to there."""
    spans: list[Any] = segments.stored_spans(conn, stored.segments)
    text = segments.stored_text(conn, stored.segments)
    if state.head is None:
        spans = spans[: state.messages]
    else:
        head, tail_start = state.head, state.tail_start or 0
        after = sum(end - start for _, start, end, _ in spans[head + 1 :])
        spans = [
            *spans[:head],
            Gap(tail_start - head, after),
            *spans[head + 1 : head + 1 + state.messages - tail_start],
        ]
    messages: list[Any] = [s if isinstance(s, Gap) else [s[0], text[s[1] : s[2]], s[3]] for s in spans]
    if messages:
        messages[-1][1] = messages[-1][1][: state.last_chars]
    return messages


def _spliced(
    conn: sqlite3.Connection, session: sqlite3.Row, state: MirrorState, conversation: Conversation, mark: MirrorState
) -> _Build:
    """The stored mirror up to the resume line, then what the entries after it say."""
    spans: list[list[Any]] = []
    cut = 0
    if state.messages:
        start = state.last_start or 0
        cut = start + state.last_chars
        spans.append([state.last_role, start, cut + len(conversation.extension), state.last_timestamp])
    text, more = _render(conversation.messages, cut + len(conversation.extension), after=bool(state.messages))
    last = mark.messages - 1 - state.messages  # the mark's last message among the new ones (-1: the stored one)
    mark.last_start = more[last][1] if last >= 0 else (state.last_start if mark.messages else None)
    mirror = _shell(conn, session, conversation.extension + text, [*spans, *more])
    return _Build(mirror, mark, conversation.count, cut, frozen=spans[0][1] if spans else 0)


def _continue(conn: sqlite3.Connection, session: sqlite3.Row, stored: _Stored, state: MirrorState) -> _Build:
    """The new mirror from the stored one and the entries from the state's line on (NeedsRebuild when it
    cannot be told without reading them all)."""
    conversation = _resume(state, stored)
    if conversation is None:
        raise NeedsRebuild
    rows = store.conversation_entries(conn, session["session_id"], state.line_index)
    conversation.seen = _seen_before(conn, session[0], state.line_index, rows)
    if state.head is not None:
        if state.messages <= (state.tail_start or 0):
            raise NeedsRebuild  # the stored last half holds none of the messages before the resume line
        conversation.messages = _stored_messages(conn, stored, state)
    mark = conversation.read(rows, session["resume_line_index"])
    if state.head is None and conversation.chars <= MAX_MIRROR_CHARS:
        return _spliced(conn, session, state, conversation, mark)
    if state.head is None:  # the mirror reaches its cap now: every message is needed once
        before = _stored_messages(conn, stored, state)
        if before:
            before[-1][1] += conversation.extension
        conversation.messages = [*before, *conversation.messages]
    build = _whole(conn, session, conversation, mark)
    head = build.state.head or 0
    build.cut = build.mirror.metadata["messages"][head - 1][2] if head else 0  # the first half stays as it was
    build.mirror.conversation_text = build.mirror.conversation_text[build.cut :]
    return build


# --- storing ----------------------------------------------------------------------------------------------


def _fts_title(title: str | None) -> str:
    return (fts_text(title) or title) if title else ""


def _put(
    conn: sqlite3.Connection,
    mirror: Mirror,
    stored: list[Segment],
    kept: int,
    fresh: list[Segment],
    updated_at: str | None,
) -> None:
    """Write a mirror's record and the segments that changed (`kept` stored ones stay, then `fresh`)."""
    mirror_id = store.put_record(
        conn,
        {
            "session_id": mirror.session_id,
            "computer": mirror.computer,
            "agent": mirror.agent,
            "project": mirror.project,
            "title": mirror.title,
            "timestamp_start": mirror.timestamp_start,
            "timestamp_end": mirror.timestamp_end,
            "metadata": orjson.dumps(_record_metadata(mirror.metadata)).decode(),
            "content_hash": mirror.content_hash,
            "updated_at": updated_at or _now(),
        },
    )
    segments.write_segments(conn, mirror_id, stored, kept, fresh, _fts_title(mirror.title))


def store_mirror(conn: sqlite3.Connection, mirror: Mirror, updated_at: str | None = None) -> bool:
    """Insert or replace the mirror of (session, computer); False when the stored one says the same."""
    row = store.record_of(conn, mirror.session_id, mirror.computer)
    if row is not None and row["content_hash"] == mirror.content_hash:
        return False
    stored = segments.stored_segments(conn, row["id"] if row else None)
    spans = mirror.metadata.get("messages", [])
    kept, fresh = segments.splice(conn, stored, 0, mirror.conversation_text, spans)
    _put(conn, mirror, stored, kept, fresh, updated_at)
    return True


def _write(conn: sqlite3.Connection, stored: _Stored, build: _Build) -> bool:
    """Store a local session's new mirror (or remove it when it has no conversation); True if it changed."""
    if not build.count:
        if stored.id is not None:
            store.delete_record(conn, stored.id)
        return stored.id is not None
    mirror = build.mirror
    spans = mirror.metadata["messages"]
    kept, fresh = segments.splice(conn, stored.segments, build.cut, mirror.conversation_text, spans, build.frozen)
    mirror.content_hash = content_hash(mirror, [str(s.digest) for s in [*stored.segments[:kept], *fresh]])
    build.state.content_hash = mirror.content_hash
    if mirror.content_hash == stored.content_hash:
        return False
    _put(conn, mirror, stored.segments, kept, fresh, None)
    return True


def refresh_mirror(conn: sqlite3.Connection, session_id: str, since_line: int = 0) -> bool:
    """Bring a local session's stored mirror up to date with its entries; True when it changed (written or
    removed). With `since_line`, the entries before that line are those of the last refresh (an append):
    the stored mirror is continued from there when the state saved with it allows."""
    session = store.mirrored_session(conn, session_id)
    if session is None:
        return False
    stored = _stored(conn, session)
    state = load_state(conn, session_id) if 0 < since_line <= session["resume_line_index"] else None
    try:
        if state is None or state.line_index != since_line:
            raise NeedsRebuild
        build = _continue(conn, session, stored, state)
    except NeedsRebuild:
        build = _rebuild(conn, session)
    changed = _write(conn, stored, build)
    save_state(conn, session_id, build.state)
    return changed


# --- leaving this computer ----------------------------------------------------------------------------


def redact_mirror(mirror: Mirror) -> tuple[Mirror, int]:
    """A copy of `mirror` fit to leave this computer: secrets replaced by markers in each whole message
    (so the spans stay right) and in the title, and how many were replaced."""
    spans = mirror.metadata.get("messages")
    total = 0
    if spans:
        clean = []
        for message in mirror.messages():
            text, count = redact(message["text"])
            total += count
            clean.append([message["role"], text, message["timestamp"]])
        conversation, spans = _render(clean)
    else:
        conversation, total = redact(mirror.conversation_text)
    title = mirror.title
    if title:
        title, count = redact(title)
        total += count
    metadata = {**mirror.metadata, "redacted": total}
    if spans:
        metadata["messages"] = spans
    clean_mirror = mirror.replace(title=title, conversation_text=conversation, metadata=metadata)
    clean_mirror.content_hash = content_hash(clean_mirror)
    return clean_mirror, total


# --- reading ------------------------------------------------------------------------------------------


def get_mirror(conn: sqlite3.Connection, session_id: str, computer: str | None = None) -> Mirror | None:
    """A stored mirror of a session: this computer's when it has one, else the most recently updated."""
    row = store.preferred_mirror(conn, session_id, computer)
    return mirror_from_row(row) if row else None
