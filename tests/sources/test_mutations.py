"""Property tests: every agent's parser survives any JSON value in any field of a real record.

Each example takes a stretch of a real transcript, damages one record (see tests/mutations.py), and reads
both the intact and the damaged file: no exception may escape, and every record that was not touched
must come out as it did from the intact file. A second test per agent runs the damaged file through the
whole ingest into a real store: the file must not fail, and every entry the parser gave must be stored.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import given, note
from hypothesis import strategies as st

from corpus import CODEX_OLD, CODEX_SHORT, GEMINI_JSONL, GEMINI_LEGACY, MISC, SLAY
from memex.config import load_config
from memex.ingest.pipeline import ingest_transcript
from memex.sources import claude, codex, gemini
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
    entries = [e for e in _read(source, transcript.path) if isinstance(e, Entry)]
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
