"""Property tests: every agent's parser survives any JSON value in any field of a real record.

Each example takes a stretch of a real transcript, damages one record (see tests/mutations.py), and reads
both the intact and the damaged file: no exception may escape, and every record that was not touched
must come out as it did from the intact file. A second test per agent runs the damaged file through the
whole ingest into a real store: the file must not fail, and every entry the parser gave must be stored.
"""

from __future__ import annotations

import json
import re
import sqlite3
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import assume, given, note
from hypothesis import strategies as st

from corpus import (
    CODEX_OLD,
    CODEX_SHORT,
    GEMINI_JSONL,
    GEMINI_LEGACY,
    LIVE_AIDER,
    LIVE_CLINE,
    LIVE_COPILOT,
    LIVE_KIMI_CODE,
    LIVE_KIMI_LEGACY,
    LIVE_OPENCODE_DB,
    LIVE_PI,
    LIVE_QWEN,
    MISC,
    SLAY,
    SPECSTORY,
)
from memex.config import load_config
from memex.ingest.pipeline import ingest_transcript
from memex.sources import (
    aider,
    claude,
    cline,
    codex,
    copilot,
    cursor,
    gemini,
    kimi,
    opencode,
    pi,
    qwen,
    sqlite_read,
    stream_entries,
)
from memex.sources.jsonl import parse_json_line
from memex.sources.model import BadLine, Entry, Transcript
from memex.store.db import connect
from mutations import damaged_bytes, dumps, mutated_record

# A small cap, so that a mutation can make a line too long without writing megabytes.
MAX_LINE_BYTES = 65_536
# Records of this many lines around the damaged one are read (the whole fixture would be slower, not wiser).
WINDOW = 12
# Gemini keys that decide which messages a chat holds (an id, a rewind, a checkpoint): changing them
# legitimately removes or replaces other messages.
GEMINI_CONTROL = frozenset({"id", "$rewindTo", "$set", "messages"})


def _lines(*paths: Path) -> list[list[bytes]]:
    return [[line for line in path.read_bytes().splitlines() if line.strip()] for path in paths]


CLAUDE_SOURCES = _lines(SLAY, MISC / "representative_messages.jsonl", MISC / "tiny-conversation.jsonl")
CODEX_SOURCES = _lines(CODEX_SHORT, CODEX_OLD)
GEMINI_SOURCES = _lines(GEMINI_JSONL)
COPILOT_SOURCES = _lines(*sorted(LIVE_COPILOT.glob("*/events.jsonl")))
QWEN_SOURCES = _lines(*sorted(LIVE_QWEN.rglob("*.jsonl")))
# Main chats only for the ingest test: a subagent's stream has the same ids in every example.
QWEN_CHATS = _lines(*sorted(LIVE_QWEN.glob("*/chats/*.jsonl")))
PI_SOURCES = _lines(*sorted(LIVE_PI.rglob("*.jsonl")))
KIMI_SOURCES = _lines(*sorted(LIVE_KIMI_CODE.rglob("wire.jsonl")), *sorted(LIVE_KIMI_LEGACY.rglob("wire.jsonl")))
_TEMPORARY = tempfile.TemporaryDirectory(prefix="memex-mutations-")  # removed when the tests end
_SCRATCH = Path(_TEMPORARY.name)


class Stretch:
    """Lines of a real file, and the same lines with some damaged (a short repr: failing examples print it)."""

    def __init__(self, intact: list[bytes], damaged: list[bytes], indexes: set[int]) -> None:
        self.intact, self.damaged, self.indexes = intact, damaged, indexes

    def __repr__(self) -> str:
        shown = {i: self.damaged[i][:200] for i in sorted(self.indexes)}
        return f"Stretch({len(self.intact)} lines, damaged: {shown!r})"


