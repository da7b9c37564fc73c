"""Subagents of every agent are streams of their parent session: attached, incremental, in any order."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from agent_cli import index_json
from corpus import (
    LIVE_CLAUDE,
    LIVE_CODEX,
    LIVE_CODEX_CHILD,
    LIVE_CODEX_PARENT,
    LIVE_GEMINI,
    LIVE_GEMINI_CHATS,
    db_content,
)
from memex.config import Config
from memex.ingest.indexer import discover, index_transcripts
from memex.ingest.pipeline import ingest_transcript
from memex.sources import codex, gemini
from memex.sources.model import Transcript
from memex.store.db import connect

PARENT_ID = "01a209d0-f96a-7271-b275-d9f0c96d0cf5"
CHILD_ID = "01a209d0-fa7c-7962-b6c3-548f6f302da0"


def test_codex_index_attaches_spawned_agents_and_records_files(conn, config: Config, run) -> None:
    report = index_transcripts(conn, config, discover({"codex": [LIVE_CODEX]}))
    assert (len(report.sessions), report.subagents, report.bad_lines) == (3, 1, 0)
    sessions = {r[0]: r[1] for r in conn.execute("SELECT session_id, title FROM sessions")}
    assert CHILD_ID not in sessions and sessions[PARENT_ID].startswith("MOCK-SPAWN")
    assert [tuple(r) for r in conn.execute("SELECT session_id, agent_id FROM subagent_sessions")] == [
        (PARENT_ID, CHILD_ID)
    ]
    child_turn = conn.execute("SELECT full_text, tool_summary FROM turns WHERE agent_id = ?", (CHILD_ID,)).fetchone()
    assert "Subagent report: the folder holds notes.md" in child_turn["full_text"]
    assert "Commands: `ls -la`" in child_turn["tool_summary"]
    files = {r[0] for r in conn.execute("SELECT DISTINCT file_path FROM file_mentions")}
    assert {"notes.md", "zebra.txt"} <= files
    listed = run("sessions", "list", "--agent", "codex")
    assert "(+1 subagent: Laplace)" in listed.output and "SUBAGENT-TASK" not in listed.output
    found = run("search", "zebra", "--file", "notes.md", "--json")
    assert '"session_id": "01a209d0-6a09-7253-b0bc-bc8841e9b922"' in found.output


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    day = tmp_path / "sessions" / "2026" / "11" / "23"
    day.mkdir(parents=True)
    return Path(shutil.copy(LIVE_CODEX_PARENT, day)), Path(shutil.copy(LIVE_CODEX_CHILD, day))


def test_codex_child_before_parent_and_child_growing(config: Config, tmp_path: Path) -> None:
    parent, child = _copy(tmp_path)
    lines = child.read_text().splitlines(keepends=True)
    child.write_text("".join(lines[:9]))  # the child is still working: prompt and first call only
    conn = connect(tmp_path / "a.db")
    first = ingest_transcript(conn, config, codex.classify(child))
    assert (first.session_id, first.agent_id, first.status) == (PARENT_ID, CHILD_ID, "new")
    row = conn.execute("SELECT title, started_at, transcript_path FROM sessions").fetchone()
    assert row["transcript_path"] is None and row["title"].startswith("SUBAGENT-TASK")  # its subagent names it
    ingest_transcript(conn, config, codex.classify(parent))
    row = conn.execute("SELECT title, started_at, transcript_path FROM sessions").fetchone()
    assert row["title"].startswith("MOCK-SPAWN") and row["started_at"] == "2026-11-23T19:10:20.027Z"
    with child.open("a") as handle:
        handle.write("".join(lines[9:]))
    grown = ingest_transcript(conn, config, codex.classify(child))
    assert grown.status == "appended"
    # The same store as indexing the finished files in one run, parents first.
    clean = connect(tmp_path / "b.db")
    index_transcripts(clean, config, codex.discover([tmp_path / "sessions"]))
    assert db_content(conn) == db_content(clean)


def test_gemini_index_attaches_subagents_and_keeps_resumed_chats_whole(conn, config: Config, run) -> None:
    report = index_transcripts(conn, config, discover({"gemini": [LIVE_GEMINI]}))
    assert (len(report.sessions), report.subagents, report.bad_lines) == (5, 2, 0)
    subagents = sorted(tuple(r) for r in conn.execute("SELECT session_id, agent_id FROM subagent_sessions"))
    assert [(s[:8], a[:8]) for s, a in subagents] == [("2093fa90", "f3c5ea33"), ("9edcc6b6", "44469b4c")]
    resumed = conn.execute("SELECT started_at, title FROM sessions WHERE session_id LIKE 'e4530f8d%'").fetchone()
    assert resumed["started_at"] == "2026-11-23T19:15:21.659Z"
    found = run("search", "flux", "--file", "app.py", "--json")
    assert '"session_id": "e4530f8d-df44-43c6-956d-1888fb14e697"' in found.output
    answer = conn.execute("SELECT full_text FROM turns WHERE agent_id LIKE '44469b4c%'").fetchone()[0]
    assert "Assistant: Subagent report: the folder holds" in answer
    prompts = [r[0] for r in conn.execute("SELECT prompt_text FROM turns WHERE agent_id LIKE 'f3c5ea33%'")]
    assert prompts == ["SUBAGENT-TASK: list the files of /home/dev/proj and report them."]  # not the turn limit


def test_gemini_subagent_before_its_parent_and_growing(config: Config, tmp_path: Path) -> None:
    chats = tmp_path / "tmp" / "proj" / "chats"
    parent = chats / "session-2026-11-23T19-12-9edcc6b6.jsonl"
    child = chats / "9edcc6b6-9cae-4e8a-98e8-3b3ba6dbef3e" / "44469b4c-2fa4-4a90-b28d-088445068035.jsonl"
    child.parent.mkdir(parents=True)
    shutil.copy(LIVE_GEMINI_CHATS / parent.name, parent)
    shutil.copy(LIVE_GEMINI_CHATS / child.parent.name / child.name, child)
    lines = child.read_text().splitlines(keepends=True)
    child.write_text("".join(lines[:4]))
    conn = connect(tmp_path / "a.db")
    first = ingest_transcript(conn, config, gemini.classify(child))
    assert (first.session_id[:8], first.agent_id[:8]) == ("9edcc6b6", "44469b4c")
    ingest_transcript(conn, config, gemini.classify(parent))
    child.write_text("".join(lines))
    assert ingest_transcript(conn, config, gemini.classify(child)).status == "rewritten"
    row = conn.execute("SELECT title, started_at FROM sessions").fetchone()
    assert row["title"].startswith("MOCK-TASK") and row["started_at"] == "2026-11-23T19:12:24.295Z"
    clean = connect(tmp_path / "b.db")
    index_transcripts(clean, config, gemini.discover([chats]))
    assert db_content(conn) == db_content(clean)


def test_claude_subagent_meta_and_orphan_folders(conn, config: Config, tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-dev-proj"
    shutil.copytree(LIVE_CLAUDE / "-home-dev-proj", folder)
    index_transcripts(conn, config, discover({"claude": [folder.parent]}))
    row = conn.execute("SELECT agent_type, description FROM subagent_sessions").fetchone()
    assert tuple(row) == ("general-purpose", "List project files")
    title = conn.execute("SELECT title FROM sessions WHERE session_id = '322e6fc1-933c-4088-b825-a0b12dac4c7a'")
    assert title.fetchone()[0].startswith("MOCK-READ")  # the parent's prompt, not its subagent's task
    # An orphan: the subagent folder of a session whose file is gone.
    orphan = folder / "0a0a0a0a-1111-2222-3333-444444444444" / "subagents"
    orphan.mkdir(parents=True)
    for name in ("agent-a6464d481e77bfaa0.jsonl", "agent-a6464d481e77bfaa0.meta.json"):
        shutil.copy(folder / "322e6fc1-933c-4088-b825-a0b12dac4c7a" / "subagents" / name, orphan / name)
    index_transcripts(conn, config, discover({"claude": [folder.parent]}))
    row = conn.execute("SELECT title FROM sessions WHERE session_id = '0a0a0a0a-1111-2222-3333-444444444444'")
    assert row.fetchone()[0] == "List project files"


def test_a_rollout_indexed_as_a_session_before_becomes_a_subagent(conn, config: Config, run) -> None:
    """A store indexed before Codex 0.169 was understood holds a spawned agent as a session of its own."""
    old = Transcript(LIVE_CODEX_CHILD, "codex", CHILD_ID)  # what the earlier classification said
    ingest_transcript(conn, config, old)
    assert conn.execute("SELECT count(*) FROM mirrors WHERE session_id = ?", (CHILD_ID,)).fetchone()[0] == 1
    index_transcripts(conn, config, discover({"codex": [LIVE_CODEX]}))
    assert conn.execute("SELECT count(*) FROM sessions WHERE session_id = ?", (CHILD_ID,)).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM mirrors WHERE session_id = ?", (CHILD_ID,)).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM subagent_sessions WHERE agent_id = ?", (CHILD_ID,)).fetchone()[0] == 1


def test_a_copy_of_a_session_keeps_its_own_subagents(run, tmp_path: Path) -> None:
    """Two folders holding the same sessions (a backup beside the agent's folder, copied fixtures): the
    second copy of a session is stored under an id derived from its path, but its subagents were stored
    under the id they name, the original's. The copy listed none, the original's subagent stream was
    read from the copy's file, and each `memex index` of one folder re-read what the other had taken."""
    first, second = tmp_path / "live" / "projects", tmp_path / "backup" / "projects"
    shutil.copytree(LIVE_CLAUDE, first)
    shutil.copytree(LIVE_CLAUDE, second)
    for folder in (first, second):
        assert index_json(run, folder)["files_changed"] == 3
    for folder in (first, second):
        assert index_json(run, folder)["files_changed"] == 0  # was 1 each time: the subagent, taken back
    listed = as_json(run("sessions", "list", "--agent", "claude", "--json"))
    parent = "322e6fc1-933c-4088-b825-a0b12dac4c7a"
    copies = {s["session_id"]: s for s in listed if s["session_id"].startswith(parent)}
    assert len(copies) == 2 and all(s["subagents"] == 1 for s in copies.values())
    for session_id, session in copies.items():
        folder = first if session_id == parent else second
        assert session["transcript_path"].startswith(str(folder.resolve()))
        shown = as_json(run("show", session_id, "--turns", "--json"))
        assert "a6464d481e77bfaa0" in {t["agent_id"] for t in shown["turns"]}


def as_json(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _subagent_names(run, session_id: str) -> list[tuple[str, str | None]]:
    shown = json.loads(run("show", session_id, "--json").stdout)["session"]
    return [(d["agent_id"], d["agent_type"]) for d in shown["subagent_details"]]


def test_codex_and_gemini_subagents_are_named_as_their_agent_names_them(home: Path, run, tmp_path: Path) -> None:
    """Codex names a spawned agent in its rollout (`agent_nickname`, and `agent_role` when it has one),
    Gemini in the parent's `invoke_agent` call (`agent_name`, beside the subagent chat's `agentId`): each is
    the subagent's name where Claude Code's `agentType` is (`memex show --json`, the viewer)."""
    chats = tmp_path / "gemini" / "proj" / "chats"
    shutil.copytree(LIVE_GEMINI_CHATS, chats)
    run("index", str(LIVE_CODEX), str(chats.parent.parent))
    assert _subagent_names(run, PARENT_ID) == [(CHILD_ID, "Laplace")]
    gemini_parent = "9edcc6b6-9cae-4e8a-98e8-3b3ba6dbef3e"
    assert _subagent_names(run, gemini_parent) == [("44469b4c-2fa4-4a90-b28d-088445068035", "generalist")]


def test_a_codex_role_is_named_with_the_nickname_even_past_the_peeked_bytes(tmp_path: Path) -> None:
    lines = LIVE_CODEX_CHILD.read_text().splitlines(keepends=True)
    meta = json.loads(lines[0])
    meta["payload"]["source"]["subagent"]["thread_spawn"]["agent_role"] = "explorer"
    meta["payload"]["agent_role"] = "explorer"
    meta["payload"]["base_instructions"] = {"text": "x" * (codex.PEEK_BYTES * 2)}  # a first line never read whole
    child = tmp_path / LIVE_CODEX_CHILD.name
    child.write_text(json.dumps(meta) + "\n" + "".join(lines[1:]))
    found = codex.classify(child)
    assert found is not None and (found.subagent_id, found.agent_type) == (CHILD_ID, "Laplace (explorer)")
    assert codex.classify(LIVE_CODEX_PARENT).agent_type is None  # a session is no one's subagent
