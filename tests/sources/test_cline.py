"""Cline CLI 3.0.65 sessions (real files, `tests/fixtures/live/cline-3.0.65/`) and the Cline and Roo Code
editor extensions' tasks (built here from the extension's public message types: no real task is available)."""

from __future__ import annotations

import json
from pathlib import Path

from agent_cli import index_json, mirror, search_sessions, sessions, turns
from corpus import LIVE_CLINE
from memex.sources import claude, cline, codex, copilot, gemini, kimi, pi, qwen, roo
from memex.sources.model import Entry

TASK_ID = "1795468856782_epoob"
TASK = LIVE_CLINE / TASK_ID / f"{TASK_ID}.messages.json"
SUBAGENT = LIVE_CLINE / TASK_ID / "agent_1795468857262_w5xwp5.messages.json"
READ = LIVE_CLINE / "1795468326054_owpbz" / "1795468326054_owpbz.messages.json"
ENVIRONMENT = (
    "<environment_details>\n# Current Working Directory (/home/dev/shop) Files\ncart.py\n</environment_details>"
)


def good(source, path: Path) -> list[Entry]:
    return [e for _, e in source.read_entries(path) if isinstance(e, Entry)]


def test_cli_sessions_and_subagents_are_clines_alone() -> None:
    found = cline.discover([LIVE_CLINE])
    assert [(t.session_id, t.subagent_id) for t in found] == [
        ("1795468321042_wkoxj", None),
        ("1795468326054_owpbz", None),
        (TASK_ID, None),
        (TASK_ID, "agent_1795468857262_w5xwp5"),
    ]
    assert [t.path for t in cline.subagent_transcripts(TASK)] == [SUBAGENT]
    for path in (TASK, SUBAGENT, TASK.with_name(f"{TASK_ID}.json")):
        assert all(other.classify(path) is None for other in (claude, codex, copilot, kimi, pi, qwen, roo))
    assert gemini.classify(TASK) is None
    assert cline.classify(TASK.with_name(f"{TASK_ID}.json")) is None  # the metadata beside it


def test_cli_prompts_tools_and_a_resumed_session() -> None:
    entries = good(cline, READ)
    header = entries[0]
    assert (header.cwd, header.version, header.extra["title"]) == (
        "/home/dev/proj",
        "3.0.65",
        "MOCK-READ README.md then list the folder",
    )
    assert [e.text for e in entries if e.kind == "prompt"] == [
        "MOCK-READ README.md then list the folder",
        "Thanks. Now summarise what you found in one line.",
    ]
    tools = [b.tool for e in entries for b in e.blocks if b.tool]
    assert [(t.name, t.paths, t.input.get("command")) for t in tools] == [
        ("read_files", ["/home/dev/proj/README.md"], None),
        ("run_commands", [], "ls"),
    ]
    results = [b for e in entries if e.kind == "tool_result" for b in e.blocks]
    assert [r.tool_use_id for r in results] == [t.id for t in tools]


def test_index_show_search_end_to_end(run) -> None:
    report = index_json(run, LIVE_CLINE)
    assert (report["sessions"], report["subagents"], report["bad_lines"]) == (3, 1, 0)
    listed = sessions(run, "cline")
    assert listed[TASK_ID]["subagents"] == 1 and listed[TASK_ID]["project_dir"] == "/home/dev/proj"
    assert [t["agent_id"] for t in turns(run, TASK_ID)] == ["", "agent_1795468857262_w5xwp5"]
    assert "Files: README.md" in turns(run, "1795468326054_owpbz")[0]["tool_summary"]
    assert search_sessions(run, "summarise what you found", "cline") == ["1795468326054_owpbz"]


def test_a_subagents_answer_is_its_report_in_the_parents_conversation(run) -> None:
    """The `spawn_agent` call's result holds the subagent's answer (`{"text": …, "iterations": …}`): it
    reads as the subagent's report in the parent's conversation, as every other agent's does (it was tool
    output alone: `memex show`, the export and the mirror never said what the subagent found)."""
    entries = good(cline, TASK)
    [report] = [e for e in entries if any(b.kind == "tool_result" for b in e.blocks)]
    assert report.kind == "assistant"
    answer = "Subagent report: the folder holds notes.md, app.py and README.md."
    assert report.blocks[-1].text == f"Subagent reported: {answer}"
    index_json(run, LIVE_CLINE)
    assert "Subagent reported: Subagent report: the folder holds notes.md" in mirror(run, TASK_ID)
    assert "Subagent reported" in run("export", TASK_ID, "--format", "md").stdout
    assert all("reported" not in e.text for e in good(cline, READ))  # other tools' results stay tool output


