"""Gemini CLI 0.61 chats (real files, `tests/fixtures/live/`): resumed chats, subagents, harness messages."""

from __future__ import annotations

import json
from pathlib import Path

from corpus import LIVE_GEMINI, LIVE_GEMINI_BEFORE_RESUME, LIVE_GEMINI_CHATS
from memex.sources import gemini
from memex.sources.model import Entry
from transcripts import GeminiChat

RESUMED = LIVE_GEMINI_CHATS / "session-2026-11-23T19-15-e4530f8d.jsonl"
RESUMED_TOO = LIVE_GEMINI_CHATS / "session-2026-11-23T19-11-7644e323.jsonl"
DELEGATING = LIVE_GEMINI_CHATS / "session-2026-11-23T19-12-9edcc6b6.jsonl"
SUBAGENT = LIVE_GEMINI_CHATS / "9edcc6b6-9cae-4e8a-98e8-3b3ba6dbef3e" / "44469b4c-2fa4-4a90-b28d-088445068035.jsonl"
TURN_LIMITED = LIVE_GEMINI_CHATS / "2093fa90-d0ac-4560-8490-7daea65d69f1" / "f3c5ea33-8ba5-4f5a-832a-f43847235bf5.jsonl"


def good(path: Path) -> list[Entry]:
    return [e for _, e in gemini.read_entries(path) if isinstance(e, Entry)]


def calls(entries: list[Entry]) -> list[tuple[str, dict]]:
    return [(b.tool.name, b.tool.input) for e in entries for b in e.blocks if b.tool is not None]


def test_a_resumed_chat_keeps_its_tool_calls_and_its_first_start() -> None:
    entries = good(RESUMED)
    assert entries[0].timestamp == "2026-11-23T19:15:21.659Z"  # the first header, not the one --resume added
    assert calls(entries) == [
        ("read_file", {"file_path": "/home/dev/proj/app.py"}),
        ("run_shell_command", {"command": "ls", "description": "list files"}),
    ]
    assert not [e for e in entries if (e.uuid or "").endswith("_response")]  # the synthetic results
    prompts = [(e.text, e.timestamp) for e in entries if e.kind == "prompt"]
    assert prompts == [
        ("MOCK-READ /home/dev/proj/app.py read the flux capacitor code", "2026-11-23T19:15:21.901Z"),
        ("Second turn about flux", "2026-11-23T19:15:37.276Z"),
    ]
    # Up to the resume, the same entries as the chat before --resume rewrote it.
    before = good(LIVE_GEMINI_BEFORE_RESUME)[1:-1]
    assert [(e.kind, e.text, e.timestamp, calls([e])) for e in entries[1 : len(before) + 1]] == [
        (e.kind, e.text, e.timestamp, calls([e])) for e in before
    ]
    assert calls(good(RESUMED_TOO))[0] == ("read_file", {"file_path": "/home/dev/proj/notes.md"})


def test_a_chat_known_only_in_its_resumed_form_reads_the_calls_from_the_parts(tmp_path: Path) -> None:
    lines = RESUMED.read_text().splitlines()
    rewrite = next(n for n, line in enumerate(lines) if n > 10 and '"$set":{"messages"' in line)
    path = tmp_path / "chats" / "session-2026-11-23T19-15-e4530f8d.jsonl"
    path.parent.mkdir()
    path.write_text(lines[0] + "\n" + "\n".join(lines[rewrite:]) + "\n")  # the records before it are gone
    entries = good(path)
    assert [name for name, _ in calls(entries)] == ["read_file", "run_shell_command"]
    results = [e for e in entries if (e.uuid or "").endswith("_response")]
    assert results and {e.kind for e in results} == {"tool_result"}
    assert "def flux_capacitor" in results[0].blocks[0].text


def test_a_subagents_answer_is_its_complete_task_result() -> None:
    transcript = gemini.classify(SUBAGENT)
    assert (transcript.session_id, transcript.subagent_id) == (
        "9edcc6b6-9cae-4e8a-98e8-3b3ba6dbef3e",
        "44469b4c-2fa4-4a90-b28d-088445068035",
    )
    assert [t.path for t in gemini.subagent_transcripts(DELEGATING)] == [SUBAGENT]
    answers = [e.text for e in good(SUBAGENT) if e.kind == "assistant" and e.text]
    assert answers == ["Subagent report: the folder holds notes.md, app.py and README.md."]
    parent = [e.text for e in good(DELEGATING) if e.kind == "assistant" and e.text]
    assert (
        parent[0] == 'Subagent "generalist" reported: Subagent report: the folder holds notes.md, app.py and README.md.'
    )