@st.composite
def damaged_stretch(
    draw: st.DrawFn, sources: list[list[bytes]], keep_first: bool, protected: frozenset[str] = frozenset()
) -> Stretch:
    """A window of a real file (with its first line when `keep_first`: a session header), one to three of
    its lines damaged."""
    lines = draw(st.sampled_from(sources))
    start = draw(st.integers(min_value=0, max_value=max(0, len(lines) - WINDOW)))
    window = lines[start : start + WINDOW]
    if keep_first and start > 0:
        window = [lines[0], *window[1:]]
    records = [json.loads(line) for line in window]
    # In a Gemini chat, a rewind to a message that is not there clears everything: its target is kept.
    targets = {r["$rewindTo"] for r in records if "$rewindTo" in r}
    candidates = [
        i
        for i, record in enumerate(records)
        if not (protected and (set(record) & {"$set", "$rewindTo"} or record.get("id") in targets))
    ]
    indexes = draw(st.sets(st.sampled_from(candidates), min_size=1, max_size=min(3, len(candidates))))
    damaged = list(window)
    for index in sorted(indexes):
        record, mutations = draw(mutated_record(records[index], protected))
        damaged[index], damage = draw(damaged_bytes(dumps(record)))
        note(f"line {index}: {mutations}, bytes: {damage}: {damaged[index][:300]!r}")
    return Stretch(window, damaged, indexes)


def _write(lines: list[bytes], name: str, folder: str = "") -> Path:
    path = _SCRATCH / uuid.uuid4().hex / folder / name
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


def _read(source: Any, path: Path) -> list[Entry | BadLine | None]:
    return [entry for _, entry in source.read_entries(path, 0, 0, MAX_LINE_BYTES)]


def _blocks(entry: Entry) -> list[tuple]:
    return [(b.kind, b.text, b.tool.name if b.tool else None, b.tool_use_id) for b in entry.blocks]


def _by_line(entries: list[Entry | BadLine | None], damaged: set[int]) -> dict[int, Entry | BadLine]:
    """The entries of the lines that were not damaged, by line."""
    return {e.line_index: e for e in entries if e is not None and e.line_index not in damaged}


# --- Claude Code: every line is read on its own -------------------------------------------------------


@given(damaged_stretch(CLAUDE_SOURCES, keep_first=False))
def test_claude_survives_any_value_in_any_field(stretch: Stretch) -> None:
    before = _by_line(_read(claude, _write(stretch.intact, f"{uuid.uuid4()}.jsonl")), stretch.indexes)
    after = _by_line(_read(claude, _write(stretch.damaged, f"{uuid.uuid4()}.jsonl")), stretch.indexes)
    assert after == before


# --- Codex: a user message and its event are matched across lines --------------------------------------


def _codex_summary(entry: Entry | BadLine, header_damaged: bool) -> tuple:
    if isinstance(entry, BadLine):
        return ("bad", entry.reason)
    # A user message's kind depends on the event that follows it; the old layout's times on its header.
    kind = None if entry.entry_type == "response_item/message" else entry.kind
    timestamp = None if header_damaged else entry.timestamp
    return (entry.entry_type, kind, entry.role, timestamp, entry.session_id, _blocks(entry))


@given(damaged_stretch(CODEX_SOURCES, keep_first=True))
def test_codex_survives_any_value_in_any_field(stretch: Stretch) -> None:
    name = "rollout-2025-11-13T18-21-11-019a802a-aab1-7c31-9831-d2510c7a74a2.jsonl"
    before = _by_line(_read(codex, _write(stretch.intact, name)), stretch.indexes)
    after = _by_line(_read(codex, _write(stretch.damaged, name)), stretch.indexes)
    header = 0 in stretch.indexes
    assert {i: _codex_summary(e, header) for i, e in after.items()} == {
        i: _codex_summary(e, header) for i, e in before.items()
    }


# --- Gemini: a chat is replayed; messages are matched by id ---------------------------------------------


def _gemini_messages(entries: list[Entry | BadLine | None], skip: set[str]) -> dict[str, tuple]:
    """The chat's messages by id (the session header and closing metadata left out; `cwd` too: it is the
    project of the whole chat, read from its header and first message)."""
    return {
        e.uuid: (e.entry_type, e.kind, e.role, e.timestamp, _blocks(e))
        for e in entries
        if isinstance(e, Entry) and e.uuid and e.uuid not in skip
    }


