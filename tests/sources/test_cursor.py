"""Cursor: chats exported to Markdown by SpecStory (real files from a public project, `tests/fixtures/cursor/`),
the agent's JSONL transcripts and the editor's `state.vscdb` (built here from their public descriptions: no
real one is available)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from agent_cli import index_json, search_sessions, sessions, turns
from corpus import SPECSTORY
from memex.sources import ADAPTERS, cursor, cursor_db, sqlite_read
from memex.sources.model import Entry

BACKLOG = SPECSTORY / "history" / "2025-04-28_16-22-backlog-task-inquiry.md"
SUMMARY = SPECSTORY / "history" / "2025-05-21_improve-mcp-error-handling.md"
COMPOSER = "5e12d300-1f90-4409-b098-1f5da9ca345d"


def good(path: Path) -> list[Entry]:
    return [e for _, e in cursor.read_entries(path) if isinstance(e, Entry)]


# --- SpecStory ---------------------------------------------------------------------------------------


def test_a_specstory_export_is_a_session_with_its_tools() -> None:
    transcript = cursor.classify(BACKLOG)
    assert transcript is not None and transcript.session_id.startswith("specstory-")
    assert cursor.classify(SUMMARY) is None  # a hand-written summary, not an export of a chat
    assert all(other.classify(BACKLOG) is None for name, other in ADAPTERS.items() if name != "cursor")
    entries = good(BACKLOG)
    header = entries[0]
    assert header.extra["title"] == "Backlog Task Inquiry" and header.timestamp is not None
    prompts = [e.text for e in entries if e.kind == "prompt"]
    assert prompts[:2] == ["what tasks are in the backlog? @minsky.mdc", "lets start working on #001"]
    tools = [(b.tool.name, b.tool.input) for e in entries for b in e.blocks if b.tool]
    assert ("run_terminal_cmd", {"command": "minsky tasks list --json"}) in tools
    assert ("read_file", {"path": "src/commands/session/start.ts"}) in tools
    assert ("codebase_search", {"query": "resolveRepoPath"}) in tools
    answer = next(e.text for e in entries if e.kind == "assistant" and e.text)
    assert answer.startswith("Here are the tasks currently in the backlog")  # the command's output left out


def test_specstory_exports_in_known_project_folders(run, tmp_path: Path) -> None:
    project = tmp_path / "minsky"
    shutil.copytree(SPECSTORY, project / ".specstory")
    pi_session = tmp_path / "pi-sessions" / "--minsky--" / "2026-11-23T21-15-46-019Z_0a.jsonl"
    pi_session.parent.mkdir(parents=True)
    header = {"type": "session", "version": 3, "id": "pi-1", "timestamp": "2026-11-23T21:00:00Z", "cwd": str(project)}
    pi_session.write_text(json.dumps(header) + "\n")
    index_json(run, "--all")
    [export] = sessions(run, "cursor").values()
    assert export["project_dir"] == str(project.resolve()) and export["title"] == "Backlog Task Inquiry"
    assert "Commands: `minsky tasks list --json`" in turns(run, export["session_id"])[0]["tool_summary"]


# --- agent transcripts -------------------------------------------------------------------------------


def _transcript(root: Path, project: Path) -> Path:
    """An agent transcript in Cursor's layout, in the shape its public descriptions give."""
    slug = str(project).strip("/").replace("/", "-")
    folder = root / slug / "agent-transcripts" / COMPOSER
    folder.mkdir(parents=True)
    lines = [
        {
            "role": "user",
            "message": {
                "content": [{"type": "text", "text": "<user_query>\nwhy does the cart round twice?\n</user_query>"}]
            },
        },
        {
            "role": "assistant",
            "message": {
                "content": [
                    {"type": "text", "text": "Let me read it."},
                    {"type": "tool_use", "name": "read_file", "input": {"target_file": str(project / "cart.py")}},
                ]
            },
        },
        {
            "role": "assistant",
            "message": {"content": [{"type": "text", "text": "It rounds per line and again at the end."}]},
        },
        {"type": "turn_ended"},
    ]
    path = folder / f"{COMPOSER}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    sub = folder / "subagents"
    sub.mkdir()
    (sub / "explore-1.jsonl").write_text(json.dumps(lines[0]) + "\n" + json.dumps(lines[2]) + "\n")
    return path


def test_agent_transcripts_their_project_and_subagents(run, tmp_path: Path) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    path = _transcript(tmp_path / "cursor-projects", project)
    found = cursor.discover([tmp_path / "cursor-projects"])
    assert [(t.session_id, t.subagent_id) for t in found] == [(COMPOSER, None), (COMPOSER, "explore-1")]
    assert [t.subagent_id for t in cursor.subagent_transcripts(path)] == ["explore-1"]
    entries = good(path)
    assert entries[0].cwd == str(project)  # `/tmp/…/shop` from its slug, checked on disk
    assert [e.text for e in entries if e.kind == "prompt"] == ["why does the cart round twice?"]
    index_json(run, "--all")
    listed = sessions(run, "cursor")[COMPOSER]
    assert listed["subagents"] == 1 and listed["project_dir"] == str(project)
    assert "Files: cart.py" in turns(run, COMPOSER)[0]["tool_summary"]
    assert search_sessions(run, "rounds per line", "cursor") == [COMPOSER]


