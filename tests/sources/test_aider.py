"""Aider 0.86.2 (`tests/fixtures/live/aider-0.86.2/project/`, real) and a real history from a public project
(`tests/fixtures/aider/`): the Markdown history of a project folder, its runs, edits and `/run` commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from agent_cli import index_json, sessions, turns
from corpus import AIDER, LIVE_AIDER
from memex.api import Memex
from memex.config import load_config
from memex.context.answers import file_history
from memex.sources import ADAPTERS, aider
from memex.sources.model import Entry

HISTORY = LIVE_AIDER / ".aider.chat.history.md"
ZEN = AIDER / "zen-mcp-server.aider.chat.history.md"


def good(path: Path) -> list[Entry]:
    return [e for _, e in aider.read_entries(path) if isinstance(e, Entry)]


def tools(entries: list[Entry]) -> list[tuple[str, dict]]:
    return [(b.tool.name, b.tool.input) for e in entries for b in e.blocks if b.tool]


def test_the_history_is_aiders_alone() -> None:
    assert aider.classify(HISTORY).session_id == aider.session_id_of(HISTORY)
    assert aider.classify(ZEN) is not None  # renamed, recognised by its first line
    for name, other in ADAPTERS.items():
        if name != "aider":
            assert other.classify(HISTORY) is None, name
    assert aider.classify(LIVE_AIDER / ".aider.input.history") is None


def test_prompts_once_each_edits_and_run_commands() -> None:
    entries = good(HISTORY)
    prompts = [e.text for e in entries if e.kind == "prompt"]
    assert prompts == [
        "What does this project do? Answer briefly.",
        "MOCK-EDIT app.py: add a docstring to add()",
        "MOCK-EDIT app.py: add a docstring to add()",
        "/run ls",
        "Thanks. Now summarise what you found in one line.",
    ]  # .aider.input.history holds each of them twice: it is not read
    assert tools(entries) == [
        ("edit_block", {"path": "app.py"}),
        ("add", {"path": "README.md"}),  # the reply named it, the user said yes
        ("edit_block", {"path": "app.py"}),
        ("edit", {"path": "app.py"}),  # "Applied edit to app.py"
        ("run", {"command": "ls"}),
    ]
    banner = [(e.extra["files"], e.extra["files_tool"]) for e in entries if e.extra.get("files")]
    assert banner == [(["app.py"], "add"), (["app.py"], "add")]  # `aider app.py`: from the run's first turn
    reply = next(e.text for e in entries if e.kind == "assistant" and ">>>>>>> REPLACE" in e.text)
    assert reply.startswith("I will add a docstring") and reply.endswith("The README.md should mention this too.")
    runs = [e for e in entries if e.entry_type == "run"]
    assert len(runs) == 5 and all(e.cwd == str(LIVE_AIDER.resolve()) for e in runs)


def test_a_real_history_with_commands_and_chinese(tmp_path: Path) -> None:
    entries = good(ZEN)
    prompts = [e.text for e in entries if e.kind == "prompt"]
    assert len(prompts) == 8 and prompts[0] == "/add **"
    assert any("请你分析" in p for p in prompts)
    added = [t[1]["path"] for t in tools(entries) if t[0] == "add"]
    assert "server.py" in added and not [p for p in added if "lines of output" in p]


def test_found_in_every_known_project_folder(run, tmp_path: Path, monkeypatch) -> None:
    project = tmp_path / "shop"
    project.mkdir()
    shutil.copy(HISTORY, project / ".aider.chat.history.md")
    pi_session = tmp_path / "pi-sessions" / "--shop--" / "2026-11-23T21-15-46-019Z_0a.jsonl"
    pi_session.parent.mkdir(parents=True)
    header = {"type": "session", "version": 3, "id": "pi-1", "timestamp": "2026-11-23T21:00:00Z", "cwd": str(project)}
    prompt = {
        "type": "message",
        "id": "a",
        "parentId": None,
        "timestamp": "2026-11-23T21:00:01Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "hello"}]},
    }
    pi_session.write_text(json.dumps(header) + "\n" + json.dumps(prompt) + "\n")
    report = json.loads(run("index", "--all", "--json").stdout)
    assert report["sessions"] == 2
    [history] = sessions(run, "aider").values()
    assert history["project_dir"] == str(project.resolve()) and history["turns"] == 5
    shown = turns(run, history["session_id"])
    assert "Commands: `ls`" in shown[3]["tool_summary"]
    assert "Files: app.py" in shown[2]["tool_summary"]
    # Another folder named in the settings.
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copy(ZEN, other / ".aider.chat.history.md")
    monkeypatch.setenv("MEMEX_AIDER_DIRS", str(other))
    assert json.loads(run("index", "--all", "--json").stdout)["files_changed"] == 1
    assert len(sessions(run, "aider")) == 2


def test_a_new_run_appended_is_read_from_the_last_turn(run, tmp_path: Path) -> None:
    project = tmp_path / "p"
    project.mkdir()
    text = HISTORY.read_text()
    cut = text.index("# aider chat started at 2026-11-23 21:14:39")
    (project / ".aider.chat.history.md").write_text(text[:cut])
    index_json(run, project)
    session_id = aider.session_id_of(project / ".aider.chat.history.md")
    assert len(turns(run, session_id)) == 3
    with (project / ".aider.chat.history.md").open("a") as handle:
        handle.write(text[cut:])
    report = index_json(run, project)
    assert report["files_changed"] == 1 and report["bytes_read"] < len(text.encode())
    assert [t["prompt_text"] for t in turns(run, session_id)][-2:] == [
        "/run ls",
        "Thanks. Now summarise what you found in one line.",
    ]


def test_a_file_given_on_the_command_line_is_added_not_edited(run, tmp_path: Path) -> None:
    """`aider notes.md --message …` puts notes.md in the chat before the first prompt ("Added notes.md to the
    chat." in the banner). It was recorded as a Claude Code file-history snapshot: the web viewer listed it
    under `file_history_snapshot`, the file-history hook said the run had edited the file, and find-related
    left it out. It is a file added to the chat, as one added on the user's yes."""
    project = tmp_path / "proj"
    project.mkdir()
    run_header = HISTORY.read_text().split("\n\n")[0].replace("--message What does", "notes.md --message What does")
    history = (
        f"{run_header}\n> Added notes.md to the chat.  \n\n#### What do the notes say?  \n\n"
        "They list the zebra tokens.\n\n> Tokens: 100 sent, 20 received.  \n"
    )
    (project / ".aider.chat.history.md").write_text(history)
    index_json(run, project)
    session_id = aider.session_id_of(project / ".aider.chat.history.md")
    with Memex(load_config(), readonly=True) as memex:
        assert memex.session_files(session_id) == [("notes.md", ["add"])]
        [touched] = file_history(memex.conn, str(project.resolve() / "notes.md"), None, 5)
    assert touched["session_id"] == session_id and touched["tools"] == ["add"]  # not "edited"
