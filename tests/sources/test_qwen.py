"""Qwen Code 0.24.4 chats (real files, `tests/fixtures/live/qwen-code-0.24.4/`): Gemini-shaped parts in
Claude-shaped lines, `--continue` appending, a background subagent reporting through a notification."""

from __future__ import annotations

import shutil
from pathlib import Path

from agent_cli import index_json, mirror, search_sessions, sessions, turns
from corpus import LIVE_QWEN
from memex.sources import claude, codex, gemini, qwen
from memex.sources.model import Entry

PROJECT = LIVE_QWEN / "-home-dev-proj"
TASK_ID = "6e94d801-06cf-42d7-9f76-5b2d054ef878"
TASK = PROJECT / "chats" / f"{TASK_ID}.jsonl"
READ = PROJECT / "chats" / "3ff88b56-9d0b-438b-a3a1-8addfce76376.jsonl"
SUBAGENT = "general-purpose-call_8242c84d71f24081a7ef"
SUBAGENT_FILE = PROJECT / "subagents" / TASK_ID / f"agent-{SUBAGENT}.jsonl"


def good(path: Path) -> list[Entry]:
    return [e for _, e in qwen.read_entries(path) if isinstance(e, Entry)]


def test_chats_and_subagents_are_qwens_alone() -> None:
    found = qwen.discover([LIVE_QWEN])
    assert [(t.session_id[:8], t.subagent_id) for t in found] == [
        ("3ff88b56", None),
        ("6e94d801", None),
        ("8ee74a30", None),
        ("6e94d801", SUBAGENT),
    ]
    assert (found[-1].agent_type, found[-1].description) == ("general-purpose", "List project files")
    assert [t.path for t in qwen.subagent_transcripts(TASK)] == [SUBAGENT_FILE]
    for path in (TASK, SUBAGENT_FILE):  # Claude-like lines: Claude, Codex and Gemini leave them alone
        assert claude.classify(path) is None and codex.classify(path) is None and gemini.classify(path) is None


def test_prompts_tools_and_a_continued_chat() -> None:
    entries = good(READ)
    assert [e.text for e in entries if e.kind == "prompt"] == [
        "MOCK-READ README.md then list the folder",
        "Thanks. Now summarise what you found in one line.",
    ]
    tools = [b.tool for e in entries for b in e.blocks if b.tool]
    assert [t.name for t in tools] == ["read_file", "run_shell_command"]
    assert tools[0].input["file_path"] == "/home/dev/proj/README.md"
    assert tools[1].input["command"] == "ls"
    results = [b for e in entries if e.kind == "tool_result" for b in e.blocks]
    assert results[0].tool_use_id == tools[0].id
    assert entries[0].cwd == "/home/dev/proj" and entries[0].version == "0.24.4"
    assert not [e for e in entries if e.unknown]


def test_the_background_subagents_notification_is_its_report_not_a_prompt() -> None:
    entries = good(TASK)
    assert [e.text for e in entries if e.kind == "prompt"] == ["MOCK-TASK delegate listing the folder to a subagent"]
    reports = [e for e in entries if e.extra.get("report_of")]
    assert [(e.kind, e.text) for e in reports] == [
        (
            "assistant",
            'Subagent "List project files" reported: Subagent report: the folder holds notes.md, app.py and README.md.',
        )
    ]
    sub = good(SUBAGENT_FILE)
    assert all(e.is_sidechain and e.agent_id == SUBAGENT for e in sub)
    assert next(e.text for e in sub if e.kind == "prompt").startswith("SUBAGENT-TASK:")


def test_index_show_search_end_to_end(run) -> None:
    report = index_json(run, LIVE_QWEN)
    assert (report["sessions"], report["subagents"], report["bad_lines"]) == (3, 1, 0)
    listed = sessions(run, "qwen")
    assert listed[TASK_ID]["subagents"] == 1 and listed[TASK_ID]["project_dir"] == "/home/dev/proj"
    shown = turns(run, TASK_ID)
    assert [t["agent_id"] for t in shown] == ["", SUBAGENT]
    assert "Commands: `ls -la`" in shown[1]["tool_summary"]
    read = turns(run, "3ff88b56")
    assert "Files: README.md" in read[0]["tool_summary"]
    assert 'Subagent "List project files" reported' in mirror(run, TASK_ID)
    assert search_sessions(run, "summarise what you found", "qwen") == ["3ff88b56-9d0b-438b-a3a1-8addfce76376"]


def test_a_subagent_file_given_by_hand_joins_its_session(tmp_path: Path) -> None:
    copy = tmp_path / "agent-x.jsonl"
    shutil.copy(SUBAGENT_FILE, copy)
    transcript = qwen.classify(copy)
    assert (transcript.session_id, transcript.subagent_id) == (TASK_ID, SUBAGENT)
