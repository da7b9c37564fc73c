"""The Claude Code source: discovery and normalisation of real transcript lines."""

from __future__ import annotations

import shutil
from pathlib import Path

from corpus import HILLVIEW, MISC, SLAY
from memex.sources import claude
from memex.sources.jsonl import read_jsonl
from memex.sources.model import BadLine, Entry
from transcripts import ClaudeSession, text, tool_use


def entries_of(path: Path) -> list[Entry | BadLine | None]:
    return [parsed for _, parsed in claude.read_entries(path)]


def test_real_session_kinds_and_message_merge() -> None:
    parsed = entries_of(SLAY)
    kinds = [e.kind for e in parsed if isinstance(e, Entry)]
    assert kinds.count("prompt") == 2
    assert "title" in kinds and "file_snapshot" in kinds
    # The first answer spans two lines sharing one message id: a thinking line and a text line.
    assistant = [e for e in parsed if isinstance(e, Entry) and e.kind == "assistant"]
    assert assistant[0].message_id == assistant[1].message_id
    assert [b.kind for b in assistant[0].blocks] == ["thinking"]
    assert "CLAUDE.md" in assistant[1].text


def test_tool_result_only_user_lines_are_not_prompts() -> None:
    parsed = [e for e in entries_of(MISC / "representative_messages.jsonl") if isinstance(e, Entry)]
    kinds = [(e.entry_type, e.kind) for e in parsed]
    assert ("user", "tool_result") in kinds
    assert [e.text for e in parsed if e.kind == "prompt"][:2] == [
        "Hello Claude! Can you help me understand how Python decorators work?",
        "Great! Can you also show me how to create a decorator that takes parameters?",
    ]


def test_meta_and_bare_commands_are_not_prompts() -> None:
    path = HILLVIEW / "7de1dd02-d3f9-49aa-8911-7d5b98666a03.jsonl"
    parsed = [e for e in entries_of(path) if isinstance(e, Entry)]
    assert not [e for e in parsed if e.kind == "prompt"]  # only /plugin, /mcp, /exit and their output
    assert sum(e.kind == "user_meta" for e in parsed) == 9


def test_bad_lines_are_reported_not_fatal() -> None:
    parsed = entries_of(MISC / "edge_cases.jsonl")
    bad = [e for e in parsed if isinstance(e, BadLine)]
    good = [e for e in parsed if isinstance(e, Entry)]
    assert len(bad) == 5 and all(b.reason for b in bad)
    assert len(good) >= 10  # every other line survived


def test_system_reminders_stripped_and_progress_dropped(tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / "s.jsonl", "s1")
    session.write(
        session.prompt("fix the login bug<system-reminder>secret context</system-reminder>"),
        session.progress(),
        session.assistant(text("Done"), tool_use("t1", "Read", file_path="/home/dev/shop/app.py")),
    )
    parsed = entries_of(session.path)
    assert parsed[0].text == "fix the login bug"
    assert parsed[1] is None  # progress noise
    assert parsed[2].tool_uses[0].input["file_path"] == "/home/dev/shop/app.py"


def test_unknown_types_are_entries(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text('{"type":"brand-new-thing","sessionId":"s","x":1}\n{"type":"queue-operation"}\n')
    parsed = entries_of(path)
    assert [(e.entry_type, e.kind) for e in parsed] == [("brand-new-thing", "other"), ("queue-operation", "other")]


def test_invalid_utf8_is_replaced_not_lost(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"user","message":{"role":"user","content":"caf\xe9 au lait"}}\n')
    (line,) = list(read_jsonl(path))
    assert line.repaired and line.data["message"]["content"] == "caf\ufffd au lait"


def test_incomplete_last_line_waits(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"summary","summary":"a"}\n{"type":"user","mess')
    lines = list(read_jsonl(path))
    assert len(lines) == 1 and lines[0].end == len(b'{"type":"summary","summary":"a"}\n')


def test_discover_old_style_sidechains_belong_to_their_session() -> None:
    found = claude.discover([HILLVIEW])
    subagents = [t for t in found if t.subagent_id]
    assert len(subagents) == 8
    by_agent = {t.subagent_id: t.session_id for t in subagents}
    assert by_agent["a9d48ea"] == "155715ec-f4e9-47ea-859c-2e4cfcceab6f"
    # Sessions come before subagents, so a subagent finds its session row.
    assert found.index(subagents[0]) == len(found) - len(subagents)


def test_discover_subagent_folders(tmp_path: Path) -> None:
    session_id = "155715ec-f4e9-47ea-859c-2e4cfcceab6f"
    main = tmp_path / f"{session_id}.jsonl"
    shutil.copy(HILLVIEW / main.name, main)
    folder = tmp_path / session_id / "subagents"
    folder.mkdir(parents=True)
    shutil.copy(HILLVIEW / "agent-a4e3ca2.jsonl", folder / "agent-a4e3ca2.jsonl")
    shutil.copy(HILLVIEW / "agent-a9d48ea.jsonl", folder / "agent-acompact-a9d48ea.jsonl")
    (folder / "agent-a4e3ca2.meta.json").write_text("{}")
    found = claude.subagent_transcripts(main)
    assert [(t.session_id, t.subagent_id) for t in found] == [(session_id, "a4e3ca2")]
    assert [t.subagent_id for t in claude.discover([tmp_path])] == [None, "a4e3ca2"]


def test_no_subagents_folder_means_none() -> None:
    assert claude.subagent_transcripts(SLAY) == []
