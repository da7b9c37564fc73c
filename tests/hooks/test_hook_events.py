"""The hooks end to end, as Claude Code runs them: the real `memex` executable, JSON on stdin, exit 0."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from hooktools import (
    CURRENT,
    OTHER,
    PAST,
    build_corpus,
    context,
    hook,
    prompt_event,
    runs,
    start_hooks,
    stop_event,
    subagent,
    transcript,
)
from transcripts import ClaudeSession, simple_turn, text, tool_use

PROMPT = "why does parse_config_file crash when the config file is empty?"


@pytest.fixture
def env(home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Hooks run with an empty MEMEX_HOME, no warm server, outside any Claude Code project."""
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    monkeypatch.setenv("MEMEX_WARM_IDLE_SECONDS", "0")
    return home


@pytest.fixture
def corpus(env: Path, tmp_path: Path, run):
    sessions = build_corpus(tmp_path / "claude-projects")
    assert run("index", str(tmp_path / "claude-projects")).exit_code == 0
    return sessions


def test_a_misspelled_model_leaves_prompt_recall_by_words(corpus, env: Path, monkeypatch) -> None:
    # A hook never prints an error into the session: recall goes by words (`memex doctor` names the setting).
    monkeypatch.setenv("MEMEX_EMBED_MODEL", "e5-smal-q4")
    injected = context(hook("UserPromptSubmit", prompt_event(corpus["current"], PROMPT)), "UserPromptSubmit")
    assert injected.startswith("memex recall:") and PAST[:8] in injected
    assert runs(env)[-1]["status"] == "injected"


def test_stop_ingests_a_one_turn_append_and_prints_nothing(corpus, env: Path, run) -> None:
    current = corpus["current"]
    simple_turn(current, "now rename load_settings to read_settings everywhere", "Renamed load_settings.")
    result = hook("Stop", stop_event(current))
    assert result.returncode == 0 and result.stdout == b""
    hits = json.loads(run("search", "read_settings", "--json").stdout)
    assert {h["session_id"] for h in hits} == {CURRENT}
    last = runs(env)[-1]
    assert last["event"] == "Stop" and last["status"] == "ok" and last["files"] == 1
    again = hook("Stop", stop_event(current))  # nothing new: no file is re-read
    assert again.returncode == 0 and again.stdout == b"" and runs(env)[-1]["files"] == 0


@pytest.mark.parametrize("written_after_the_hook", ["the last answer", "the whole file"])
def test_stop_waits_for_the_answer_it_was_told_of_to_be_written(
    corpus, env: Path, run, tmp_path: Path, written_after_the_hook: str
) -> None:
    """Claude Code 2.1 writes its transcript a little after its Stop hook starts (a new `claude -p` session's
    whole file): the hook waits until the answer the event names is on disk, then ingests it."""
    if written_after_the_hook == "the whole file":
        session = ClaudeSession(tmp_path / "claude-projects" / "-work-late" / "late-session.jsonl", "late-session")
        session.path.parent.mkdir(parents=True, exist_ok=True)
    else:
        session = corpus["current"]
    answer = "Renamed load_settings to read_settings in seven modules."
    event = {**stop_event(session), "last_assistant_message": answer}
    flushed = threading.Timer(0.4, simple_turn, (session, "rename load_settings everywhere", answer))
    flushed.start()
    try:
        result = hook("Stop", event)
    finally:
        flushed.join()
    assert result.returncode == 0 and result.stdout == b""
    hits = json.loads(run("search", "read_settings", "--json").stdout)
    assert session.session_id in {h["session_id"] for h in hits}
    last = runs(env)[-1]
    assert last["event"] == "Stop" and last["status"] == "ok" and last["flush_ms"] >= 200, last


def test_stop_gives_up_waiting_for_an_answer_never_written(corpus, env: Path) -> None:
    """An answer the transcript never holds (written otherwise than the event says) costs the Stop hook its
    bounded wait, then what is there is ingested."""
    event = {**stop_event(corpus["current"]), "last_assistant_message": "an answer that no transcript holds"}
    assert hook("Stop", event).returncode == 0
    last = runs(env)[-1]
    assert last["status"] == "ok" and last["flush"] == "not seen" and "detail" not in last, last


