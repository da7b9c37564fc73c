"""Claude Code 2.1.330 sessions (real files, `tests/fixtures/live/`): background subagents and new records."""

from __future__ import annotations

import shutil
from pathlib import Path

from corpus import LIVE_CLAUDE, LIVE_CLAUDE_PLAIN, LIVE_CLAUDE_SUBAGENT_SESSION
from memex.sources import claude
from memex.sources.model import Entry
from transcripts import ClaudeSession

SESSION_ID = "322e6fc1-933c-4088-b825-a0b12dac4c7a"
AGENT_ID = "a6464d481e77bfaa0"


def good(path: Path) -> list[Entry]:
    return [e for _, e in claude.read_entries(path) if isinstance(e, Entry)]


def test_a_subagents_meta_json_is_read() -> None:
    (subagent,) = claude.subagent_transcripts(LIVE_CLAUDE_SUBAGENT_SESSION)
    assert (subagent.session_id, subagent.subagent_id) == (SESSION_ID, AGENT_ID)
    assert (subagent.agent_type, subagent.description) == ("general-purpose", "List project files")


def test_a_task_notification_reads_as_the_subagents_report() -> None:
    entries = good(LIVE_CLAUDE_SUBAGENT_SESSION)
    reports = [e for e in entries if e.extra.get("report_of")]
    assert [(e.kind, e.role, e.text) for e in reports] == [
        (
            "assistant",
            "assistant",
            'Subagent "List project files" reported: Subagent report: the folder holds notes.md, app.py and README.md.',
        )
    ]
    assert reports[0].extra["report_of"] == AGENT_ID
    prompts = [e.text for e in entries if e.kind == "prompt"]
    assert prompts == [
        "MOCK-READ /home/dev/proj/notes.md check the zebra token rotation notes",
        "MOCK-TASK delegate listing the project files to a subagent",
        "After compaction: what did we do with the zebra notes?",
    ]


def test_every_record_type_of_2_1_330_is_known() -> None:
    subagents = [t.path for t in claude.subagent_transcripts(LIVE_CLAUDE_SUBAGENT_SESSION)]
    for path in (LIVE_CLAUDE_SUBAGENT_SESSION, LIVE_CLAUDE_PLAIN, *subagents):
        entries = good(path)
        assert not [e.entry_type for e in entries if e.unknown]
        assert {e.version for e in entries if e.entry_type == "user"} == {"2.1.330"}


def test_a_new_record_type_is_marked_with_its_version(tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / "s.jsonl", "11111111-2222-3333-4444-555555555555")
    session.write(session.prompt("hello"), {**session._base("hologram-state"), "beam": 1}, {"noType": True})
    unknown = [(e.entry_type, e.version) for e in good(session.path) if e.unknown]
    assert unknown == [("hologram-state", "2.1.100"), ("unknown", None)]


def test_prompt_suggestion_subagents_are_noise(tmp_path: Path) -> None:
    folder = tmp_path / "proj"
    shutil.copytree(LIVE_CLAUDE / "-home-dev-proj", folder)
    subagents = folder / SESSION_ID / "subagents"
    for noise in ("agent-aprompt_suggestion-3f2a1b.jsonl", "agent-acompact-9c8d7e.jsonl"):
        shutil.copy(subagents / f"agent-{AGENT_ID}.jsonl", subagents / noise)
    found = claude.discover([folder])
    assert sorted(t.subagent_id or "" for t in found) == ["", "", AGENT_ID]


def test_prompt_hook_output_in_an_older_prompt_is_not_the_prompt(tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / "s.jsonl", "11111111-2222-3333-4444-555555555555")
    hook = "<user-prompt-submit-hook>memex recall: earlier turns about carts</user-prompt-submit-hook>"
    session.write(session.prompt(f"fix the cart total\n\n{hook}"))
    assert [e.text for e in good(session.path) if e.kind == "prompt"] == ["fix the cart total"]


def test_a_background_commands_notification_is_not_a_subagents_report(tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / "s.jsonl", "11111111-2222-3333-4444-555555555555")
    notification = (
        "<task-notification>\n<task-id>bx81k2</task-id>\n<status>completed</status>\n"
        '<summary>Background command "npm test" completed (exit code 0)</summary>\n<result>42 passed</result>\n'
        "</task-notification>"
    )
    session.write(session.prompt("run the tests in the background"), session.prompt(notification))
    entries = good(session.path)
    assert [e.kind for e in entries] == ["prompt", "user_meta"]
