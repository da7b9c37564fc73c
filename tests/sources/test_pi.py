"""Pi 0.73.1 sessions (real files, `tests/fixtures/live/pi-0.73.1/`): a session header, tree-linked
messages, `read` and `bash` tools, `-c` appending to the same file."""

from __future__ import annotations

import json
from pathlib import Path

from agent_cli import index_json, search_sessions, sessions, turns
from corpus import LIVE_PI
from memex.sources import claude, codex, copilot, pi, qwen
from memex.sources.model import Entry

FOLDER = LIVE_PI / "--home-dev-proj--"
PLAIN = FOLDER / "2026-11-23T21-15-46-019Z_01a20a43-cfe2-774c-a0a6-0a47c7a1939c.jsonl"
READ = FOLDER / "2026-11-23T21-15-47-723Z_01a20a43-d68b-756a-b2da-442f90eab4f9.jsonl"
READ_ID = "01a20a43-d68b-756a-b2da-442f90eab4f9"


def good(path: Path) -> list[Entry]:
    return [e for _, e in pi.read_entries(path) if isinstance(e, Entry)]


def test_sessions_are_found_by_their_header_and_no_other_agent_claims_them() -> None:
    assert [t.session_id for t in pi.discover([LIVE_PI])] == ["01a20a43-cfe2-774c-a0a6-0a47c7a1939c", READ_ID]
    for other in (claude, codex, copilot, qwen):
        assert other.classify(READ) is None
    assert pi.subagent_transcripts(READ) == []


def test_prompts_tools_and_results() -> None:
    entries = good(READ)
    assert entries[0].cwd == "/home/dev/proj" and entries[0].session_id == READ_ID
    assert [e.text for e in entries if e.kind == "prompt"] == [
        "MOCK-READ README.md then list the folder",
        "Thanks. Now summarise what you found in one line.",
    ]
    tools = [b.tool for e in entries for b in e.blocks if b.tool]
    assert [(t.name, t.paths) for t in tools] == [("read", ["/home/dev/proj/README.md"]), ("bash", [])]
    assert tools[1].input["command"] == "ls"
    results = [b for e in entries if e.kind == "tool_result" for b in e.blocks]
    assert [r.tool_use_id for r in results] == [t.id for t in tools]
    assert not [e for e in entries if e.unknown]


def test_a_title_a_compaction_and_a_users_command(tmp_path: Path) -> None:
    lines = PLAIN.read_text().splitlines()
    extra = [
        {
            "type": "session_info",
            "id": "a1",
            "parentId": "32a75e33",
            "timestamp": "2026-11-23T21:16:00Z",
            "name": "Greeter",
        },
        {
            "type": "compaction",
            "id": "a2",
            "parentId": "a1",
            "timestamp": "2026-11-23T21:17:00Z",
            "summary": "The user asked what the project does.",
            "firstKeptEntryId": "a1",
            "tokensBefore": 900,
        },
        {
            "type": "message",
            "id": "a3",
            "parentId": "a2",
            "timestamp": "2026-11-23T21:18:00Z",
            "message": {"role": "bashExecution", "command": "ls", "output": "app.py", "exitCode": 0},
        },
        {"type": "hologram", "id": "a4", "parentId": "a3", "timestamp": "2026-11-23T21:19:00Z"},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(lines + [json.dumps(e) for e in extra]) + "\n")
    entries = {e.uuid: e for e in good(path)}
    assert entries["a1"].kind == "title" and entries["a1"].extra["title"] == "Greeter"
    assert entries["a2"].kind == "compact_summary"
    assert (entries["a3"].kind, entries["a3"].text) == ("user_meta", "$ ls\napp.py")
    assert entries["a4"].unknown


def test_index_show_search_end_to_end(run, tmp_path: Path) -> None:
    report = index_json(run, LIVE_PI)
    assert (report["sessions"], report["bad_lines"]) == (2, 0)
    listed = sessions(run, "pi")
    assert listed[READ_ID]["title"] == "MOCK-READ README.md then list the folder"
    assert listed[READ_ID]["project_dir"] == "/home/dev/proj"
    shown = turns(run, READ_ID)
    assert len(shown) == 2 and "Files: README.md" in shown[0]["tool_summary"]
    assert search_sessions(run, "summarise what you found", "pi") == [READ_ID]
