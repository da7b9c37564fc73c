"""The Codex CLI source: discovery and normalisation of real rollouts, both layouts."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from corpus import CODEX, CODEX_ABORTED, CODEX_OLD, CODEX_PARTIAL, CODEX_SHORT, GEMINI_JSONL, SLAY
from memex.sources import claude, codex, gemini
from memex.sources.model import BadLine, Entry
from memex.sources.shell import patch_paths, shell_paths
from transcripts import CodexRollout


def entries_of(path: Path) -> list[Entry | BadLine | None]:
    return [parsed for _, parsed in codex.read_entries(path)]


def good(path: Path) -> list[Entry]:
    return [e for e in entries_of(path) if isinstance(e, Entry)]


def test_discover_real_rollouts_with_their_session_ids() -> None:
    found = {t.path.name: t for t in codex.discover([CODEX])}
    assert len(found) == 3
    assert found[CODEX_ABORTED.name].session_id == "019a7ae6-1945-7c63-98f2-210adb922af9"
    assert found[CODEX_OLD.name].session_id == "5973b6c0-94b8-487b-a530-2aeb6098ae0e"  # the bare header's id
    assert all(t.agent == "codex" and t.subagent_id is None for t in found.values())
    assert codex.subagent_transcripts(CODEX_ABORTED) == []


def test_the_users_text_is_counted_once() -> None:
    entries = good(CODEX_ABORTED)
    prompts = [e for e in entries if e.kind == "prompt"]
    # Six prompts, each written twice (response item + user_message event): the events are the prompts.
    assert len(prompts) == 6 and {e.entry_type for e in prompts} == {"event_msg/user_message"}
    assert prompts[0].text.startswith("Responding to the note below, why would jobs be routed to codex-1")
    echoes = [e for e in entries if e.entry_type == "response_item/message" and e.role == "user" and e.kind == "other"]
    assert len(echoes) == 6
    # AGENTS.md instructions and <environment_context> are injected, not typed.
    injected = [e for e in entries if e.kind == "user_meta"]
    assert [e.text[:22] for e in injected] == ["# AGENTS.md instructio", "<environment_context>\n"]
    assert injected[1].cwd == "/mnt/d/ai/MoonMind"


def test_assistant_text_once_and_reasoning_as_thinking() -> None:
    entries = good(CODEX_ABORTED)
    texts = [e.text for e in entries if e.kind == "assistant" and e.text]
    assert len(texts) == 5 and texts[0].startswith("Jobs aren’t just pulled from a single shared queue")
    assert not any(e.entry_type.startswith("event_msg/agent_") for e in entries)  # duplicates dropped
    reasoning = [e for e in entries if e.entry_type == "response_item/reasoning"]
    assert reasoning and all(b.kind == "thinking" for e in reasoning for b in e.blocks)
    assert all(e.text == "" for e in reasoning)  # thinking is never the answer's text


def test_session_meta_and_tool_calls() -> None:
    entries = good(CODEX_SHORT)
    meta = entries[0]
    assert (meta.entry_type, meta.cwd, meta.timestamp) == (
        "session_meta",
        "/mnt/d/ai/MoonMind",
        "2025-11-14T02:21:11.217Z",
    )
    assert meta.extra["cli_version"] == "0.58.0" and meta.extra["git_branch"]
    tools = [b.tool for e in entries for b in e.blocks if b.tool is not None]
    assert Counter(t.name for t in tools) == {"shell": 38, "update_plan": 3, "apply_patch": 1}
    shell = next(t for t in tools if t.name == "shell")
    assert isinstance(shell.input["command"], str) and not shell.input["command"].startswith("bash")
    patch = next(t for t in tools if t.name == "apply_patch")
    assert patch.paths and all(p.startswith("/mnt/d/ai/MoonMind/") or not p.startswith("/") for p in patch.paths)
    outputs = [e for e in entries if e.kind == "tool_result"]
    assert len(outputs) == 42 and all(e.text == "" for e in outputs)
    # A shell's output was written as a JSON string {"output": …, "metadata": …}: its text is what it printed.
    printed = [b.text for e in outputs for b in e.blocks if b.kind == "tool_result"]
    assert len(printed) == 42
    assert not any(text.startswith('{"output":') for text in printed)
    assert sum("\n" in text for text in printed) > 30 and not any("\\r\\n" in text for text in printed)


def test_old_unwrapped_layout() -> None:
    parsed = entries_of(CODEX_OLD)
    entries = [e for e in parsed if isinstance(e, Entry)]
    assert parsed.count(None) == 3  # {"record_type": "state"} markers
    assert entries[0].entry_type == "session_meta" and entries[0].timestamp == "2025-05-01T10:00:00.412Z"
    assert {e.timestamp for e in entries} == {"2025-05-01T10:00:00.412Z"}  # items carry no time of their own
    prompts = [e.text for e in entries if e.kind == "prompt"]
    assert prompts == [
        "todo-cli crashes with FileNotFoundError when ~/.todo.json doesn't exist yet. Fix it and add a test.",
        "谢谢！顺便把 README 里的安装说明更新一下。",
    ]
    assert next(e.cwd for e in entries if e.cwd) == "/Users/carol/src/todo-cli"  # from the first workdir
    paths = [p for e in entries for b in e.blocks if b.tool for p in b.tool.paths]
    # `sed -n 1,80p F` and `apply_patch` through the shell (with a workdir), and a bare `cat README.md`.
    assert {"/Users/carol/src/todo-cli/src/todo/store.py", "/Users/carol/src/todo-cli/tests/test_store.py"} <= set(
        paths
    )
    assert "README.md" in paths
    assert any(b.tool.name == "local_shell" for e in entries for b in e.blocks if b.tool)


def test_reading_from_an_offset_keeps_the_headers_time() -> None:
    lines = list(codex.read_entries(CODEX_OLD))
    resume = lines[7][0]
    later = list(codex.read_entries(CODEX_OLD, resume.start, resume.line_index))
    assert later[0][0].line_index == resume.line_index
    assert {e.timestamp for _, e in later if isinstance(e, Entry)} == {"2025-05-01T10:00:00.412Z"}


def test_event_before_its_echo_is_still_one_prompt(tmp_path: Path) -> None:
    rollout = CodexRollout(tmp_path / "rollout-x.jsonl", "s1")
    event, echo = rollout.prompt("rename the Cart class")[1], rollout.message("user", "rename the  Cart class")
    rollout.write(rollout.meta(), event, echo, *rollout.answer("Renamed."))
    kinds = [(e.entry_type, e.kind) for e in good(rollout.path)]
    assert kinds.count(("event_msg/user_message", "prompt")) == 1
    assert ("response_item/message", "other") in kinds and sum(k == "prompt" for _, k in kinds) == 1


def test_a_prompt_without_its_event_yet_is_a_prompt(tmp_path: Path) -> None:
    rollout = CodexRollout(tmp_path / "rollout-x.jsonl", "s1")
    rollout.write(rollout.meta(), rollout.message("user", "half written"))
    assert [e.kind for e in good(rollout.path)] == ["other", "prompt"]
    rollout.write(rollout.prompt("half written")[1])  # the event lands: the item becomes its echo
    assert [e.kind for e in good(rollout.path)] == ["other", "other", "prompt"]


def test_compaction(tmp_path: Path) -> None:
    rollout = CodexRollout(tmp_path / "rollout-x.jsonl", "s1")
    rollout.write(
        rollout.meta(),
        rollout.line("compacted", {"message": "We renamed Cart to Basket."}),
        rollout.line("event_msg", {"type": "context_compacted"}),
    )
    kinds = [(e.kind, e.text) for e in good(rollout.path)]
    assert kinds[1:] == [("compact_summary", "We renamed Cart to Basket."), ("compact_boundary", "")]


def test_bad_input_is_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-01-01T00-00-00-aaaaaaaa-1111-2222-3333-444444444444.jsonl"
    rollout = CodexRollout(path, "aaaaaaaa-1111-2222-3333-444444444444")
    rollout.write(rollout.meta(), *rollout.prompt("first prompt about otters"))
    with path.open("ab") as handle:
        handle.write(b'{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"mess\n')
        handle.write(b"not json\n")
        handle.write(b'{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":"a string"}\n')
        handle.write(
            b'{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"message","content":7}}\n'
        )
        handle.write(b"[1, 2]\n")
        handle.write(
            b'{"timestamp":"x","type":"event_msg","payload":{"type":"user_message","message":"caf\xe9 prompt"}}\n'
        )
        handle.write(b'{"timestamp":"x","type":"brand_new_item","payload":{}}\n')
        big = b"z" * (20 * 1024 * 1024)
        handle.write(
            b'{"timestamp":"x","type":"response_item","payload":{"type":"function_call_output","output":"'
            + big
            + b'"}}\n'
        )
    rollout.write(*rollout.answer("the otters answer"))
    parsed = entries_of(path)
    bad = [e for e in parsed if isinstance(e, BadLine)]
    assert len(bad) == 5 and all(b.reason for b in bad)
    entries = [e for e in parsed if isinstance(e, Entry)]
    assert [e.text for e in entries if e.kind == "prompt"] == ["first prompt about otters", "caf\ufffd prompt"]
    assert ("brand_new_item", "other") in [(e.entry_type, e.kind) for e in entries]
    assert entries[-1].text == "the otters answer"


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-01-01T00-00-00-aaaaaaaa-1111-2222-3333-444444444444.jsonl"
    path.touch()
    (transcript,) = codex.discover([tmp_path])
    assert transcript.session_id == "aaaaaaaa-1111-2222-3333-444444444444"
    assert entries_of(path) == []


def test_partial_real_file_without_session_meta() -> None:
    transcript = codex.classify(CODEX_PARTIAL)
    assert transcript is not None and transcript.session_id == "session-alpha"
    assert [e.entry_type for e in good(CODEX_PARTIAL)] == ["turn_context"]


def test_each_adapter_claims_only_its_own_files(tmp_path: Path) -> None:
    shutil.copy(CODEX_OLD, tmp_path / CODEX_OLD.name)
    shutil.copy(CODEX_PARTIAL, tmp_path / "partial.jsonl")  # not named rollout-*: recognised by its shape
    shutil.copy(SLAY, tmp_path / SLAY.name)
    chats = tmp_path / "proj" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(GEMINI_JSONL, chats / GEMINI_JSONL.name)
    roots = [tmp_path]
    assert {t.path.name for t in claude.discover(roots)} == {SLAY.name}
    assert {t.path.name for t in codex.discover(roots)} == {CODEX_OLD.name, "partial.jsonl"}
    assert {t.path.name for t in gemini.discover(roots)} == {GEMINI_JSONL.name}
    assert claude.classify(tmp_path / CODEX_OLD.name) is None
    assert claude.classify(tmp_path / "partial.jsonl") is None


def test_paths_in_patches_and_shell_commands() -> None:
    patch = "*** Begin Patch\n*** Update File: a/b.py\n@@\n*** Add File: c.md\n*** Move to: d/e.py\n*** End Patch"
    assert patch_paths(patch) == ["a/b.py", "c.md", "d/e.py"]
    assert shell_paths(["bash", "-lc", "sed -n '1,80p' src/app.py && nl -ba README.md | head -n 40"]) == [
        "src/app.py",
        "README.md",
    ]
    assert shell_paths("rg -n 'def load' src/todo tests/test_x.py") == ["src/todo", "tests/test_x.py"]
    assert shell_paths("cat <<'EOF' > notes/plan.md\nnot a command > x.py\nEOF") == ["notes/plan.md"]
    assert shell_paths("ls -la && git status && echo $HOME > /dev/null") == []
    assert shell_paths(["sed", "-n", "1,80p", "src/todo/store.py"]) == ["src/todo/store.py"]
    assert shell_paths('echo "unbalanced') == []