def _message_id(line: bytes) -> str | None:
    record = parse_json_line(line)[0]
    return record.get("id") if isinstance(record, dict) and isinstance(record.get("id"), str) else None


@given(damaged_stretch(GEMINI_SOURCES, keep_first=True, protected=GEMINI_CONTROL))
def test_gemini_jsonl_survives_any_value_in_any_field(stretch: Stretch) -> None:
    before = _read(gemini, _write(stretch.intact, "session-2026-03-02T09-15-ef567890.jsonl", "chats"))
    after = _read(gemini, _write(stretch.damaged, "session-2026-03-02T09-15-ef567890.jsonl", "chats"))
    # A damaged line's message is left out (its bytes may even change its id).
    touched = {_message_id(lines[i]) for lines in (stretch.intact, stretch.damaged) for i in stretch.indexes}
    assert _gemini_messages(after, touched) == _gemini_messages(before, touched)


LEGACY = json.loads(GEMINI_LEGACY.read_bytes())


@st.composite
def damaged_part(draw: st.DrawFn) -> tuple[str | int, Any]:
    """(which part of the legacy chat document: "header" or a message's index, that part damaged): one
    field changed, never a message id (that is which message it is)."""
    target = draw(st.sampled_from(["header", *range(len(LEGACY["messages"]))]))
    if target == "header":
        header = {k: v for k, v in LEGACY.items() if k != "messages"}
        changed, mutation = draw(mutated_record(header, frozenset({"messages"})))
    else:
        message = LEGACY["messages"][target]
        changed, mutation = draw(mutated_record(message, frozenset({"id"})))
        if isinstance(changed, dict):
            changed["id"] = message["id"]
    note(f"{target}: {mutation}")
    return target, changed


@given(damaged_part(), st.booleans())
def test_gemini_document_survives_any_value_in_any_field(part, with_bom: bool) -> None:
    """A chat kept as one JSON document (its whole is one "line": read under the default cap)."""
    target, changed = part
    damaged = json.loads(json.dumps(LEGACY))
    if target == "header":
        damaged = {
            **(changed if isinstance(changed, dict) else {"sessionId": changed}),
            "messages": damaged["messages"],
        }
        skip = set()
    else:
        damaged["messages"][target] = changed
        skip = {LEGACY["messages"][target]["id"]}
    name = "session-2025-09-01T10-00-abcd1234.json"
    before = [e for _, e in gemini.read_entries(_write([dumps(LEGACY)], name, "chats"))]
    path = _write([(b"\xef\xbb\xbf" if with_bom else b"") + dumps(damaged)], name, "chats")
    after = [e for _, e in gemini.read_entries(path)]
    assert _gemini_messages(after, skip) == _gemini_messages(before, skip)


# --- the agents of issue 15: each record is read on its own ----------------------------------------------


def _same_records(source: Any, stretch: Stretch, name: str, folder: str = "") -> None:
    """The records that were not damaged come out as they did from the intact file."""
    before = _by_line(_read(source, _write(stretch.intact, name, folder)), stretch.indexes)
    after = _by_line(_read(source, _write(stretch.damaged, name, folder)), stretch.indexes)
    assert after == before


def _copilot_summary(entry: Entry | BadLine) -> tuple:
    """A record as read on its own: a task's result reads as a report when its call was read before it."""
    if isinstance(entry, BadLine):
        return ("bad", entry.reason)
    blocks = [b for b in _blocks(entry) if not (b[0] == "text" and b[1].startswith("Subagent "))]
    kind = None if entry.entry_type == "tool.execution_complete" else entry.kind
    return (entry.entry_type, kind, entry.timestamp, entry.agent_id, blocks)


