"""Incremental ingest into the real SQLite store."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from corpus import MISC, SLAY, db_content
from memex.config import Config
from memex.ingest.indexer import discover, index_transcripts, session_transcripts
from memex.ingest.pipeline import ingest_transcript
from memex.sources import claude
from memex.store.db import connect
from transcripts import ClaudeSession, simple_turn, text, tool_use

SID = "11111111-2222-3333-4444-555555555555"


def ingest_all(conn, config: Config, root: Path):
    return index_transcripts(conn, config, discover({"claude": [root]}))


def test_real_projects_folder(conn, config: Config, projects: Path) -> None:
    report = ingest_all(conn, config, projects)
    assert report.files == 16 and report.subagents == 8 and report.bad_lines == 0
    sessions = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    assert sessions == 8  # including the 0-byte and the 117-byte sessions
    assert conn.execute("SELECT count(*) FROM subagent_sessions").fetchone()[0] == 8
    # Every sidechain here is a Claude Code 2.0 "Warmup" run: tracked, but no turn worth recalling.
    assert conn.execute("SELECT count(*) FROM turns WHERE agent_id != ''").fetchone()[0] == 0
    session = conn.execute(
        "SELECT project_dir, started_at, title FROM sessions WHERE session_id = '155715ec-f4e9-47ea-859c-2e4cfcceab6f'"
    ).fetchone()
    assert session["project_dir"] == "/home/jenkins/Personal_AI_Infrastructure"
    assert session["started_at"] == "2025-12-17T01:50:28.491Z"
    assert session["title"] == "What skills are available?"


def test_rerun_on_unchanged_files_does_nothing(conn, config: Config, projects: Path) -> None:
    ingest_all(conn, config, projects)
    before = db_content(conn)
    report = ingest_all(conn, config, projects)
    assert report.files_changed == 0 and report.lines == 0 and report.turns == 0
    assert db_content(conn) == before


def test_append_reads_only_the_new_part(conn, config: Config, tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / f"{SID}.jsonl", SID)
    for n in range(300):
        simple_turn(session, f"question {n} " + "padding " * 300, f"answer {n}", edit=f"src/mod{n}.py")
    transcript = claude.classify(session.path)
    first = ingest_transcript(conn, config, transcript)
    assert first.status == "new" and first.turns == 300
    size_before = session.path.stat().st_size
    simple_turn(session, "the new question about flamingos", "the new answer")
    second = ingest_transcript(conn, config, transcript)
    assert second.status == "appended"
    assert second.turns == 2  # the formerly provisional turn, now final, and the new provisional one
    assert second.bytes_read < 12_000 < size_before  # the last turn and the new lines, not the file
    rows = conn.execute(
        "SELECT provisional, full_text FROM turns WHERE session_id = ? ORDER BY line_index DESC LIMIT 2", (SID,)
    ).fetchall()
    assert rows[0]["provisional"] == 1 and "flamingos" in rows[0]["full_text"]
    assert rows[1]["provisional"] == 0 and "User (next): the new question about flamingos" in rows[1]["full_text"]
    assert conn.execute("SELECT count(*) FROM turns WHERE session_id = ?", (SID,)).fetchone()[0] == 301


def test_line_by_line_ingest_equals_one_clean_run(config: Config, tmp_path: Path) -> None:
    """Ingesting after every single line (as Stop hooks do) ends where one clean run ends."""
    source = ClaudeSession(tmp_path / "src" / f"{SID}.jsonl", SID)
    sub = ClaudeSession(tmp_path / "src" / SID / "subagents" / "agent-abc123.jsonl", SID, agent_id="abc123")
    source.write(source.custom_title("Cart work"), source.snapshot("/home/dev/shop/cart.py"))
    simple_turn(source, "add a cart", "cart added", edit="cart.py")
    source.write(source.pr_link(42))
    simple_turn(sub, "explore the cart module", "found cart.py", edit="cart.py")
    source.write(source.compact_boundary(), source.compact_summary("We added a cart."))
    source.write(source.assistant(text("Continuing.")), source.progress())
    simple_turn(source, "购物车的结账页面怎么做？", "用 checkout.py", edit="checkout.py")
    simple_turn(sub, "and the tests", "tests/test_cart.py exists")

    clean = connect(tmp_path / "clean.db")
    for transcript in discover({"claude": [tmp_path / "src"]}):
        ingest_transcript(clean, config, transcript)

    live_dir = tmp_path / "live"
    live_main = live_dir / f"{SID}.jsonl"
    live_sub = live_dir / SID / "subagents" / "agent-abc123.jsonl"
    live_sub.parent.mkdir(parents=True)
    live_main.touch()
    live_sub.touch()
    live = connect(tmp_path / "live.db")
    main_lines = source.path.read_bytes().splitlines(keepends=True)
    sub_lines = sub.path.read_bytes().splitlines(keepends=True)
    for step in range(max(len(main_lines), len(sub_lines))):
        for lines, target in ((main_lines, live_main), (sub_lines, live_sub)):
            if step < len(lines):
                with target.open("ab") as handle:
                    handle.write(lines[step])
        for transcript in session_transcripts(live_main):
            ingest_transcript(live, config, transcript)
    live_content, clean_content = db_content(live), db_content(clean)
    assert live_content["turns"] == clean_content["turns"]
    assert live_content == clean_content
    assert clean_content["pr_links"][0][1] == 42
    assert any(kind == "compaction" for *_, kind, _p, _t, _s, _st in clean_content["turns"])


def test_rewritten_or_shrunk_file_is_reingested(conn, config: Config, tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / f"{SID}.jsonl", SID)
    simple_turn(session, "about pelicans", "pelicans answered")
    simple_turn(session, "about herons", "herons answered")
    transcript = claude.classify(session.path)
    ingest_transcript(conn, config, transcript)
    session.path.write_text("")
    simple_turn(session, "only about storks", "storks answered")
    report = ingest_transcript(conn, config, transcript)
    assert report.status == "rewritten"
    texts = [r[0] for r in conn.execute("SELECT full_text FROM turns WHERE session_id = ?", (SID,))]
    assert len(texts) == 1 and "storks" in texts[0]
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'pelicans'").fetchone()[0] == 0


def test_deleting_a_turn_cascades(conn, config: Config, tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / f"{SID}.jsonl", SID)
    simple_turn(session, "rename the zebra module", "renamed", edit="zebra.py")
    ingest_transcript(conn, config, claude.classify(session.path))
    turn_id = conn.execute("SELECT id FROM turns").fetchone()[0]
    assert conn.execute("SELECT count(*) FROM file_mentions WHERE turn_id = ?", (turn_id,)).fetchone()[0] == 1
    conn.execute("DELETE FROM turns WHERE id = ?", (turn_id,))
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM file_mentions").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'zebra'").fetchone()[0] == 0
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")


def test_provisional_rebuild_leaves_no_orphans(conn, config: Config, tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / f"{SID}.jsonl", SID)
    simple_turn(session, "first walrus question", "first answer", edit="walrus.py")
    transcript = claude.classify(session.path)
    ingest_transcript(conn, config, transcript)
    old_turn = conn.execute("SELECT id FROM turns WHERE provisional = 1").fetchone()[0]
    simple_turn(session, "second question", "second answer")
    ingest_transcript(conn, config, transcript)
    assert conn.execute("SELECT count(*) FROM turns WHERE id = ?", (old_turn,)).fetchone()[0] == 0
    orphans = (
        conn.execute("SELECT count(*) FROM chunks WHERE turn_id NOT IN (SELECT id FROM turns)").fetchone()[0]
        + conn.execute("SELECT count(*) FROM file_mentions WHERE turn_id NOT IN (SELECT id FROM turns)").fetchone()[0]
    )
    assert orphans == 0
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'walrus'").fetchone()[0] == 1
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")


def test_subagent_ingest_is_incremental_per_subagent(conn, config: Config, tmp_path: Path) -> None:
    main = ClaudeSession(tmp_path / f"{SID}.jsonl", SID)
    simple_turn(main, "use a subagent", "ok")
    subs = [ClaudeSession(tmp_path / SID / "subagents" / f"agent-{a}.jsonl", SID, agent_id=a) for a in ("a1", "b2")]
    for sub in subs:
        simple_turn(sub, f"task for {sub.agent_id}", "done")
    for transcript in session_transcripts(main.path):
        ingest_transcript(conn, config, transcript)
    simple_turn(subs[0], "more for a1", "done again")
    reports = [ingest_transcript(conn, config, t) for t in session_transcripts(main.path)]
    assert [(r.agent_id, r.status) for r in reports] == [("", "unchanged"), ("a1", "appended"), ("b2", "unchanged")]
    progress = conn.execute("SELECT agent_id, last_line_index FROM subagent_sessions ORDER BY agent_id").fetchall()
    assert [tuple(r) for r in progress] == [("a1", 4), ("b2", 2)]
    turns = conn.execute("SELECT agent_id, is_sidechain, prompt_text FROM turns WHERE agent_id = 'a1'").fetchall()
    assert [r["prompt_text"] for r in turns] == ["task for a1", "more for a1"]
    assert all(r["is_sidechain"] == 1 for r in turns)


def test_bad_input_is_skipped_and_counted(conn, config: Config, tmp_path: Path) -> None:
    path = tmp_path / f"{SID}.jsonl"
    session = ClaudeSession(path, SID)
    session.write(session.prompt("first good prompt about otters"))
    with path.open("ab") as handle:
        handle.write(b'{"type":"user","message":{"role":"user","content":"trunc\n')  # truncated JSON
        handle.write(b"this is not json at all\n")
        handle.write(b'{"type":"user","message":"should be an object"}\n')  # wrong type
        handle.write(b'{"type":"user","message":{"role":"user","content":42}}\n')  # wrong type
        handle.write(
            b'{"type":"assistant","message":{"id":"x","role":"assistant","content":[{"type":"text","text":"caf\xe9"}]}}\n'
        )
        handle.write(b'{"type":"user","message":{"role":"user","content":"prompt without a sessionId"}}\n')
        handle.write(b"[1, 2, 3]\n")
        big = "y" * (10 * 1024 * 1024)  # long, but under max_line_bytes: read (see test_poison for longer)
        handle.write(
            b'{"type":"user","toolUseResult":"'
            + big.encode()
            + b'","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"huge"}]}}\n'
        )
    session.write(session.assistant(text("the otters answer")))
    report = ingest_transcript(conn, config, claude.classify(path))
    assert report.bad_lines == 5 and report.lines == 10
    assert any("invalid UTF-8" in w for w in report.warnings)
    prompts = [r[0] for r in conn.execute("SELECT prompt_text FROM turns ORDER BY line_index")]
    assert prompts == ["first good prompt about otters", "prompt without a sessionId"]
    last = conn.execute("SELECT full_text FROM turns ORDER BY line_index DESC").fetchone()[0]
    assert "the otters answer" in last


def test_empty_and_vanished_files(conn, config: Config, tmp_path: Path) -> None:
    empty = tmp_path / "22222222-2222-3333-4444-555555555555.jsonl"
    empty.touch()
    gone = tmp_path / f"{SID}.jsonl"
    gone.write_text('{"type":"summary","summary":"x"}\n')
    transcripts = discover({"claude": [tmp_path]})
    gone.unlink()  # deleted between discovery and read
    report = index_transcripts(conn, config, transcripts)
    assert report.missing_files == 1 and report.files == 2
    assert any("disappeared" in w for w in report.warnings)
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1


def test_session_id_clash_keeps_both_files(conn, config: Config, tmp_path: Path) -> None:
    # Two real fixture files carry the same sessionId ("todowrite_session").
    shutil.copy(MISC / "edge_cases.jsonl", tmp_path / "edge_cases.jsonl")
    (tmp_path / "todo").mkdir()
    shutil.copy(MISC / "edge_cases.jsonl", tmp_path / "todo" / "edge_cases.jsonl")
    ingest_all(conn, config, tmp_path)
    ids = [r[0] for r in conn.execute("SELECT session_id FROM sessions ORDER BY session_id")]
    assert ids[0] == "edge_cases" and ids[1].startswith("edge_cases-")
    again = ingest_all(conn, config, tmp_path)
    assert again.files_changed == 0


def test_title_and_pr_links(conn, config: Config, tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / f"{SID}.jsonl", SID)
    simple_turn(session, "make the checkout faster", "done")
    transcript = claude.classify(session.path)
    ingest_transcript(conn, config, transcript)
    assert conn.execute("SELECT title FROM sessions").fetchone()[0] == "make the checkout faster"
    session.write(session.custom_title("Checkout speed-up"), session.pr_link(7))
    ingest_transcript(conn, config, transcript)
    assert conn.execute("SELECT title FROM sessions").fetchone()[0] == "Checkout speed-up"
    assert [tuple(r) for r in conn.execute("SELECT pr_number, repository FROM pr_links")] == [(7, "dev/shop")]


@pytest.mark.parametrize("name", ["tiny-conversation.jsonl", "short-conversation.jsonl"])
def test_real_misc_files_ingest(conn, config: Config, name: str) -> None:
    report = ingest_transcript(conn, config, claude.classify(MISC / name))
    assert report.status == "new" and report.turns >= 1 and report.bad_lines == 0


def test_slay_session_real(conn, config: Config) -> None:
    ingest_transcript(conn, config, claude.classify(SLAY))
    row = conn.execute("SELECT title, project_dir FROM sessions").fetchone()
    assert row["project_dir"] == "/Users/chloe/c/slay"
    assert row["title"] == "Set up dotfiles configuration"  # from the ai-title entry


def test_snapshot_only_session_has_no_turns(conn, config: Config) -> None:
    report = ingest_transcript(conn, config, claude.classify(MISC / "medium-conversation.jsonl"))
    assert report.lines == 23 and report.turns == 0
    assert conn.execute("SELECT title FROM sessions").fetchone()[0]  # its summary line names it


def test_file_signals_are_stored_relative_to_the_project(conn, config: Config, tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / f"{SID}.jsonl", SID, cwd="/home/dev/shop")
    session.write(session.snapshot("/home/dev/shop/src/cart.py", "README.md"))
    session.write(session.prompt("tidy @docs/guide.md and the cart"))
    session.write(
        session.assistant(
            tool_use("t1", "MultiEdit", file_path="/home/dev/shop/src/cart.py", edits=[{"old_string": "a"}]),
            tool_use("t2", "NotebookEdit", notebook_path="/home/dev/shop/nb/explore.ipynb", new_source="x"),
            tool_use("t3", "Glob", pattern="**/*.py", path="/home/dev/shop/tests"),
            tool_use("t4", "Read", file_path="/etc/hosts"),
        )
    )
    ingest_transcript(conn, config, claude.classify(session.path))
    mentions = {tuple(r) for r in conn.execute("SELECT file_path, tool_name FROM file_mentions")}
    assert mentions == {
        ("src/cart.py", "file_history_snapshot"),
        ("README.md", "file_history_snapshot"),
        ("docs/guide.md", "at_mention"),
        ("src/cart.py", "MultiEdit"),
        ("nb/explore.ipynb", "NotebookEdit"),
        ("tests", "Glob"),
        ("/etc/hosts", "Read"),
    }
    kinds = [tuple(r) for r in conn.execute("SELECT entry_type, kind FROM entries ORDER BY line_index")]
    assert kinds[0] == ("file-history-snapshot", "file_snapshot")