def _task(folder: Path, ui: bool = True) -> Path:
    """A Cline extension task: the user's request, a file read, a command, the answer, feedback."""
    folder.mkdir(parents=True)
    ui_messages = [
        {"ts": 1795400000000, "type": "say", "say": "task", "text": "Why is the cart total off by a cent?"},
        {"ts": 1795400000100, "type": "say", "say": "api_req_started", "text": json.dumps({"request": ENVIRONMENT})},
        {"ts": 1795400000200, "type": "say", "say": "text", "text": "Let me read the cart."},
        {
            "ts": 1795400000300,
            "type": "say",
            "say": "tool",
            "text": json.dumps({"tool": "readFile", "path": "cart.py"}),
        },
        {"ts": 1795400000400, "type": "ask", "ask": "command", "text": "pytest tests/test_cart.py"},
        {"ts": 1795400000500, "type": "say", "say": "command_output", "text": "1 failed"},
        {"ts": 1795400000600, "type": "say", "say": "completion_result", "text": "Rounding happens per line."},
        {"ts": 1795400000700, "type": "say", "say": "user_feedback", "text": "Round once at the end instead."},
        {"ts": 1795400000800, "type": "say", "say": "text", "text": "partial", "partial": True},
    ]
    history = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"<task>\nWhy is the cart total off by a cent?\n</task>\n{ENVIRONMENT}"}
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "<read_file>\n<path>cart.py</path>\n</read_file>"}]},
        {"role": "user", "content": [{"type": "text", "text": "[read_file for 'cart.py'] Result:\ndef total(): ..."}]},
        {"role": "assistant", "content": "Rounding happens per line."},
    ]
    (folder / "api_conversation_history.json").write_text(json.dumps(history))
    if ui:
        (folder / "ui_messages.json").write_text(json.dumps(ui_messages))
    return folder


def test_an_extension_task_is_read_from_its_ui_messages(tmp_path: Path) -> None:
    storage = tmp_path / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks"
    task = _task(storage / "1795400000000")
    assert [(t.session_id, t.path.name) for t in cline.discover([storage])] == [("1795400000000", "ui_messages.json")]
    entries = good(cline, task / "ui_messages.json")
    assert [e.text for e in entries if e.kind == "prompt"] == [
        "Why is the cart total off by a cent?",
        "Round once at the end instead.",
    ]
    assert next(e.cwd for e in entries if e.cwd) == "/home/dev/shop"
    tools = [b.tool for e in entries for b in e.blocks if b.tool]
    assert [(t.name, t.input.get("path"), t.input.get("command")) for t in tools] == [
        ("readFile", "cart.py", None),
        ("execute_command", None, "pytest tests/test_cart.py"),
    ]
    assert [e.text for e in entries if e.kind == "assistant" and e.text] == [
        "Let me read the cart.",
        "Rounding happens per line.",
    ]
    assert roo.classify(task / "ui_messages.json") is None


def test_without_ui_messages_the_api_history_is_read(tmp_path: Path) -> None:
    task = _task(tmp_path / "tasks" / "1795400000001", ui=False)
    [found] = cline.discover([tmp_path])
    assert found.path == task / "api_conversation_history.json"
    entries = good(cline, found.path)
    assert [e.text for e in entries if e.kind == "prompt"] == ["Why is the cart total off by a cent?"]
    assert [e.kind for e in entries] == ["prompt", "assistant", "tool_result", "assistant"]
    assert entries[0].cwd == "/home/dev/shop"


def test_roo_code_tasks_are_roos(run, tmp_path: Path) -> None:
    storage = tmp_path / "Code" / "User" / "globalStorage" / "rooveterinaryinc.roo-cline" / "tasks"
    task = _task(storage / "roo-task-1")
    assert cline.classify(task / "ui_messages.json") is None
    assert [t.agent for t in roo.discover([storage])] == ["roo"]
    index_json(run, storage)
    listed = sessions(run, "roo")
    assert listed["roo-task-1"]["project_dir"] == "/home/dev/shop"
    assert listed["roo-task-1"]["title"] == "Why is the cart total off by a cent?"
    assert "Files: cart.py" in turns(run, "roo-task-1")[0]["tool_summary"]