def _read_alone(entry: Entry | BadLine) -> Entry | BadLine:
    """A record as read on its own, without a subagent's report: Cline's `spawn_agent` result reads as one
    when its call was read before it (a damaged call leaves it tool output), and Kimi's report is named by
    the description of the spawn record before it."""
    if isinstance(entry, BadLine):
        return entry
    blocks = [b for b in entry.blocks if not (b.kind == "text" and b.text.startswith("Subagent "))]
    if len(blocks) == len(entry.blocks):
        return entry
    return entry.replace(kind="tool_result", role="tool", blocks=blocks)


@given(damaged_stretch(COPILOT_SOURCES, keep_first=True))
def test_copilot_survives_any_value_in_any_field(stretch: Stretch) -> None:
    before = _by_line(_read(copilot, _write(stretch.intact, "events.jsonl")), stretch.indexes)
    after = _by_line(_read(copilot, _write(stretch.damaged, "events.jsonl")), stretch.indexes)
    assert {i: _copilot_summary(e) for i, e in after.items()} == {i: _copilot_summary(e) for i, e in before.items()}


@given(damaged_stretch(QWEN_SOURCES, keep_first=True))
def test_qwen_survives_any_value_in_any_field(stretch: Stretch) -> None:
    _same_records(qwen, stretch, "s.jsonl", "chats")


@given(damaged_stretch(PI_SOURCES, keep_first=True))
def test_pi_survives_any_value_in_any_field(stretch: Stretch) -> None:
    _same_records(pi, stretch, "s.jsonl")


@given(damaged_stretch(KIMI_SOURCES, keep_first=True))
def test_kimi_survives_any_value_in_any_field(stretch: Stretch) -> None:
    """A subagent's report is named by the description its spawn record gave, when that was read first."""
    before = _by_line(_read(kimi, _write(stretch.intact, "wire.jsonl")), stretch.indexes)
    after = _by_line(_read(kimi, _write(stretch.damaged, "wire.jsonl")), stretch.indexes)
    assert {i: _read_alone(e) for i, e in after.items()} == {i: _read_alone(e) for i, e in before.items()}


# --- whole documents: one damaged message leaves the others as they were -------------------------------

CLINE_SESSIONS = sorted(LIVE_CLINE.glob("*/*.messages.json"))


@st.composite
def damaged_document(draw: st.DrawFn, paths: list[Path]) -> tuple[Path, Any, int]:
    """(a real session document, the same with one message damaged, that message's index)."""
    path = draw(st.sampled_from(paths))
    document = json.loads(path.read_bytes())
    index = draw(st.integers(min_value=0, max_value=len(document["messages"]) - 1))
    changed, mutation = draw(mutated_record(document["messages"][index]))
    # A nesting marker shrunk to no depth writes nothing at all (`[, …]`): another message would take its place.
    marker = isinstance(changed, str) and "memex-deep:" in changed
    assume(not marker or re.fullmatch(r"\x00memex-deep:[1-9][0-9]*\x00", changed) is not None)
    note(f"{path.name} message {index}: {mutation}")
    damaged = json.loads(json.dumps(document))
    damaged["messages"][index] = changed
    # A document grown past the cap is one bad "line" by design (tests/ingest/test_poison.py): not this property.
    assume(len(dumps(damaged)) <= MAX_LINE_BYTES)
    return path, damaged, index


@given(damaged_document(CLINE_SESSIONS))
def test_cline_survives_any_value_in_any_field(case) -> None:
    path, damaged, index = case
    name = path.name
    before = _by_line(_read(cline, _write([path.read_bytes()], name)), {index + 1})
    after = _by_line(_read(cline, _write([dumps(damaged)], name)), {index + 1})
    assert {i: _read_alone(e) for i, e in after.items()} == {i: _read_alone(e) for i, e in before.items()}


@given(damaged_document(CLINE_SESSIONS))
def test_cline_damaged_file_is_ingested(case) -> None:
    _, damaged, _ = case
    _ingest_case(cline.classify, cline, _write([dumps(damaged)], f"{uuid.uuid4()}.messages.json"))