# --- the editor's database ---------------------------------------------------------------------------


def _state_db(user: Path, project: Path) -> Path:
    """Cursor's `globalStorage/state.vscdb` with one chat, and a workspace database that lists it."""
    database = user / "globalStorage" / "state.vscdb"
    database.parent.mkdir(parents=True)
    conn = sqlite3.connect(database)
    conn.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    conn.execute("CREATE TABLE cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    composer = {
        "composerId": COMPOSER,
        "name": "Cart rounding",
        "createdAt": 1795400000000,
        "lastUpdatedAt": 1795400005000,
        "fullConversationHeadersOnly": [
            {"bubbleId": "b1", "type": 1},
            {"bubbleId": "b2", "type": 2},
            {"bubbleId": "b3", "type": 2},
        ],
    }
    bubbles = {
        "b1": {
            "bubbleId": "b1",
            "type": 1,
            "text": "why does the cart round twice?",
            "createdAt": "2026-11-20T10:00:00Z",
        },
        "b2": {
            "bubbleId": "b2",
            "type": 2,
            "text": "",
            "toolFormerData": {
                "name": "read_file",
                "params": json.dumps({"target_file": "cart.py"}),
                "result": json.dumps({"contents": "def total(): ..."}),
            },
        },
        "b3": {
            "bubbleId": "b3",
            "type": 2,
            "text": "It rounds per line and again at the end.",
            "thinking": {"text": "look at total()"},
        },
    }
    conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"composerData:{COMPOSER}", json.dumps(composer)))
    for bubble_id, bubble in bubbles.items():
        conn.execute(
            "INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:{COMPOSER}:{bubble_id}", json.dumps(bubble).encode())
        )
    conn.commit()
    conn.close()
    workspace = user / "workspaceStorage" / "a1b2c3"
    workspace.mkdir(parents=True)
    (workspace / "workspace.json").write_text(json.dumps({"folder": f"file://{project}"}))
    listed = sqlite3.connect(workspace / "state.vscdb")
    listed.execute("CREATE TABLE ItemTable (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)")
    listed.execute(
        "INSERT INTO ItemTable VALUES ('composer.composerData', ?)",
        (json.dumps({"allComposers": [{"composerId": COMPOSER}]}),),
    )
    listed.commit()
    listed.close()
    return database


def test_chats_in_the_editors_database(run, tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    database = _state_db(tmp_path / "Cursor" / "User", project)
    [chat] = cursor.discover([database])
    assert chat.path == sqlite_read.synthetic(database, COMPOSER) and cursor_db.fingerprint(chat.path)[1] > 0
    entries = good(chat.path)
    assert (entries[0].extra["title"], entries[0].cwd) == ("Cart rounding", str(project))
    assert [e.kind for e in entries] == ["title", "prompt", "assistant", "assistant"]
    assert [b.tool.input for e in entries for b in e.blocks if b.tool] == [{"target_file": "cart.py"}]
    monkeypatch.setenv("MEMEX_CURSOR_STATE_DB", str(database))
    report = index_json(run, "--all")
    assert report["sessions"] == 1 and report["refused"] == []
    listed = sessions(run, "cursor")[COMPOSER]
    assert (listed["title"], listed["project_dir"]) == ("Cart rounding", str(project))
    assert "Files: cart.py" in turns(run, COMPOSER)[0]["tool_summary"]
    assert index_json(run, "--all")["files_changed"] == 0
    conn = sqlite3.connect(database)  # the chat goes on
    bubble = {"bubbleId": "b4", "type": 1, "text": "round once at the end then"}
    conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:{COMPOSER}:b4", json.dumps(bubble)))
    conn.execute(
        "UPDATE cursorDiskKV SET value = json_set(value, '$.lastUpdatedAt', 1795400009000, "
        '\'$.fullConversationHeadersOnly[#]\', json(\'{"bubbleId": "b4", "type": 1}\')) WHERE key = ?',
        (f"composerData:{COMPOSER}",),
    )
    conn.commit()
    conn.close()
    assert index_json(run, "--all")["files_changed"] == 1
    assert [t["prompt_text"] for t in turns(run, COMPOSER)] == [
        "why does the cart round twice?",
        "round once at the end then",
    ]


def test_exports_show_ids_that_tell_them_apart_and_find_them(run, tmp_path: Path) -> None:
    """Every SpecStory session id starts `specstory-`: shown as its first 8 characters, all would read
    `specstor`. They show with their name and 8 more, and that short form finds the session."""
    project = tmp_path / "minsky"
    shutil.copytree(SPECSTORY, project / ".specstory")
    history = project / ".specstory" / "history"
    export = history / "2025-04-28_16-22-backlog-task-inquiry.md"
    shutil.copy(export, history / "2025-04-29_09-00-backlog-task-inquiry-again.md")
    index_json(run, project)
    listed = run("sessions", "list", "--agent", "cursor", "--no-pager")
    assert listed.exit_code == 0
    ids = list(sessions(run, "cursor"))
    shown = [line.split()[0] for line in listed.stdout.splitlines() if line.split() and line.split()[0] in str(ids)]
    assert len(ids) == 2 and len(set(shown)) == 2 and all(s.startswith("specstory-") and len(s) == 18 for s in shown)
    for short in shown:
        assert run("show", short, "--json").exit_code == 0
