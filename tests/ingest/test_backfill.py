"""Backfill: many files of every agent, parsed in worker processes, written here, resumable."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from corpus import CODEX, GEMINI, db_content
from memex.config import Config
from memex.ingest import indexer
from memex.ingest.indexer import default_roots, discover, index_transcripts
from memex.ingest.pipeline import ingest_planned, parse_stream, plan_ingest
from memex.sources import claude
from memex.store.db import connect
from transcripts import ClaudeSession, simple_turn

SID = "11111111-2222-3333-4444-555555555555"


def mirrors_of(connection) -> list[tuple]:
    return sorted(
        tuple(r) for r in connection.execute("SELECT session_id, agent, title, conversation_text FROM mirrors")
    )


@pytest.fixture
def mixed(tmp_path: Path, projects: Path) -> Path:
    """Real transcripts of the three agents in one tree, as `memex index PATH` would be given."""
    root = tmp_path / "mixed"
    shutil.copytree(projects, root / "claude")
    shutil.copytree(CODEX, root / "codex")
    shutil.copytree(GEMINI, root / "gemini")
    return root


def test_parallel_backfill_equals_one_process(config: Config, tmp_path: Path, mixed: Path, monkeypatch) -> None:
    monkeypatch.setattr(indexer, "PARALLEL_MIN_FILES", 2)
    monkeypatch.setattr(indexer, "PARALLEL_MIN_BYTES", 0)
    used = []
    original = indexer._index_in_parallel
    monkeypatch.setattr(indexer, "_index_in_parallel", lambda *args: used.append(1) or original(*args))
    roots = {agent: [mixed] for agent in ("claude", "codex", "gemini")}
    serial, parallel = connect(tmp_path / "serial.db"), connect(tmp_path / "parallel.db")
    one = index_transcripts(serial, config, discover(roots), workers=1)
    two = index_transcripts(parallel, config, discover(roots), workers=2)
    assert used == [1]
    assert (two.files, two.turns, two.mirrors, two.bad_lines) == (one.files, one.turns, one.mirrors, one.bad_lines)
    assert db_content(parallel) == db_content(serial)
    assert mirrors_of(parallel) == mirrors_of(serial)
    assert index_transcripts(parallel, config, discover(roots), workers=2).files_changed == 0


def test_same_session_id_in_two_files_planned_together(config: Config, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(indexer, "PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr(indexer, "PARALLEL_MIN_BYTES", 0)
    for folder in ("a", "b"):
        session = ClaudeSession(tmp_path / folder / "copied.jsonl", "same-id")
        simple_turn(session, f"question in {folder}", "answer")
    conn = connect(tmp_path / "m.db")
    index_transcripts(conn, config, discover({"claude": [tmp_path / "a", tmp_path / "b"]}), workers=2)
    ids = [r[0] for r in conn.execute("SELECT session_id FROM sessions ORDER BY transcript_path")]
    assert ids[0] == "same-id" and ids[1].startswith("same-id-")


def test_a_file_that_changed_after_parsing_is_redone(conn, config: Config, tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / f"{SID}.jsonl", SID)
    simple_turn(session, "about pelicans", "pelicans answered")
    transcript = claude.classify(session.path)
    plan = plan_ingest(conn, transcript)
    parsed = parse_stream(plan, config.chunk_max_tokens, config.chunk_overlap_tokens)
    simple_turn(session, "about herons", "herons answered")  # written while the worker parsed
    report = ingest_planned(conn, config, plan, parsed)
    assert report.status == "new" and report.turns == 2
    assert ingest_planned(conn, config, plan_ingest(conn, transcript), None).status == "unchanged"


def test_a_worker_failure_is_redone_here(conn, config: Config, tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / f"{SID}.jsonl", SID)
    simple_turn(session, "about pelicans", "pelicans answered")
    report = ingest_planned(conn, config, plan_ingest(conn, claude.classify(session.path)), None)
    assert report.status == "new" and report.turns == 1


def test_default_roots_include_codex_archive(tmp_path: Path, config: Config) -> None:
    assert default_roots(config, ["codex"]) == {"codex": [config.codex_dir]}
    sessions = tmp_path / ".codex" / "sessions"
    (tmp_path / ".codex" / "archived_sessions").mkdir(parents=True)
    moved = Config(home=config.home, codex_dir=sessions)
    assert default_roots(moved, ["codex"])["codex"] == [sessions, tmp_path / ".codex" / "archived_sessions"]


def test_index_all_cli(run, tmp_path: Path, home: Path) -> None:
    shutil.copytree(CODEX, tmp_path / "codex-sessions")
    shutil.copytree(GEMINI, tmp_path / "gemini-tmp")
    result = run("index", "--all", "--workers", "2", "--json")
    assert result.exit_code == 0, result.output
    assert '"sessions": 5' in result.stdout
    both = run("index", "--all", str(tmp_path))
    assert both.exit_code == 2 and "--all indexes every agent's default folders" in both.stderr


def test_a_file_that_fails_in_a_worker_fails_alone(config: Config, tmp_path: Path, mixed: Path, monkeypatch) -> None:
    """A Gemini chat over max_line_bytes raises in the worker that parses it, and again when redone here:
    it is reported, and every other file of the backfill is indexed as in one process."""
    monkeypatch.setattr(indexer, "PARALLEL_MIN_FILES", 2)
    monkeypatch.setattr(indexer, "PARALLEL_MIN_BYTES", 0)
    small = Config(home=config.home, max_line_bytes=65_536)
    roots = {agent: [mixed] for agent in ("claude", "codex", "gemini")}
    serial = connect(tmp_path / "serial.db")
    expected = index_transcripts(serial, small, discover(roots), workers=1)
    chat = mixed / "gemini" / ("0" * 64) / "chats" / "session-2026-03-03T10-00-cccc0000.json"
    chat.parent.mkdir(parents=True)
    message = {"id": "m1", "timestamp": "2026-03-03T10:00:01Z", "type": "user", "content": "q" * 100_000}
    chat.write_text(json.dumps({"sessionId": "too-big", "projectHash": "0" * 64, "messages": [message]}))
    used = []
    original = indexer._index_in_parallel
    monkeypatch.setattr(indexer, "_index_in_parallel", lambda *args: used.append(1) or original(*args))
    parallel = connect(tmp_path / "parallel.db")
    report = index_transcripts(parallel, small, discover(roots), workers=2)
    assert used == [1]
    assert [(f.path, f.reason.split(":")[0]) for f in report.failed] == [(chat, "ChatTooLarge")]
    assert report.sessions == expected.sessions and report.turns == expected.turns
    assert db_content(parallel) == db_content(serial)