# --- the whole ingest: a damaged file is stored, not failed ----------------------------------------------

_CONFIG = load_config(
    {"MEMEX_HOME": str(_SCRATCH / "home"), "MEMEX_COMPUTER": "testbox", "MEMEX_MAX_LINE_BYTES": str(MAX_LINE_BYTES)}
)
_STORE: list[Any] = []


def _ingest(transcript: Transcript, source: Any) -> None:
    """Ingest `transcript` into the shared scratch store: it must not fail, and each entry its parser
    gives must be stored."""
    if not _STORE:
        _STORE.append(connect(_CONFIG.db_path))
    conn = _STORE[0]
    report = ingest_transcript(conn, _CONFIG, transcript)
    assert report.status == "new", report.error
    entries = [e for _, e in stream_entries(transcript, 0, 0, MAX_LINE_BYTES) if isinstance(e, Entry)]
    stored = conn.execute("SELECT count(*) FROM entries WHERE session_id = ?", (report.session_id,)).fetchone()[0]
    assert stored == len(entries)


def _ingest_case(classify: Callable[[Path], Transcript | None], source: Any, path: Path) -> None:
    transcript = classify(path)
    if transcript is not None:  # a damaged first line can make a file no transcript at all
        _ingest(transcript, source)


@given(damaged_stretch(CLAUDE_SOURCES, keep_first=False))
def test_claude_damaged_file_is_ingested(stretch: Stretch) -> None:
    _ingest_case(claude.classify, claude, _write(stretch.damaged, f"{uuid.uuid4()}.jsonl"))


@given(damaged_stretch(CODEX_SOURCES, keep_first=True))
def test_codex_damaged_file_is_ingested(stretch: Stretch) -> None:
    _ingest_case(codex.classify, codex, _write(stretch.damaged, f"rollout-2025-11-13T18-21-11-{uuid.uuid4()}.jsonl"))


@given(damaged_stretch(GEMINI_SOURCES, keep_first=True, protected=GEMINI_CONTROL))
def test_gemini_damaged_file_is_ingested(stretch: Stretch) -> None:
    _ingest_case(gemini.classify, gemini, _write(stretch.damaged, f"session-{uuid.uuid4()}.jsonl", "chats"))


@given(damaged_stretch(COPILOT_SOURCES, keep_first=True))
def test_copilot_damaged_file_is_ingested(stretch: Stretch) -> None:
    _ingest_case(copilot.classify, copilot, _write(stretch.damaged, "events.jsonl", str(uuid.uuid4())))


@given(damaged_stretch(QWEN_CHATS, keep_first=True))
def test_qwen_damaged_file_is_ingested(stretch: Stretch) -> None:
    _ingest_case(qwen.classify, qwen, _write(stretch.damaged, f"{uuid.uuid4()}.jsonl", "chats"))


@given(damaged_stretch(PI_SOURCES, keep_first=True))
def test_pi_damaged_file_is_ingested(stretch: Stretch) -> None:
    _ingest_case(pi.classify, pi, _write(stretch.damaged, f"x_{uuid.uuid4()}.jsonl", "--p--"))


@given(damaged_stretch(KIMI_SOURCES, keep_first=True))
def test_kimi_damaged_file_is_ingested(stretch: Stretch) -> None:
    _ingest_case(kimi.classify, kimi, _write(stretch.damaged, "wire.jsonl", str(uuid.uuid4())))


# --- Markdown (Aider): any bytes anywhere -------------------------------------------------------------

AIDER_LINES = (LIVE_AIDER / ".aider.chat.history.md").read_bytes().splitlines(keepends=True)


@given(st.lists(st.binary(max_size=300), min_size=1, max_size=4), st.integers(0, len(AIDER_LINES)))
def test_aider_survives_any_bytes_anywhere(inserted: list[bytes], at: int) -> None:
    """Lines of any bytes (invalid UTF-8, fences, `>`, `####`) put into a real history: nothing raises, and
    the history is ingested."""
    damaged = [*AIDER_LINES[:at], *(line.replace(b"\n", b" ") + b"\n" for line in inserted), *AIDER_LINES[at:]]
    path = _SCRATCH / uuid.uuid4().hex / ".aider.chat.history.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(damaged))
    entries = _read(aider, path)
    assert sum(isinstance(e, Entry) and e.kind == "prompt" for e in entries) >= 1
    _ingest_case(aider.classify, aider, path)


