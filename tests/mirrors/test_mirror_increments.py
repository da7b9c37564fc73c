"""Incremental mirrors: a mirror continued ingest after ingest is the mirror a rebuild from scratch gives.

Real transcripts are replayed append by append (a line, or a few, at a time, as an agent writes them), and
after every ingest the stored mirror — text, message spans, content hash, segments and their full-text
index — must be exactly what rebuilding it from every entry gives; at the end, a store that ingested the
whole file once must hold the same. Small segments and a small cap make every path run on small files.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from corpus import CODEX_ABORTED, CODEX_SHORT, HILLVIEW, MISC, SLAY
from memex.config import Config, load_config
from memex.ingest import pipeline
from memex.ingest.pipeline import ingest_transcript
from memex.mirrors import build as mirrors
from memex.mirrors import segments as mirror_store
from memex.mirrors.build import build_mirror, get_mirror
from memex.mirrors.search import search_mirrors
from memex.mirrors.segments import cut_segments
from memex.sources import claude, codex
from memex.store.db import connect
from memex.store.migrations import MIGRATIONS
from memex.store.queries import Filters
from memex.textutil import fts_text
from transcripts import ClaudeSession, simple_turn, text

CLAUDE_FILES = [
    MISC / "tiny-conversation.jsonl",
    MISC / "short-conversation.jsonl",
    MISC / "representative_messages.jsonl",
    MISC / "edge_cases.jsonl",
    HILLVIEW / "5eac5945-4cf4-4f5c-a46a-1f8dacb407aa.jsonl",
    HILLVIEW / "155715ec-f4e9-47ea-859c-2e4cfcceab6f.jsonl",
    SLAY,
]


@pytest.fixture(autouse=True)
def small_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mirror_store, "MIRROR_SEGMENT_CHARS", 400)


@pytest.fixture
def rebuilds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The `since_line` of every ingest that rebuilt its mirror from every entry although it could resume."""
    calls: list[int] = []
    since = [0]
    refresh, rebuild = mirrors.refresh_mirror, mirrors._rebuild

    def spy_refresh(conn: sqlite3.Connection, session_id: str, since_line: int = 0) -> bool:
        since[0] = since_line
        try:
            return refresh(conn, session_id, since_line)
        finally:
            since[0] = 0

    def spy_rebuild(conn: sqlite3.Connection, session: sqlite3.Row) -> mirrors._Build:
        if since[0] > 0:
            calls.append(since[0])
        return rebuild(conn, session)

    monkeypatch.setattr(pipeline, "refresh_mirror", spy_refresh)
    monkeypatch.setattr(mirrors, "_rebuild", spy_rebuild)
    return calls


def assert_as_rebuilt(conn: sqlite3.Connection, session_id: str) -> None:
    """The stored mirror is the one rebuilt from every entry: fields, text, spans, hash, segments, index."""
    rebuilt = build_mirror(conn, session_id)
    assert get_mirror(conn, session_id) == rebuilt
    if rebuilt is None:
        return
    title = (fts_text(rebuilt.title) or rebuilt.title) if rebuilt.title else ""
    expected = [
        (
            s.start,
            s.length,
            s.body,
            s.digest,
            title if s.start == 0 else "",
            orjson.dumps(s.spans).decode(),
            fts_text(s.body or ""),
        )
        for s in cut_segments(rebuilt.conversation_text, 0, rebuilt.metadata["messages"])
    ]
    stored = conn.execute(
        "SELECT s.start, s.length, s.body, s.digest, s.title, s.spans, s.fts_body FROM mirror_segments s "
        "JOIN mirror_records r ON r.id = s.mirror_id WHERE r.session_id = ? ORDER BY s.start",
        (session_id,),
    ).fetchall()
    assert [tuple(row) for row in stored] == expected
    conn.execute("INSERT INTO mirrors_fts(mirrors_fts) VALUES ('integrity-check')")


def stored_mirrors(conn: sqlite3.Connection) -> dict[str, list[tuple]]:
    """Everything the store holds about its one session's mirror, without ids and clocks, and the session
    facts the mirror copies (title, times, project)."""
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.mirror_terms USING fts5vocab(main, mirrors_fts, 'instance')")
    queries = {
        "facts": "SELECT title, started_at, ended_at, project_dir FROM sessions",
        "records": "SELECT computer, agent, project, title, timestamp_start, timestamp_end, metadata, content_hash "
        "FROM mirror_records",
        "segments": "SELECT start, length, body, digest, title, spans, fts_body FROM mirror_segments",
        "index": "SELECT s.start, v.term, v.col, v.offset FROM temp.mirror_terms v "
        "JOIN mirror_segments s ON s.id = v.doc",
        "state": "SELECT line_index, messages, chars, last_role, last_start, last_chars, last_timestamp, head, "
        "tail_start, recipe, content_hash FROM mirror_state",
    }
    return {name: sorted(tuple(row) for row in conn.execute(sql)) for name, sql in queries.items()}


