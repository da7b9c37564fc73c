"""GitHub Copilot CLI 1.0.102 sessions (real files, `tests/fixtures/live/copilot-1.0.102/`): events.jsonl,
a resumed session, a subagent whose events are inline in its parent's file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from agent_cli import index_json, search_sessions, sessions, sessions_by_agent, turns
from corpus import LIVE_COPILOT
from memex.config import load_config
from memex.ingest.indexer import default_roots
from memex.sources import copilot, stream_entries
from memex.sources.model import Entry

TASK = LIVE_COPILOT / "454f9272-7e41-4653-9935-859f48cbe18e" / "events.jsonl"
READ = LIVE_COPILOT / "32855b55-ad6d-43a1-80bd-226152da2501" / "events.jsonl"
PLAIN = LIVE_COPILOT / "f00a6c5f-49d3-446f-bb3b-2d52405378db" / "events.jsonl"
SUBAGENT = "47b32c80-97b8-4351-8259-94c7f55b3409"


def good(path: Path, subagent: str | None = None) -> list[Entry]:
    transcript = copilot.classify(path)
    assert transcript is not None
    transcript.subagent_id = subagent
    return [e for _, e in stream_entries(transcript, 0, 0) if isinstance(e, Entry)]


def test_sessions_and_their_inline_subagent_are_found() -> None:
    found = copilot.discover([LIVE_COPILOT])
    assert [(t.session_id[:8], t.subagent_id) for t in found] == [
        ("32855b55", None),
        ("454f9272", None),
        ("f00a6c5f", None),
        ("454f9272", SUBAGENT),
    ]
    sub = found[-1]
    assert (sub.path, sub.agent_type, sub.description) == (TASK, "general-purpose", "List project files")
    assert copilot.subagent_transcripts(READ) == []


def test_the_subagents_task_is_its_prompt_not_the_sessions() -> None:
    main = good(TASK)
    assert [e.text for e in main if e.kind == "prompt"] == ["MOCK-TASK delegate listing the folder to a subagent"]
    assert not [e for e in main if e.agent_id]
    reports = [b.text for e in main for b in e.blocks if b.kind == "text" and b.text.startswith("Subagent")]
    assert reports == [
        'Subagent "List project files" reported: Subagent report: the folder holds notes.md, app.py and README.md.'
    ]
    sub = good(TASK, SUBAGENT)
    assert [e.text for e in sub if e.kind == "prompt"] == [
        "SUBAGENT-TASK: list the files of the working folder /home/dev/proj and report them."
    ]
    assert all(e.is_sidechain for e in sub)
    assert [b.tool.input["command"] for e in sub for b in e.blocks if b.tool] == ["ls -la"]


def test_tools_name_their_files_and_a_resume_continues_the_session() -> None:
    entries = good(READ)
    tools = [b.tool for e in entries for b in e.blocks if b.tool]
    assert [(t.name, t.id) for t in tools] == [
        ("view", "call_3e2f39bf74364363ba9d"),
        ("bash", "call_a896fa1aa92646189d57"),
    ]
    assert tools[0].paths == ["/home/dev/proj/README.md"]
    results = [e for e in entries if e.kind == "tool_result"]
    assert results[0].blocks[0].tool_use_id == "call_3e2f39bf74364363ba9d"
    assert results[0].blocks[0].text.startswith("# Greeter demo")
    assert [e.text for e in entries if e.kind == "prompt"] == [
        "MOCK-READ README.md then list the folder",
        "Thanks. Now summarise what you found in one line.",
    ]
    assert entries[0].cwd == "/home/dev/proj" and entries[0].version == "1.0.102"
    assert not [e.entry_type for e in entries if e.unknown]


def test_index_show_search_stats_end_to_end(run, tmp_path: Path) -> None:
    report = index_json(run, LIVE_COPILOT)
    assert (report["sessions"], report["subagents"], report["bad_lines"]) == (3, 1, 0)
    listed = sessions(run, "copilot")
    task = listed["454f9272-7e41-4653-9935-859f48cbe18e"]
    assert (task["project_dir"], task["subagents"], task["title"]) == (
        "/home/dev/proj",
        1,
        "MOCK-TASK delegate listing the folder to a subagent",
    )
    shown = turns(run, task["session_id"])
    assert [(t["agent_id"], t["prompt_text"][:13]) for t in shown] == [
        ("", "MOCK-TASK del"),
        (SUBAGENT, "SUBAGENT-TASK"),
    ]
    read = turns(run, "32855b55")
    assert "Files: README.md" in read[0]["tool_summary"] and "Commands: `ls`" in read[0]["tool_summary"]
    assert search_sessions(run, "summarise what you found", "copilot") == ["32855b55-ad6d-43a1-80bd-226152da2501"]
    assert search_sessions(run, "summarise what you found", "claude") == []
    assert sessions_by_agent(run) == {"copilot": 3}
    assert index_json(run, LIVE_COPILOT)["files_changed"] == 0  # nothing changed: nothing read


def test_a_session_appended_to_is_read_from_where_it_stopped(run, tmp_path: Path) -> None:
    folder = tmp_path / "session-state" / READ.parent.name
    folder.mkdir(parents=True)
    lines = READ.read_bytes().splitlines(keepends=True)
    (folder / "events.jsonl").write_bytes(b"".join(lines[:20]))  # up to the first shutdown
    index_json(run, folder / "events.jsonl")
    assert [t["prompt_text"] for t in turns(run, "32855b55")] == ["MOCK-READ README.md then list the folder"]
    with (folder / "events.jsonl").open("ab") as handle:
        handle.write(b"".join(lines[20:]))
    assert index_json(run, folder / "events.jsonl")["files_changed"] == 1
    assert len(turns(run, "32855b55")) == 2
    stored = json.loads(run("stats", "--json").stdout)["entries"]
    assert stored == len(good(READ))  # each event once: the part read before was not stored twice


def test_copilot_home_moves_the_default_folder(tmp_path: Path) -> None:
    config = load_config({"MEMEX_HOME": str(tmp_path / "memex")})
    assert default_roots(config, ["copilot"], env={})["copilot"] == [Path("~/.copilot/session-state").expanduser()]
    moved = default_roots(config, ["copilot"], env={"COPILOT_HOME": str(tmp_path / "cp")})
    assert moved["copilot"] == [tmp_path / "cp" / "session-state"]
    pinned = load_config({"MEMEX_HOME": str(tmp_path / "memex"), "MEMEX_COPILOT_DIR": str(tmp_path / "x")})
    assert default_roots(pinned, ["copilot"], env={"COPILOT_HOME": "/elsewhere"})["copilot"] == [tmp_path / "x"]


def test_a_file_given_by_hand_is_recognised_by_its_first_event(tmp_path: Path) -> None:
    renamed = tmp_path / "copied.jsonl"
    shutil.copy(PLAIN, renamed)
    assert copilot.classify(renamed).session_id == "f00a6c5f-49d3-446f-bb3b-2d52405378db"
    assert copilot.classify(tmp_path / "missing.jsonl") is None