SPECSTORY_LINES = (
    (SPECSTORY / "history" / "2025-04-28_16-22-backlog-task-inquiry.md").read_bytes().splitlines(keepends=True)
)


@given(st.lists(st.binary(max_size=300), min_size=1, max_size=4), st.integers(0, len(SPECSTORY_LINES)))
def test_specstory_survives_any_bytes_anywhere(inserted: list[bytes], at: int) -> None:
    """Lines of any bytes put into a real SpecStory export: nothing raises, and the export is ingested."""
    head, tail = SPECSTORY_LINES[: max(at, 1)], SPECSTORY_LINES[max(at, 1) :]  # its first line marks it
    damaged = [*head, *(line.replace(b"\n", b" ") + b"\n" for line in inserted), *tail]
    path = _SCRATCH / uuid.uuid4().hex / "history" / "chat.md"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(damaged))
    _read(cursor, path)
    _ingest_case(cursor.classify, cursor, path)


# --- SQLite (OpenCode): any value in any field of a message or part -----------------------------------

_OPENCODE_ROWS = (
    sqlite3.connect(f"file:{LIVE_OPENCODE_DB}?mode=ro", uri=True)
    .execute("SELECT 'message', id, data FROM message UNION ALL SELECT 'part', id, data FROM part")
    .fetchall()
)


@st.composite
def damaged_row(draw: st.DrawFn) -> tuple[str, str, Any]:
    table, row_id, data = draw(st.sampled_from(_OPENCODE_ROWS))
    changed, mutation = draw(mutated_record(json.loads(data)))
    note(f"{table} {row_id}: {mutation}")
    return table, row_id, changed


@given(damaged_row())
def test_opencode_survives_any_value_in_any_field(case) -> None:
    table, row_id, changed = case
    folder = _SCRATCH / uuid.uuid4().hex
    folder.mkdir()
    database = folder / "opencode.db"
    database.write_bytes(LIVE_OPENCODE_DB.read_bytes())
    (session,) = sqlite3.connect(database).execute(f"SELECT session_id FROM {table} WHERE id = ?", (row_id,)).fetchone()
    path = sqlite_read.synthetic(database, session)
    before = [e for _, e in opencode.read_entries(path, 0, 0, MAX_LINE_BYTES)]
    conn = sqlite3.connect(database)
    try:
        text = dumps(changed).decode("utf-8", "surrogatepass")
    except ValueError:
        text = ""
    conn.execute(f"UPDATE {table} SET data = ? WHERE id = ?", (text.encode("utf-8", "replace"), row_id))
    conn.commit()
    conn.close()
    message = row_id if table == "message" else _message_of(database, row_id)
    line = next(e.line_index for e in before if isinstance(e, Entry) and e.uuid == message)
    after = [e for _, e in opencode.read_entries(path, 0, 0, MAX_LINE_BYTES)]
    assert {e.line_index: e for e in after if e.line_index != line} == {
        e.line_index: e for e in before if e.line_index != line
    }
    # The whole ingest, into a store of its own (the session's id and fingerprint repeat across examples).
    store = connect(folder / "memex.db")
    transcript = next(t for t in opencode.discover([database]) if t.path == path)
    report = ingest_transcript(store, _CONFIG, transcript)
    assert report.status == "new", report.error
    stored = store.execute("SELECT count(*) FROM entries").fetchone()[0]
    assert stored == sum(isinstance(e, Entry) for e in after)
    store.close()


def _message_of(database: Path, part: str) -> str:
    return sqlite3.connect(database).execute("SELECT message_id FROM part WHERE id = ?", (part,)).fetchone()[0]