def replay(
    conn: sqlite3.Connection,
    config: Config,
    lines: list[bytes],
    target: Path,
    classify: Callable[[Path], object],
    step: int = 1,
) -> str:
    """Write `lines` to `target` `step` at a time, ingesting and checking the mirror after each write;
    returns the session id."""
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(b"")
    session_id = ""
    for end in range(step, len(lines) + step, step):
        with target.open("ab") as handle:
            handle.write(b"".join(lines[end - step : end]))
        report = ingest_transcript(conn, config, classify(target))  # type: ignore[arg-type]
        session_id = report.session_id
        assert_as_rebuilt(conn, session_id)
    assert get_mirror(conn, session_id) is not None
    return session_id


def assert_same_as_one_ingest(conn: sqlite3.Connection, target: Path, tmp_path: Path, classify) -> None:
    """A store that ingests the final file once holds the same mirror and resume state. (Where the two
    ingests disagree on the session's facts — a start time of out-of-order lines — the parts of the mirror
    that copy them, and its hash, differ with them.)"""
    config = load_config({"MEMEX_HOME": str(tmp_path / "scratch"), "MEMEX_COMPUTER": "testbox"})
    fresh = connect(config.db_path)
    ingest_transcript(fresh, config, classify(target))
    mine, theirs = stored_mirrors(conn), stored_mirrors(fresh)
    fresh.close()
    if mine["facts"] != theirs["facts"]:
        for found in (mine, theirs):
            del found["facts"]
            found["records"] = [record[6:7] for record in found["records"]]  # the metadata
            found["state"] = [state[:10] for state in found["state"]]
    assert mine == theirs


@pytest.mark.parametrize("source", CLAUDE_FILES, ids=lambda p: p.name[:20])
def test_claude_transcripts_line_by_line(conn, config: Config, tmp_path: Path, source: Path, rebuilds) -> None:
    target = tmp_path / "projects" / "p" / source.name
    replay(conn, config, source.read_bytes().splitlines(keepends=True), target, claude.classify)
    assert_same_as_one_ingest(conn, target, tmp_path, claude.classify)
    assert rebuilds == []


def test_a_long_claude_session_line_by_line(conn, config: Config, tmp_path: Path, rebuilds) -> None:
    """460 lines of a real session (a 50,000-character conversation, 120 segments here), a few at a time."""
    source = MISC / "large-conversation.jsonl"
    target = tmp_path / "projects" / "p" / source.name
    replay(conn, config, source.read_bytes().splitlines(keepends=True), target, claude.classify, step=3)
    assert_same_as_one_ingest(conn, target, tmp_path, claude.classify)
    assert rebuilds == []


def test_a_codex_rollout_line_by_line(conn, config: Config, tmp_path: Path, rebuilds) -> None:
    target = tmp_path / "sessions" / CODEX_ABORTED.name
    replay(conn, config, CODEX_ABORTED.read_bytes().splitlines(keepends=True), target, codex.classify)
    assert_same_as_one_ingest(conn, target, tmp_path, codex.classify)
    assert rebuilds == []


@pytest.mark.parametrize(
    "source", [HILLVIEW / "155715ec-f4e9-47ea-859c-2e4cfcceab6f.jsonl", MISC / "tiny-conversation.jsonl"]
)
def test_responses_repeated_across_the_resume_line_count_once(
    conn, config: Config, tmp_path: Path, rebuilds, source: Path
) -> None:
    """A file holding its conversation three times (same response ids, as a copied history does): the
    later copies' assistant blocks are repeats of lines read before the resume line, and count once."""
    lines = source.read_bytes().splitlines(keepends=True)
    target = tmp_path / "projects" / "p" / source.name
    session_id = replay(conn, config, lines * 3, target, claude.classify, step=2)
    assert_same_as_one_ingest(conn, target, tmp_path, claude.classify)
    roles = [m["role"] for m in get_mirror(conn, session_id).messages()]
    assert roles.count("assistant") < roles.count("user")  # the copies' answers were dropped as repeats
    assert rebuilds == []


@pytest.mark.parametrize("cap", [2_000, 5_000])
def test_a_mirror_past_its_cap(conn, config: Config, tmp_path: Path, monkeypatch, rebuilds, cap: int) -> None:
    """Past MAX_MIRROR_CHARS the last half slides along: still continued from the stored mirror."""
    monkeypatch.setattr(mirrors, "MAX_MIRROR_CHARS", cap)
    target = tmp_path / "sessions" / CODEX_SHORT.name
    session_id = replay(conn, config, CODEX_SHORT.read_bytes().splitlines(keepends=True), target, codex.classify)
    assert "messages cut by memex" in get_mirror(conn, session_id).conversation_text
    assert_same_as_one_ingest(conn, target, tmp_path, codex.classify)
    assert rebuilds == []


