"""Codex CLI 0.169 rollouts (real files, `tests/fixtures/live/`): exec_command, item_completed, subagents."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from corpus import LIVE_CODEX, LIVE_CODEX_CHILD, LIVE_CODEX_PARENT, LIVE_CODEX_READ
from memex.sources import codex
from memex.sources.model import Entry
from transcripts import CodexRollout

PARENT_ID = "01a209d0-f96a-7271-b275-d9f0c96d0cf5"
CHILD_ID = "01a209d0-fa7c-7962-b6c3-548f6f302da0"


def good(path: Path) -> list[Entry]:
    return [e for _, e in codex.read_entries(path) if isinstance(e, Entry)]


def test_a_spawned_agents_rollout_belongs_to_its_parent_session() -> None:
    found = {t.path.name: t for t in codex.discover([LIVE_CODEX])}
    assert len(found) == 4
    child = found[LIVE_CODEX_CHILD.name]
    assert (child.session_id, child.subagent_id) == (PARENT_ID, CHILD_ID)
    assert [t.subagent_id for t in found.values()].count(None) == 3
    assert list(found.values())[-1] is child  # sessions before their subagents
    assert [t.path.name for t in codex.subagent_transcripts(LIVE_CODEX_PARENT)] == [LIVE_CODEX_CHILD.name]
    assert codex.subagent_transcripts(LIVE_CODEX_READ) == []
    assert codex.subagent_transcripts(LIVE_CODEX_CHILD) == []  # a subagent has none of its own here


def test_exec_command_records_its_command_and_files() -> None:
    tools = [b.tool for e in good(LIVE_CODEX_READ) for b in e.blocks if b.tool is not None]
    assert [t.name for t in tools] == ["exec_command", "exec_command", "apply_patch"]
    assert [t.input["command"] for t in tools[:2]] == ["cat /home/dev/proj/notes.md", "ls"]
    assert tools[0].paths == ["/home/dev/proj/notes.md"]
    assert tools[2].paths == ["/home/dev/proj/zebra.txt"]


def test_item_completed_user_message_is_the_prompt() -> None:
    entries = good(LIVE_CODEX_READ)
    prompts = [e for e in entries if e.kind == "prompt"]
    assert [e.text for e in prompts] == [
        "MOCK-READ /home/dev/proj/notes.md read the zebra token notes",
        "MOCK-PATCH /home/dev/proj/zebra.txt create a zebra file",
    ]
    assert {e.entry_type for e in prompts} == {"event_msg/item_completed"}
    echoes = [e for e in entries if e.entry_type == "response_item/message" and e.role == "user" and e.kind == "other"]
    assert len(echoes) == 2
    injected = [e.text[:21] for e in entries if e.kind == "user_meta"]
    assert "<environment_context>" in injected and all(not t.startswith("MOCK") for t in injected)
    # The agent's text once (the AgentMessage items repeat the response items).
    answers = [e.text for e in entries if e.kind == "assistant" and e.text]
    assert len(answers) == 2 and answers[0].startswith("I read /home/dev/proj/notes.md")
    meta = entries[0]
    assert meta.entry_type == "session_meta" and meta.version == "0.169.0"
    assert not [e.entry_type for e in entries if e.unknown]  # every record type of 0.169 is known


REPORT = 'Subagent "Laplace" reported: Subagent report: the folder holds notes.md, app.py and README.md.'


def test_the_subagents_result_reads_as_its_report() -> None:
    """Named as Codex names the agent it spawned (the spawn's output and its CollabAgentToolCall item)."""
    entries = good(LIVE_CODEX_PARENT)
    reports = [e for e in entries if e.extra.get("report_of")]
    assert [(e.kind, e.text) for e in reports] == [("assistant", REPORT)]
    assert reports[0].extra["report_of"] == CHILD_ID
    assert [e.text for e in entries if e.kind == "prompt"] == [
        "MOCK-SPAWN please delegate listing files to a sub-agent"
    ]


def test_a_report_read_after_its_spawn_was_read_is_named_too(tmp_path: Path, monkeypatch) -> None:
    """An incremental read from an offset past the spawn (the rollout grew between two indexings) still names
    the agent; a rollout whose spawn names no agent leaves the report unnamed, as before."""
    raw = LIVE_CODEX_PARENT.read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(raw) if b"<subagent_notification>" in line)
    offset = sum(len(line) for line in raw[:at])
    resumed = [e for _, e in codex.read_entries(LIVE_CODEX_PARENT, offset, at) if isinstance(e, Entry)]
    assert [e.text for e in resumed if e.extra.get("report_of")] == [REPORT]
    nameless = tmp_path / LIVE_CODEX_PARENT.name
    notification = next(line for line in raw if b"<subagent_notification>" in line)
    # Unnamed, and many reports of it: the rollout is read again once at most, not once per report.
    nameless.write_bytes(b"".join(line.replace(b"Laplace", b"") for line in raw) + notification * 50)
    reads = []
    original = codex.read_jsonl

    def counted(*args, **kwargs):
        reads.append(args[1:2])
        return original(*args, **kwargs)

    monkeypatch.setattr(codex, "read_jsonl", counted)
    reports = [e.text for e in good(nameless) if e.extra.get("report_of")]
    assert reports == ["Subagent reported: Subagent report: the folder holds notes.md, app.py and README.md."] * 51
    assert len(reads) <= 2  # the read itself, and one look back from the start for the names


