"""Codex and Gemini transcripts through the whole ingest: sessions, turns, mentions, re-reads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from corpus import CODEX, CODEX_ABORTED, CODEX_OLD, GEMINI, GEMINI_LEGACY, db_content
from memex.config import Config
from memex.ingest.indexer import discover, index_transcripts
from memex.ingest.pipeline import ingest_transcript
from memex.sources import codex, gemini
from memex.store.db import connect
from transcripts import ClaudeSession, CodexRollout, GeminiChat, simple_turn

CODEX_SID = "019a7ae6-1945-7c63-98f2-210adb922af9"
GEMINI_SID = "ef567890-3c4d-4e5f-8a9b-0c1d2e3f4a5b"
LEGACY_SID = "abcd1234-7f3e-4c21-9b8a-5d6e0f1a2b3c"


def session(conn, session_id: str):
    return conn.execute("SELECT * FROM sessions WHERE session_id = ?", (session_id,)).fetchone()


def test_codex_real_rollout(conn, config: Config) -> None:
    report = ingest_transcript(conn, config, codex.classify(CODEX_ABORTED))
    assert report.status == "new" and report.bad_lines == 0 and report.turns == 6
    row = session(conn, CODEX_SID)
    assert (row["agent"], row["project_dir"]) == ("codex", "/mnt/d/ai/MoonMind")
    assert row["started_at"] == "2025-11-13T01:48:11.461Z" and row["ended_at"] > row["started_at"]
    assert row["title"].startswith("Responding to the note below, why would jobs be routed")
    turns = conn.execute("SELECT prompt_text, full_text, tool_summary FROM turns ORDER BY line_index").fetchall()
    assert all(t["full_text"].count("User: ") == 1 for t in turns)  # each prompt once
    assert "Assistant: Jobs aren’t just pulled" in turns[1]["full_text"]
    assert "Tools: shell" in turns[0]["tool_summary"]
    files = {r[0] for r in conn.execute("SELECT DISTINCT file_path FROM file_mentions")}
    assert "specs/003-celery-oauth-volumes/spec.md" in files  # apply_patch, relative to the project
    assert "docker-compose.yaml" in files or any(f.startswith("docs/") for f in files)  # read by shell commands


def test_codex_old_layout(conn, config: Config) -> None:
    ingest_transcript(conn, config, codex.classify(CODEX_OLD))
    row = session(conn, "5973b6c0-94b8-487b-a530-2aeb6098ae0e")
    assert row["project_dir"] == "/Users/carol/src/todo-cli" and row["started_at"] == "2025-05-01T10:00:00.412Z"
    files = {r[0] for r in conn.execute("SELECT DISTINCT file_path FROM file_mentions")}
    assert {"src/todo/store.py", "tests/test_store.py", "README.md"} <= files


def test_codex_line_by_line_equals_one_clean_run(config: Config, tmp_path: Path) -> None:
    source = CodexRollout(
        tmp_path / "src" / "rollout-2026-03-01T00-00-00-cccccccc-1111-2222-3333-444444444444.jsonl",
        "cccccccc-1111-2222-3333-444444444444",
    )
    source.write(source.meta())
    source.turn("add a cart", "cart added", script="cat src/cart.py")
    source.write(*source.patch("src/cart.py"))
    source.write(source.line("compacted", {"message": "We added a cart."}))
    source.turn("购物车的结账页面怎么做？", "用 checkout.py", script="sed -n '1,20p' src/checkout.py")
    clean = connect(tmp_path / "clean.db")
    ingest_transcript(clean, config, codex.classify(source.path))

    live_path = tmp_path / "live" / source.path.name
    live_path.parent.mkdir()
    live_path.touch()
    live = connect(tmp_path / "live.db")
    for line in source.path.read_bytes().splitlines(keepends=True):
        with live_path.open("ab") as handle:
            handle.write(line)
        ingest_transcript(live, config, codex.classify(live_path))
    assert db_content(live) == db_content(clean)
    prompts = [r[0] for r in clean.execute("SELECT prompt_text FROM turns WHERE kind = 'prompt' ORDER BY line_index")]
    assert prompts == ["add a cart", "购物车的结账页面怎么做？"]


def test_gemini_sessions_subagents_and_titles(conn, config: Config) -> None:
    report = index_transcripts(conn, config, discover({"gemini": [GEMINI]}))
    assert report.files == 3 and report.subagents == 1 and report.bad_lines == 0
    row = session(conn, GEMINI_SID)
    assert (row["agent"], row["project_dir"]) == ("gemini", "/Users/bob/code/inventory-api")
    assert row["title"] == "Add validated page/limit pagination to GET /items"
    assert (row["started_at"], row["ended_at"]) == ("2026-03-02T09:15:04.118Z", "2026-03-02T09:20:38.656Z")
    turns = conn.execute(
        "SELECT agent_id, prompt_text, tool_summary FROM turns WHERE session_id = ? ORDER BY agent_id, line_index",
        (GEMINI_SID,),
    ).fetchall()
    assert [(t["agent_id"], t["prompt_text"][:20]) for t in turns] == [
        ("", "Add page/limit pagin"),
        ("", "顺便给分页参数加上校验：page 至少为"),
        ("", "Find every other rou"),
        ("k3x9q2", "Your task is to do a"),
    ]
    files = {r[0] for r in conn.execute("SELECT file_path FROM file_mentions WHERE session_id = ?", (GEMINI_SID,))}
    assert "src/routes/items.ts" in files  # an absolute path made relative to the recovered project
    legacy = session(conn, LEGACY_SID)
    assert legacy["project_dir"] is None
    assert any("project folder unknown" in w and "616b7ef4d9a2" in w for w in report.warnings)


def test_gemini_project_recovered_from_another_agents_session(conn, config: Config, tmp_path: Path) -> None:
    claude = ClaudeSession(
        tmp_path / "claude" / "11111111-2222-3333-4444-555555555555.jsonl",
        "11111111-2222-3333-4444-555555555555",
        cwd="/home/alice/projects/webshop",
    )
    simple_turn(claude, "set up the webshop", "done")
    report = index_transcripts(conn, config, discover({"claude": [tmp_path / "claude"], "gemini": [GEMINI_LEGACY]}))
    assert not report.warnings
    assert session(conn, LEGACY_SID)["project_dir"] == "/home/alice/projects/webshop"
    files = {r[0] for r in conn.execute("SELECT file_path FROM file_mentions WHERE session_id = ?", (LEGACY_SID,))}
    assert {"src/webshop/cart.py", "tests/test_cart.py"} <= files


def test_gemini_is_reread_whole_when_it_changes(conn, config: Config, tmp_path: Path) -> None:
    chat = GeminiChat(tmp_path / "p" / "chats" / "session-2026-03-01T00-00-s1.jsonl", "s1")
    chat.turn("about pelicans", "pelicans answered")
    transcript = gemini.classify(chat.path)
    assert ingest_transcript(conn, config, transcript).status == "new"
    assert ingest_transcript(conn, config, transcript).status == "unchanged"
    last = chat.user("about herons")
    chat.write(last, chat.touch(), chat.gemini("herons answered"))
    assert ingest_transcript(conn, config, transcript).status == "rewritten"
    assert [r[0] for r in conn.execute("SELECT prompt_text FROM turns ORDER BY line_index")] == [
        "about pelicans",
        "about herons",
    ]
    chat.write({"$rewindTo": last["id"]})  # the user rewinds: that prompt and what followed are gone
    ingest_transcript(conn, config, transcript)
    assert [r[0] for r in conn.execute("SELECT prompt_text FROM turns")] == ["about pelicans"]
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'herons'").fetchone()[0] == 0


def test_gemini_jsonl_supersedes_its_legacy_json(conn, config: Config, tmp_path: Path) -> None:
    chats = tmp_path / "tmp" / "webshop" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(GEMINI_LEGACY, chats / GEMINI_LEGACY.name)
    index_transcripts(conn, config, discover({"gemini": [tmp_path]}))
    document = json.loads(GEMINI_LEGACY.read_text())
    lines = [{k: v for k, v in document.items() if k != "messages"}, *document["messages"]]
    lines.append({"id": "new", "timestamp": "2025-09-02T10:00:00Z", "type": "user", "content": "resumed the next day"})
    (chats / (GEMINI_LEGACY.stem + ".jsonl")).write_text("".join(json.dumps(line) + "\n" for line in lines))
    index_transcripts(conn, config, discover({"gemini": [tmp_path]}))
    assert [r[0] for r in conn.execute("SELECT session_id FROM sessions")] == [LEGACY_SID]
    assert conn.execute("SELECT transcript_path FROM sessions").fetchone()[0].endswith(".jsonl")
    assert conn.execute("SELECT count(*) FROM turns WHERE prompt_text = 'resumed the next day'").fetchone()[0] == 1


def test_mixed_folder_given_by_hand(conn, config: Config, tmp_path: Path) -> None:
    """`memex index PATH` shows every adapter the same folder: each takes its own files, none twice."""
    shutil.copytree(CODEX, tmp_path / "codex")
    shutil.copytree(GEMINI, tmp_path / "gemini")
    roots = {agent: [tmp_path] for agent in ("claude", "codex", "gemini")}
    report = index_transcripts(conn, config, discover(roots))
    by_agent = dict(conn.execute("SELECT agent, count(*) FROM sessions GROUP BY agent").fetchall())
    assert by_agent == {"codex": 3, "gemini": 2} and report.bad_lines == 0


def test_bad_input_is_counted_not_fatal(conn, config: Config, tmp_path: Path) -> None:
    rollout = CodexRollout(
        tmp_path / "rollout-2026-01-01T00-00-00-dddddddd-1111-2222-3333-444444444444.jsonl",
        "dddddddd-1111-2222-3333-444444444444",
    )
    rollout.write(rollout.meta(), *rollout.prompt("first prompt about otters"))
    with rollout.path.open("ab") as handle:
        handle.write(b"not json\n")
    rollout.write(*rollout.answer("the otters answer"))
    chat = GeminiChat(tmp_path / "g" / "chats" / "session-x.jsonl", "g1")
    chat.turn("gemini about otters", "gemini otters answer")
    with chat.path.open("ab") as handle:
        handle.write(b"{broken\n")
    report = index_transcripts(conn, config, discover({"codex": [tmp_path], "gemini": [tmp_path]}))
    assert report.bad_lines == 2 and len([w for w in report.warnings if "skipped" in w]) == 2
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 2
    assert conn.execute("SELECT sum(bad_lines) FROM sessions").fetchone()[0] == 2
