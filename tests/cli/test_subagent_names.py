"""Subagents by name wherever a person reads them: `memex show` (its header and `--turns`), search results
(the terminal's and `--json`), `sessions list` and the recall header, on the real transcripts of Claude Code
(agentType and description from `agent-<id>.meta.json`), Codex (the spawned agent's nickname), Gemini (the
agent the parent invoked) and Cline (no name: the id alone, as before)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus import LIVE_CLAUDE, LIVE_CLINE, LIVE_CODEX, LIVE_GEMINI
from memex.context.render import header
from memex.store.queries import turns_by_ids

CLAUDE = "322e6fc1-933c-4088-b825-a0b12dac4c7a"
CLAUDE_SUB = '[Subagent: general-purpose "List project files" (a6464d481e77bfaa0)]'
CODEX = "01a209d0-f96a-7271-b275-d9f0c96d0cf5"
CODEX_SUB = "[Subagent: Laplace (01a209d0-fa7c-7962-b6c3-548f6f302da0)]"
GEMINI = "9edcc6b6-9cae-4e8a-98e8-3b3ba6dbef3e"
GEMINI_SUB = "[Subagent: generalist (44469b4c-2fa4-4a90-b28d-088445068035)]"
CLINE = "1795468856782_epoob"
CLINE_SUB = "[Subagent: agent_1795468857262_w5xwp5]"  # Cline calls every one "subagent": no name to show


@pytest.fixture
def indexed(home: Path, run) -> Path:
    for folder in (LIVE_CLAUDE, LIVE_CODEX, LIVE_GEMINI, LIVE_CLINE):
        assert run("index", "--no-embed", str(folder)).exit_code == 0, folder
    return home


def test_show_names_the_subagents_under_its_header_and_on_their_turns(run, indexed: Path) -> None:
    for session, label in ((CLAUDE, CLAUDE_SUB), (CODEX, CODEX_SUB), (GEMINI, GEMINI_SUB), (CLINE, CLINE_SUB)):
        shown = run("show", session[:13])
        assert shown.exit_code == 0
        lines = shown.stdout.splitlines()
        assert "1 subagent (--turns shows them)" in lines[1] and lines[2] == "  " + label, session
        turns = run("show", session[:13], "--turns").stdout
        assert turns.count(label) == 2, session  # under the header, and on the subagent's turn
        assert any(line.startswith("turn ") and label in line for line in turns.splitlines()), session


def test_show_turns_json_names_each_subagent_turn(run, indexed: Path) -> None:
    turns = json.loads(run("show", CLAUDE, "--turns", "--json").stdout)["turns"]
    named = {(t["agent_id"], t["subagent_name"], t["subagent_description"]) for t in turns}
    assert named == {("", None, None), ("a6464d481e77bfaa0", "general-purpose", "List project files")}


def test_search_results_name_the_subagent_of_a_hit(run, indexed: Path) -> None:
    hits = json.loads(run("search", "SUBAGENT-TASK list the files", "--mode", "lexical", "--json").stdout)
    names = {hit["session_id"]: (hit["subagent_name"], hit["subagent_description"]) for hit in hits if hit["agent_id"]}
    assert names[CLAUDE] == ("general-purpose", "List project files")
    assert names[CODEX] == ("Laplace", None)
    assert names[GEMINI] == ("generalist", None)
    assert names[CLINE] == ("subagent", None)  # as Cline recorded it
    main = json.loads(run("search", "zebra token rotation", "--mode", "lexical", "--json").stdout)
    assert main and all(h["subagent_name"] is None for h in main if not h["agent_id"])
    text = run("search", "SUBAGENT-TASK list the files", "--mode", "lexical").stdout
    for label in (CLAUDE_SUB, CODEX_SUB, GEMINI_SUB, CLINE_SUB):
        assert label in text


def test_sessions_list_names_the_subagents(run, indexed: Path) -> None:
    listed = {s["session_id"]: s for s in json.loads(run("sessions", "list", "--json", "--limit", "50").stdout)}
    assert (listed[CLAUDE]["subagents"], listed[CLAUDE]["subagent_names"]) == (1, ["general-purpose"])
    assert listed[CODEX]["subagent_names"] == ["Laplace"] and listed[CLINE]["subagent_names"] == ["subagent"]
    assert listed["e1cbd8a0-0bea-47bf-bd56-745e54160fdf"]["subagent_names"] == []  # no subagent
    table = run("sessions", "list", "--limit", "50").stdout
    assert "(+1 subagent: Laplace)" in table and "(+1 subagent: generalist)" in table
    assert "(+1 subagent)" in table  # Cline's: no name worth showing


def test_recall_header_names_the_subagent(indexed: Path, conn) -> None:
    ids = [r[0] for r in conn.execute("SELECT id FROM turns WHERE session_id = ? AND agent_id != ''", (CLAUDE,))]
    turns = turns_by_ids(conn, ids)
    assert ids and all(header(turn).endswith(" " + CLAUDE_SUB) for turn in turns.values())


def test_the_file_history_injection_names_the_subagent_that_touched_the_file(indexed: Path) -> None:
    """PreToolUse's earlier turns on a file: a subagent's turn is named as in every other injection."""
    from memex.api import Memex
    from memex.config import load_config
    from memex.store.db import connect

    config = load_config({"MEMEX_HOME": str(indexed)})
    conn = connect(config.db_path)
    try:
        (turn_id,) = conn.execute("SELECT id FROM turns WHERE session_id = ? AND agent_id != ''", (CLAUDE,)).fetchone()
        # The fixture's subagent only listed files: say it read one (the row its Read call would write).
        conn.execute(
            "INSERT INTO file_mentions (turn_id, session_id, file_path, tool_name) VALUES (?, ?, 'notes.md', 'Read')",
            (turn_id, CLAUDE),
        )
        conn.commit()
        injected = Memex(config, conn).file_context("/home/dev/proj/notes.md", session_id="another").text
    finally:
        conn.close()
    assert CLAUDE_SUB in injected


def test_show_turns_numbers_turns_as_the_sessions_list_counts_them(run, indexed: Path) -> None:
    """The main agent's turns are 1…n, as `sessions list` counts them, and a subagent's are its own: the
    subagent's turn between the main agent's second and third took number 3 and made the last one n + 1."""
    listed = {s["session_id"]: s["turns"] for s in json.loads(run("sessions", "list", "--json").stdout)}
    lines = [line for line in run("show", CLAUDE[:13], "--turns").stdout.splitlines() if line.startswith("turn ")]
    main = [int(line.split()[1]) for line in lines if "[Subagent:" not in line]
    assert main == list(range(1, listed[CLAUDE] + 1))
    assert [int(line.split()[1]) for line in lines if CLAUDE_SUB in line] == [1]