def _padded(source: Path, target: Path, size: int) -> Path:
    """`source` with its session_meta instructions grown to `size` bytes (a large AGENTS.md)."""
    lines = source.read_text().splitlines(keepends=True)
    meta = json.loads(lines[0])
    meta["payload"]["base_instructions"]["text"] += "x" * size
    target.write_text(json.dumps(meta, separators=(",", ":")) + "\n" + "".join(lines[1:]))
    return target


def test_a_first_line_over_64kb_is_recognised_even_renamed(tmp_path: Path) -> None:
    parent = _padded(LIVE_CODEX_PARENT, tmp_path / "renamed-parent.jsonl", 200_000)
    child = _padded(LIVE_CODEX_CHILD, tmp_path / "renamed-child.jsonl", 200_000)
    assert parent.open("rb").readline().__len__() > codex.PEEK_BYTES
    assert codex.classify(parent) is not None
    assert (codex.classify(parent).session_id, codex.classify(parent).subagent_id) == (PARENT_ID, None)
    assert (codex.classify(child).session_id, codex.classify(child).subagent_id) == (PARENT_ID, CHILD_ID)
    assert [e.text for e in good(parent) if e.kind == "prompt"] == [
        "MOCK-SPAWN please delegate listing files to a sub-agent"
    ]


def test_a_child_in_the_next_days_folder_is_found(tmp_path: Path) -> None:
    day = tmp_path / "2026" / "11" / "23"
    day.mkdir(parents=True)
    shutil.copy(LIVE_CODEX_PARENT, day / LIVE_CODEX_PARENT.name)
    next_day = tmp_path / "2026" / "11" / "24"
    next_day.mkdir(parents=True)
    moved = next_day / LIVE_CODEX_CHILD.name.replace("2026-11-23T19-10-20", "2026-11-24T00-00-01")
    shutil.copy(LIVE_CODEX_CHILD, moved)
    assert [t.path for t in codex.subagent_transcripts(day / LIVE_CODEX_PARENT.name)] == [moved]


def test_what_codex_wrote_around_the_request_is_not_the_prompt(tmp_path: Path) -> None:
    rollout = CodexRollout(tmp_path / "rollout-x.jsonl", "s1")
    ide = "# Context from my IDE setup:\n\n## Active file: src/cart.py\n\n## Open tabs:\n- cart.py\n\n"
    rollout.write(
        rollout.meta(),
        rollout.message(
            "user", "# AGENTS.md instructions for /home/dev/shop\n\n<INSTRUCTIONS>\nBe terse.\n</INSTRUCTIONS>"
        ),
        rollout.message("user", "<environment_context>\n  <cwd>/home/dev/shop</cwd>\n</environment_context>"),
        rollout.message("user", ide + "## My request for Codex:\nmake the cart total include tax"),
        *rollout.answer("Done."),
        rollout.message("user", "# Files mentioned by the user:\n\n## a.png: /tmp/a.png\n\n## My request for Codex:\n"),
    )
    entries = good(rollout.path)
    assert [e.text for e in entries if e.kind == "prompt"] == ["make the cart total include tax"]
    assert [e.kind for e in entries].count("user_meta") == 3


def test_unknown_record_types_are_marked(tmp_path: Path) -> None:
    rollout = CodexRollout(tmp_path / "rollout-x.jsonl", "s1")
    rollout.write(
        rollout.meta(),
        rollout.line("brand_new_record", {"x": 1}),
        rollout.line("response_item", {"type": "hologram_call", "name": "x"}),
        rollout.line("event_msg", {"type": "mind_reading_started"}),
        rollout.line("world_state", {"full": True}),
        *rollout.prompt("hello"),
    )
    assert [e.entry_type for e in good(rollout.path) if e.unknown] == [
        "brand_new_record",
        "response_item/hologram_call",
        "event_msg/mind_reading_started",
    ]


def test_context_and_request_in_one_message(tmp_path: Path) -> None:
    rollout = CodexRollout(tmp_path / "rollout-x.jsonl", "s1")
    parts = [
        {"type": "input_text", "text": "<environment_context>\n  <cwd>/home/dev/shop</cwd>\n</environment_context>"},
        {"type": "input_text", "text": "why is the cart total off by a cent?"},
    ]
    message = {"type": "message", "role": "user", "content": parts}
    rollout.write(rollout.meta(), rollout.line("response_item", message), *rollout.answer("Rounding."))
    assert [e.text for e in good(rollout.path) if e.kind == "prompt"] == ["why is the cart total off by a cent?"]