def test_the_turn_limit_message_is_not_a_prompt() -> None:
    entries = good(TURN_LIMITED)
    assert [e.text for e in entries if e.kind == "prompt"] == [
        "SUBAGENT-TASK: list the files of /home/dev/proj and report them."
    ]
    limit = [e for e in entries if e.kind == "user_meta"]
    assert len(limit) == 1 and limit[0].text.startswith("You have exceeded the maximum number of turns.")


def test_every_record_of_061_is_known_and_new_ones_are_counted(tmp_path: Path) -> None:
    for path in sorted(LIVE_GEMINI.rglob("*.jsonl")):
        assert not [e.entry_type for e in good(path) if e.unknown], path
    chat = GeminiChat(tmp_path / "chats" / "session-x.jsonl", "s1")
    chat.turn("hello", "hi")
    chat.write({"id": "n1", "type": "hologram", "content": "beam"}, {"$push": {"messages": []}})
    unknown = [e for e in good(chat.path) if e.unknown]
    assert [e.entry_type for e in unknown] == ["hologram", "$push"]


def test_every_live_chat_is_one_session_with_its_subagents() -> None:
    found = gemini.discover([LIVE_GEMINI])
    mains = sorted(t.session_id[:8] for t in found if t.subagent_id is None)
    subs = sorted((t.session_id[:8], t.subagent_id[:8]) for t in found if t.subagent_id)
    assert mains == ["2093fa90", "423d2737", "7644e323", "9edcc6b6", "e4530f8d"]
    assert subs == [("2093fa90", "f3c5ea33"), ("9edcc6b6", "44469b4c")]
    header = json.loads(SUBAGENT.read_text().splitlines()[0])
    assert header["kind"] == "subagent"


def test_a_subagent_is_named_by_the_parents_invoke_agent_call(tmp_path: Path) -> None:
    assert gemini.classify(SUBAGENT).agent_type == "generalist"
    assert gemini.classify(TURN_LIMITED).agent_type == "generalist"
    assert gemini.classify(DELEGATING).agent_type is None
    # While the parent has not written the call yet (the subagent still runs), the subagent has no name.
    chats = tmp_path / "chats"
    (chats / SUBAGENT.parent.name).mkdir(parents=True)
    child = chats / SUBAGENT.parent.name / SUBAGENT.name
    child.write_bytes(SUBAGENT.read_bytes())
    parent = chats / DELEGATING.name
    parent.write_text("".join(line for line in DELEGATING.read_text().splitlines(True) if "invoke_agent" not in line))
    assert gemini.classify(child).agent_type is None
    parent.write_bytes(DELEGATING.read_bytes())
    assert gemini.classify(child).agent_type == "generalist"


def test_a_subagent_read_before_its_parent_named_it_is_named_when_the_parent_is_read(
    tmp_path: Path, config, conn
) -> None:
    """Indexed while it ran (the daemon, a hook), a subagent's chat had no name yet and kept none: its own
    file does not change once the parent records the `invoke_agent` call. Reading the grown parent names it."""
    from memex.ingest.indexer import discover, index_transcripts

    root = tmp_path / "tmp"
    chats = root / "proj" / "chats"
    (chats / SUBAGENT.parent.name).mkdir(parents=True)
    (chats / SUBAGENT.parent.name / SUBAGENT.name).write_bytes(SUBAGENT.read_bytes())
    parent = chats / DELEGATING.name
    lines = DELEGATING.read_text().splitlines(True)
    at = next(i for i, line in enumerate(lines) if SUBAGENT.stem in line and "invoke_agent" in line)
    parent.write_text("".join(lines[:at]))

    def names() -> set[tuple[str, str | None]]:
        index_transcripts(conn, config, discover({"gemini": [root]}))
        return {(r[0], r[1]) for r in conn.execute("SELECT agent_id, agent_type FROM subagent_sessions")}

    assert names() == {(SUBAGENT.stem, None)}
    parent.write_text("".join(lines))  # the subagent is done: the parent records the call
    assert names() == {(SUBAGENT.stem, "generalist")}