def test_generated_turns_titles_and_compaction(conn, config: Config, tmp_path: Path, rebuilds, monkeypatch) -> None:
    """Turns one by one, a title that changes, a compaction, the cap; then an answer longer than the last
    half of the cap, written line by line (the stored mirror then keeps nothing to continue from)."""
    monkeypatch.setattr(mirrors, "MAX_MIRROR_CHARS", 6_000)
    sid = "11111111-2222-3333-4444-555555555555"
    session = ClaudeSession(tmp_path / "projects" / "p" / f"{sid}.jsonl", sid)

    def ingest() -> None:
        ingest_transcript(conn, config, claude.classify(session.path))
        assert_as_rebuilt(conn, sid)

    for n in range(30):
        simple_turn(session, f"question {n} about walruses " + "words " * (n * 7), f"answer {n} " * (n + 1))
        if n == 5:
            session.write(session.custom_title("Walrus research"))
        if n == 12:
            session.write(session.compact_boundary(), session.compact_summary("We studied walruses."))
        ingest()
    assert rebuilds == []
    session.write(session.prompt("now tell me a long story"))
    for n in range(5):
        session.write(session.assistant(text(f"chapter {n} " + "story " * 300)))
        ingest()
    assert_same_as_one_ingest(conn, session.path, tmp_path, claude.classify)
    assert 0 < len(rebuilds) <= 4


def test_search_finds_words_said_far_apart(conn, config: Config, tmp_path: Path) -> None:
    """All the words of a query anywhere in the conversation, not in one segment."""
    sid = "11111111-2222-3333-4444-555555555555"
    session = ClaudeSession(tmp_path / "projects" / "p" / f"{sid}.jsonl", sid)
    simple_turn(session, "tell me about axolotls", "they regrow limbs " * 40)
    for n in range(10):
        simple_turn(session, f"filler question {n} " + "words " * 80, "filler answer " * 40)
    simple_turn(session, "and capybaras?", "they are calm " * 40)
    ingest_transcript(conn, config, claude.classify(session.path))
    assert conn.execute("SELECT count(*) FROM mirror_segments").fetchone()[0] > 5
    hits = search_mirrors(conn, "axolotls capybaras", Filters(), 5)
    assert [h["session_id"] for h in hits] == [sid]
    assert search_mirrors(conn, "axolotls narwhals", Filters(), 5) != []  # any word, when all find nothing


def test_a_store_from_before_segments_is_migrated(tmp_path: Path, config: Config) -> None:
    """A mirror stored whole (schema 5) reads back the same, is found, and is cut in segments once it grows."""
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    for script in MIGRATIONS[:5]:
        old.executescript(script)
    old.execute("PRAGMA user_version = 5")
    old.execute(
        "INSERT INTO sessions (session_id, agent, computer, updated_at) VALUES ('s1', 'claude', 'testbox', 'x')"
    )
    text = "User: where do narwhals live?\n\nAssistant: " + "In the Arctic. " * 2_000
    old.execute(
        "INSERT INTO mirrors (session_id, computer, agent, title, conversation_text, metadata, content_hash, "
        "updated_at) VALUES ('s1', 'laptop', 'claude', 'Narwhals', ?, ?, 'h1', '2026-01-01')",
        (text, '{"format": 1, "messages": [["user", 6, 29, null]]}'),
    )
    old.commit()
    old.close()
    conn = connect(path)
    mirror = get_mirror(conn, "s1")
    assert mirror is not None and mirror.conversation_text == text and mirror.content_hash == "h1"
    assert mirror.metadata["messages"] == [["user", 6, 29, None]]
    assert [h["session_id"] for h in search_mirrors(conn, "narwhals arctic", Filters(), 5)] == ["s1"]
    conn.execute("INSERT INTO mirrors_fts(mirrors_fts) VALUES ('integrity-check')")
    jobs = conn.execute("SELECT count(*) FROM embed_jobs WHERE level = 'session'").fetchone()[0]
    grown = mirrors.Mirror(**{**mirror.as_dict(), "conversation_text": text + "\n\nUser: thanks", "content_hash": "h2"})
    assert mirrors.store_mirror(conn, grown)
    assert get_mirror(conn, "s1") == grown
    assert conn.execute("SELECT count(*) FROM mirror_segments").fetchone()[0] == len(
        cut_segments(grown.conversation_text)
    )
    assert conn.execute("SELECT count(*) FROM embed_jobs WHERE level = 'session'").fetchone()[0] == jobs
    conn.execute("INSERT INTO mirrors_fts(mirrors_fts) VALUES ('integrity-check')")
    conn.execute("DELETE FROM mirrors")
    assert conn.execute("SELECT count(*) FROM mirror_segments").fetchone()[0] == 0
    conn.execute("INSERT INTO mirrors_fts(mirrors_fts) VALUES ('integrity-check')")
