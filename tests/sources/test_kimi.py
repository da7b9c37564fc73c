"""Kimi Code 2.1.0 and the legacy Kimi CLI 1.52.0 (real files, `tests/fixtures/live/kimi-*`): event logs
(`wire.jsonl`) of both generations, a resumed session, a subagent with its own log."""

from __future__ import annotations

import shutil
from pathlib import Path

from agent_cli import index_json, mirror, search_sessions, sessions, turns
from corpus import LIVE_KIMI_CODE, LIVE_KIMI_LEGACY
from memex.config import load_config
from memex.ingest.indexer import default_roots
from memex.sources import claude, codex, copilot, kimi, pi, qwen
from memex.sources.model import Entry

CODE = LIVE_KIMI_CODE / "sessions" / "wd_proj_2431e3d5fe7b"
TASK_ID = "19ff11c8-2185-47a9-8eae-7bc4576547e5"
TASK = CODE / f"session_{TASK_ID}" / "agents" / "main" / "wire.jsonl"
SUBAGENT = CODE / f"session_{TASK_ID}" / "agents" / "agent-0" / "wire.jsonl"
RESUMED = CODE / "session_7dcd9254-a6ff-4a51-b2c0-cb126d79ee14" / "agents" / "main" / "wire.jsonl"
LEGACY = LIVE_KIMI_LEGACY / "sessions" / "5f46847a703f071edc3c2779e8e80489"
LEGACY_READ = LEGACY / "4b3c9a79-9e83-4699-8010-b526e91d84c2" / "wire.jsonl"


def good(path: Path) -> list[Entry]:
    return [e for _, e in kimi.read_entries(path) if isinstance(e, Entry)]


def test_both_generations_are_found_and_no_other_agent_claims_them() -> None:
    found = kimi.discover([LIVE_KIMI_CODE, LIVE_KIMI_LEGACY])
    assert sorted((t.session_id[:8], t.subagent_id or "") for t in found) == [
        ("0c6c39ea", ""),
        ("19ff11c8", ""),
        ("19ff11c8", "agent-0"),
        ("4b3c9a79", ""),
        ("5fa556a8", ""),
        ("7dcd9254", ""),
    ]
    assert found[-1].subagent_id == "agent-0" and found[-1].agent_type == "coder"
    assert [t.path for t in kimi.subagent_transcripts(TASK)] == [SUBAGENT]
    for path in (TASK, LEGACY_READ, LEGACY_READ.with_name("context.jsonl")):
        assert all(other.classify(path) is None for other in (claude, codex, copilot, qwen, pi))
    assert kimi.classify(LEGACY_READ.with_name("context.jsonl")) is None


def test_kimi_code_prompts_tools_and_a_resumed_session() -> None:
    entries = good(RESUMED)
    assert entries[0].cwd == "/home/dev/proj"
    assert [e.text for e in entries if e.kind == "prompt"] == [
        "MOCK-READ README.md then list the folder",
        "Thanks. Now summarise what you found in one line.",
    ]
    assert not [e for e in entries if "system-reminder" in e.text]  # injected context is not read twice
    tools = [b.tool for e in entries for b in e.blocks if b.tool]
    assert [(t.name, t.paths) for t in tools] == [("Read", ["/home/dev/proj/README.md"]), ("Bash", [])]
    answers = [e.text for e in entries if e.kind == "assistant" and e.text]
    assert answers.count("I read README.md and listed the folder: it holds notes.md, app.py, README.md.") == 1
    assert not [e.entry_type for e in entries if e.unknown]


def test_the_subagents_task_and_report() -> None:
    """The report is named by the description the subagent was spawned with, as Claude Code's, Copilot's,
    Qwen's and OpenCode's are (it read `Subagent reported: …`, nameless)."""
    main = good(TASK)
    assert [e.text for e in main if e.extra.get("report_of")] == [
        'Subagent "List project files" reported: Subagent report: the folder holds notes.md, app.py and README.md.'
    ]
    sub = good(SUBAGENT)
    assert next(e.text for e in sub if e.kind == "prompt").startswith("SUBAGENT-TASK:")


def test_legacy_kimi_cli_and_its_project_folder(tmp_path: Path) -> None:
    entries = good(LEGACY_READ)
    assert [e.text for e in entries if e.kind == "prompt"] == [
        "MOCK-READ README.md then list the folder",
        "Thanks. Now summarise what you found in one line.",
    ]
    tools = [b.tool for e in entries for b in e.blocks if b.tool]
    assert [(t.name, t.paths, t.input.get("command")) for t in tools] == [
        ("ReadFile", ["/home/dev/proj/README.md"], None),
        ("Shell", [], "ls"),
    ]
    assert entries[0].cwd == "/home/dev/proj"  # kimi.json: the folder's last session
    # The session folder is named by the MD5 of the project's path (renamed in this copy of the data).
    home = tmp_path / ".kimi"
    shutil.copytree(LIVE_KIMI_LEGACY, home)
    (home / "sessions" / LEGACY.name).rename(home / "sessions" / "2b8c70fb72d8a087e5dee109778f74cf")
    other = home / "sessions" / "2b8c70fb72d8a087e5dee109778f74cf" / "0c6c39ea-ec6b-40da-aad5-758c80480963"
    assert good(other / "wire.jsonl")[0].cwd == "/home/dev/proj"


def test_index_show_search_end_to_end(run) -> None:
    report = index_json(run, LIVE_KIMI_CODE, LIVE_KIMI_LEGACY)
    assert (report["sessions"], report["subagents"], report["bad_lines"]) == (5, 1, 0)
    listed = sessions(run, "kimi")
    assert listed[TASK_ID]["subagents"] == 1 and listed[TASK_ID]["project_dir"] == "/home/dev/proj"
    assert [t["agent_id"] for t in turns(run, TASK_ID)] == ["", "agent-0"]
    assert 'Subagent "List project files" reported' in mirror(run, "19ff11c8")
    found = search_sessions(run, "summarise what you found", "kimi")
    assert sorted(found) == ["4b3c9a79-9e83-4699-8010-b526e91d84c2", "7dcd9254-a6ff-4a51-b2c0-cb126d79ee14"]


def test_kimi_code_home_moves_the_default_folder(tmp_path: Path) -> None:
    config = load_config({"MEMEX_HOME": str(tmp_path / "memex")})
    roots = default_roots(config, ["kimi"], env={"KIMI_CODE_HOME": str(tmp_path / "k")})["kimi"]
    assert roots == [tmp_path / "k" / "sessions", Path("~/.kimi/sessions").expanduser()]
    assert default_roots(config, ["pi"], env={"PI_CODING_AGENT_DIR": str(tmp_path / "p")})["pi"] == [
        tmp_path / "p" / "sessions"
    ]