def test_subagent_stop_ingests_the_subagent(corpus, env: Path, run) -> None:
    current = corpus["current"]
    sub = subagent(current, "a5")
    simple_turn(sub, "list every caller of parse_config_file", "Three callers: cli, server, tests.")
    event = {**stop_event(current, "SubagentStop"), "agent_id": "a5", "agent_transcript_path": str(sub.path)}
    del event["transcript_path"]  # derived from the subagent's path when missing
    result = hook("SubagentStop", event)
    assert result.returncode == 0 and result.stdout == b""
    hits = json.loads(run("search", "every caller", "--json").stdout)
    assert hits and hits[0]["agent_id"] == "a5" and hits[0]["session_id"] == CURRENT


def test_subagent_stop_ingests_a_sidechain_beside_the_session(corpus, env: Path, run) -> None:
    """Claude Code 2.0 wrote sidechains as `agent-<id>.jsonl` beside the session, with the parent's id."""
    current = corpus["current"]
    sidechain = ClaudeSession(current.path.with_name("agent-b7c8d9e.jsonl"), CURRENT, current.cwd, "b7c8d9e")
    simple_turn(sidechain, "find the flaky retry_backoff test", "tests/test_retry.py sleeps on a real clock.")
    event = {**stop_event(current, "SubagentStop"), "agent_id": "b7c8d9e", "agent_transcript_path": str(sidechain.path)}
    assert hook("SubagentStop", event).returncode == 0
    hits = json.loads(run("search", "retry_backoff", "--json").stdout)
    assert [(h["session_id"], h["agent_id"]) for h in hits] == [(CURRENT, "b7c8d9e")]
    assert runs(env)[-1]["files"] == 1


def test_stop_without_a_database_creates_it(env: Path, tmp_path: Path) -> None:
    session = transcript(tmp_path / "p", PAST, "/home/dev/shop")
    simple_turn(session, "first prompt of a brand new session", "answer")
    result = hook("Stop", stop_event(session))
    assert result.returncode == 0 and result.stdout == b""
    with sqlite3.connect(env / "memex.db") as db:
        assert db.execute("SELECT count(*) FROM turns").fetchone()[0] == 1


def test_prompt_recall_excludes_the_current_session_and_prefers_the_project(corpus) -> None:
    injected = context(hook("UserPromptSubmit", prompt_event(corpus["current"], PROMPT)), "UserPromptSubmit")
    assert injected.startswith("memex recall:")
    assert PAST[:8] in injected and OTHER[:8] in injected
    assert CURRENT[:8] not in injected and "current session" not in injected
    assert injected.index(PAST[:8]) < injected.index(OTHER[:8])  # same project first
    assert '"Empty config crash"' in injected and "2026-" in injected
    assert "an empty config file now yields the default settings" in injected
    assert "Files: src/config_loader.py" in injected
    # Asked from the blog project, the blog's own session comes first.
    from_blog = prompt_event(corpus["current"], PROMPT, cwd="/home/dev/blog")
    injected = context(hook("UserPromptSubmit", from_blog), "UserPromptSubmit")
    assert injected.index(OTHER[:8]) < injected.index(PAST[:8])


def test_prompt_recall_uses_claude_project_dir(corpus, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", "/home/dev/blog")
    injected = context(hook("UserPromptSubmit", prompt_event(corpus["current"], PROMPT)), "UserPromptSubmit")
    assert injected.index(OTHER[:8]) < injected.index(PAST[:8])


def test_recall_marks_subagent_turns(corpus, env: Path, run, tmp_path: Path) -> None:
    past = corpus["past"]
    sub = subagent(past, "b7")
    simple_turn(sub, "audit the tokenizer for unicode normalisation bugs", "NFKC is missing in tokenize_words.")
    run("index", str(tmp_path / "claude-projects"))
    prompt = "are there unicode normalisation bugs in the tokenizer?"
    injected = context(hook("UserPromptSubmit", prompt_event(corpus["current"], prompt)), "UserPromptSubmit")
    assert "[Subagent: b7]" in injected and "NFKC is missing" in injected


def test_prompt_with_nothing_relevant_prints_nothing(corpus, env: Path) -> None:
    for prompt in (
        "what is the weather like in paris today",
        "configure the voice notifications server",  # only "server"-like common words could match
        "add a config option for the logging level",  # shares only common words with the past turns
    ):
        result = hook("UserPromptSubmit", prompt_event(corpus["current"], prompt))
        assert result.returncode == 0 and result.stdout == b"", prompt
    assert all(r["status"] == "ok" and r["hits"] == 0 for r in runs(env)[-3:])


@pytest.mark.parametrize(
    "prompt",
    ["yes", "ok, keep going", "继续", "好的，继续", "はい、続けてください", "네 계속해주세요", "oui vas-y",
     "weiter", "sí, dale", "/compact", "/memex:recall parse_config_file", "👍", "   ", "do it now please"],
)  # fmt: skip
def test_gated_prompts_get_nothing(corpus, env: Path, prompt: str) -> None:
    result = hook("UserPromptSubmit", prompt_event(corpus["current"], prompt))
    assert result.returncode == 0 and result.stdout == b""
    assert runs(env)[-1]["detail"].startswith("gated:")


def test_recall_respects_the_budget(corpus, env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memex.textutil import estimate_tokens

    shown = {}
    for budget in (1000, 120, 80):
        monkeypatch.setenv("MEMEX_RECALL_BUDGET_TOKENS", str(budget))
        injected = context(hook("UserPromptSubmit", prompt_event(corpus["current"], PROMPT)), "UserPromptSubmit")
        assert injected and estimate_tokens(injected) <= budget
        shown[budget] = injected.count(" · session ")
    assert shown[1000] == 2 and shown[80] == 1
    monkeypatch.setenv("MEMEX_RECALL_BUDGET_TOKENS", "5")  # not even one turn fits: nothing at all
    assert hook("UserPromptSubmit", prompt_event(corpus["current"], PROMPT)).stdout == b""


def test_pre_tool_use_tells_who_touched_the_file_once(corpus, env: Path) -> None:
    current = corpus["current"]
    event = {
        "session_id": CURRENT,
        "transcript_path": str(current.path),
        "cwd": "/home/dev/shop",
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "/home/dev/shop/src/config_loader.py"},
        "tool_use_id": "toolu_1",
    }
    injected = context(hook("PreToolUse", event), "PreToolUse")
    assert injected.startswith("memex: src/config_loader.py was touched in earlier sessions")
    assert PAST[:8] in injected and "(edited)" in injected and "parse_config_file crashes" in injected
    assert OTHER[:8] not in injected  # the blog's src/config_loader.py is another file
    assert CURRENT[:8] not in injected
    assert hook("PreToolUse", event).stdout == b""  # said once per session and file
    assert runs(env)[-1]["detail"] == "already said"
    for quiet in (
        {**event, "tool_input": {"file_path": "/home/dev/shop/README.md"}},  # nobody touched it
        {**event, "tool_name": "Bash", "tool_input": {"command": "ls"}},  # not a file tool
        {**event, "tool_input": {}},
    ):
        assert context(hook("PreToolUse", quiet), "PreToolUse") == ""


def test_subagent_start_lists_the_files_the_session_touched(corpus, env: Path) -> None:
    current = corpus["current"]
    # Edits of the running turn, not ingested yet: SubagentStart ingests first.
    current.write(current.prompt("also check the tests"))
    current.write(
        current.assistant(tool_use("t9", "Read", file_path="/home/dev/shop/tests/test_config.py"), text("Reading."))
    )
    event = {
        "session_id": CURRENT,
        "transcript_path": str(current.path),
        "cwd": current.cwd,
        "hook_event_name": "SubagentStart",
        "agent_id": "agent-x1",
        "agent_type": "Explore",
    }
    injected = context(hook("SubagentStart", event), "SubagentStart")
    lines = injected.splitlines()
    assert lines[0].startswith("memex: files the parent session touched most recently")
    assert lines[1] == "- tests/test_config.py (read)"
    assert lines[2] == "- src/config_loader.py (edited)"


def test_compaction_reinjects_the_turns_before_the_boundary(corpus, env: Path) -> None:
    current = corpus["current"]
    simple_turn(current, "switch the config format from ini to toml", "Switched to tomllib; ini support removed.")
    pre = {
        "session_id": CURRENT,
        "transcript_path": str(current.path),
        "cwd": current.cwd,
        "hook_event_name": "PreCompact",
        "trigger": "manual",
        "custom_instructions": None,
    }
    result = hook("PreCompact", pre)
    assert result.returncode == 0 and result.stdout == b""
    current.write(current.compact_boundary(), current.compact_summary("We fixed configs."))
    start = {
        "session_id": CURRENT,
        "transcript_path": str(current.path),
        "cwd": current.cwd,
        "hook_event_name": "SessionStart",
        "source": "compact",
    }
    result = hook("SessionStart", start)
    assert result.returncode == 0
    injected = result.stdout.decode()  # plain text on SessionStart
    assert injected.startswith("memex: the last turns of this session before it was compacted")
    assert injected.index("parse_config_file crashes on an empty config") < injected.index("switch the config format")
    assert "We fixed configs" not in injected  # the summary itself is already in the context
    assert "Switched to tomllib" in injected
    # Other sources inject nothing.
    assert hook("SessionStart", {**start, "source": "startup"}).stdout == b""


def test_compaction_without_pre_compact_uses_the_boundary_line(corpus, env: Path) -> None:
    current = corpus["current"]
    current.write(current.compact_boundary(), current.compact_summary("Summary."))
    start = {"session_id": CURRENT, "transcript_path": str(current.path), "cwd": current.cwd, "source": "compact"}
    injected = hook("SessionStart", start).stdout.decode()
    assert "Looking at parse_config_file in the current session" in injected


def test_bad_input_never_breaks_the_session(env: Path, corpus) -> None:
    cases = [
        ("UserPromptSubmit", b"this is not json"),
        ("UserPromptSubmit", b"[1, 2]"),
        ("Stop", b'{"transcript_path": 42}'),
        ("Stop", b'{"transcript_path": "/nonexistent/x.jsonl"}'),
        ("PreToolUse", b'{"tool_name": "Read", "tool_input": "oops"}'),
        ("NoSuchEvent", b"{}"),
        ("UserPromptSubmit", b""),
        ("SessionStart", b'{"source": "compact"}'),
    ]
    for event, payload in cases:
        result = hook(event, payload)
        assert result.returncode == 0 and result.stdout == b"", (event, payload)
    statuses = [r["status"] for r in runs(env)[-len(cases) :]]
    assert statuses[:2] == ["error", "error"] and "unknown event" in statuses


def test_corrupt_database_degrades_to_nothing(env: Path, tmp_path: Path) -> None:
    env.mkdir(parents=True, exist_ok=True)
    (env / "memex.db").write_bytes(b"this is not a sqlite database" * 100)
    session = transcript(tmp_path / "p", CURRENT, "/home/dev/shop")
    simple_turn(session, "parse_config_file crashes on an empty file", "fixed")
    for event, payload in (("UserPromptSubmit", prompt_event(session, PROMPT)), ("Stop", stop_event(session))):
        result = hook(event, payload)
        assert result.returncode == 0 and result.stdout == b"" and result.stderr == b""
    assert [r["status"] for r in runs(env)] == ["error", "error"]
    assert "not a database" in runs(env)[-1]["detail"]


def test_locked_database_degrades_quickly(corpus, env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEX_HOOK_WRITE_BUSY_TIMEOUT_MS", "200")
    simple_turn(corpus["current"], "one more prompt about parse_config_file", "ok")
    holder = sqlite3.connect(env / "memex.db", isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    holder.execute("UPDATE sessions SET title = title")
    try:
        for event, payload in (
            ("UserPromptSubmit", prompt_event(corpus["current"], PROMPT)),
            ("Stop", stop_event(corpus["current"])),
        ):
            started = time.monotonic()
            result = hook(event, payload)
            assert result.returncode == 0 and result.stdout == b""
            assert time.monotonic() - started < 5
            assert runs(env)[-1]["status"] == "error" and "locked" in runs(env)[-1]["detail"]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    # Once the lock is gone, the next Stop catches up.
    assert hook("Stop", stop_event(corpus["current"])).returncode == 0 and runs(env)[-1]["status"] == "ok"


def test_five_concurrent_stop_hooks(env: Path, tmp_path: Path, run) -> None:
    root = tmp_path / "claude-projects"
    sessions = []
    for n in range(5):
        session = transcript(root, f"44444444-aaaa-4bbb-8ccc-00000000000{n}", "/home/dev/shop")
        simple_turn(session, f"first question number {n}", f"first answer {n}")
        sessions.append(session)
    run("index", str(root))
    for n, session in enumerate(sessions):
        simple_turn(session, f"concurrent question zebra{n}", f"concurrent answer {n}")
    results = start_hooks("Stop", [stop_event(s) for s in sessions])
    assert [(code, out) for code, out, _ in results] == [(0, b"")] * 5
    assert [r["status"] for r in runs(env)] == ["ok"] * 5
    for n in range(5):
        hits = json.loads(run("search", f"zebra{n}", "--json").stdout)
        assert {h["session_id"] for h in hits} == {sessions[n].session_id}


def test_disabled_hooks_do_nothing(corpus, env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEX_HOOKS_ENABLED", "0")
    assert hook("UserPromptSubmit", prompt_event(corpus["current"], PROMPT)).stdout == b""
    assert runs(env)[-1]["status"] == "disabled"


def test_no_database_yet_means_no_recall(env: Path, tmp_path: Path) -> None:
    session = transcript(tmp_path / "p", CURRENT, "/home/dev/shop")
    result = hook("UserPromptSubmit", prompt_event(session, PROMPT))
    assert result.returncode == 0 and result.stdout == b""
    assert runs(env)[-1]["detail"] == "no database" and not (env / "memex.db").exists()


@pytest.mark.subprocess
def test_hook_through_python_dash_m(corpus, env: Path) -> None:
    """`python -m memex hook …` (the installer's fallback command) behaves the same."""
    import subprocess
    import sys

    event = json.dumps(prompt_event(corpus["current"], PROMPT)).encode()
    result = subprocess.run(
        [sys.executable, "-m", "memex", "hook", "UserPromptSubmit"], input=event, capture_output=True
    )
    assert PAST[:8] in context(result, "UserPromptSubmit")


def test_file_history_records_of_old_sessions_are_pruned(corpus, env: Path) -> None:
    seen = env / "run" / "seen"
    seen.mkdir(parents=True)
    old, fresh = seen / "old", seen / "fresh"
    old.write_text("/x\n")
    fresh.write_text("/y\n")
    three_days_ago = time.time() - 3 * 86_400
    os.utime(old, (three_days_ago, three_days_ago))
    event = {
        "session_id": CURRENT,
        "cwd": "/home/dev/shop",
        "tool_name": "Edit",
        "tool_input": {"file_path": "/home/dev/shop/src/config_loader.py"},
    }
    assert context(hook("PreToolUse", event), "PreToolUse")
    assert not old.exists() and fresh.exists() and len(list(seen.iterdir())) == 2


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("event", "payload", "forbidden"),
    [
        (
            "Stop",
            "stop",
            # (and no OpenSSL: hashes are blake2b's, memex.digest, 3 ms less)
            (
                "click",
                "rich",
                "memex.search",
                "memex.embed",
                "memex.cli.main",
                "memex.sync",
                "multiprocessing",
                "_hashlib",
            ),
        ),
        (
            "UserPromptSubmit",
            "gated",
            ("click", "rich", "memex.search", "memex.ingest", "memex.store", "memex.sync", "sqlite3"),
        ),
    ],
)
def test_hooks_import_only_what_they_need(corpus, env: Path, event: str, payload: str, forbidden) -> None:
    """A Stop hook never loads search or a model; a gated prompt does not even open the store."""
    import subprocess
    import sys

    data = stop_event(corpus["current"]) if payload == "stop" else prompt_event(corpus["current"], "ok")
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "memex", "hook", event],
        input=json.dumps(data).encode(),
        capture_output=True,
    )
    assert result.returncode == 0 and result.stdout == b""
    imported = {line.split("|")[-1].strip() for line in result.stderr.decode().splitlines() if "|" in line}
    assert "memex.hooks.events" in imported
    for name in forbidden:
        assert not any(m == name or m.startswith(name + ".") for m in imported), name


@pytest.mark.subprocess
def test_the_hooks_module_compiles_no_pattern_when_imported() -> None:
    """Every hook (a prompt's on every prompt) imports `memex.hooks.events`: the pattern only a Stop hook
    uses (the answer's start it waits for) is compiled on first use, not at import."""
    import subprocess
    import sys

    code = (
        "import re, sys\n"
        "compile, callers = re.compile, []\n"
        "re.compile = lambda *a, **k: callers.append(sys._getframe(1).f_globals['__name__']) or compile(*a, **k)\n"
        "import memex.hooks.events\n"
        "print(' '.join(callers))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "memex.hooks.events" not in result.stdout.split()


def test_large_backlog_is_handed_to_a_background_index(env: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMEX_HOOK_INLINE_INGEST_MAX_BYTES", "200")
    session = transcript(tmp_path / "p", CURRENT, "/home/dev/shop")
    for n in range(5):
        simple_turn(session, f"question {n} about the zeppelin module", f"answer {n}")
    result = hook("Stop", stop_event(session))
    assert result.returncode == 0 and result.stdout == b""
    assert "handed to a background index" in runs(env)[-1]["detail"]

    def indexed() -> int:
        if not (env / "memex.db").exists():
            return 0
        with sqlite3.connect(env / "memex.db") as db:
            return db.execute("SELECT count(*) FROM turns WHERE session_id = ?", (CURRENT,)).fetchone()[0]

    deadline = time.monotonic() + 30
    while indexed() < 5 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert indexed() == 5
