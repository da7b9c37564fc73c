"""`memex index` over the default folders through the warm server (memex.ingest.live): its live tree
replaces the walk, and the run indexes, counts and reports what a walk would."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hooktools
from agent_cli import index_json
from memex.config import Config, load_config
from memex.hooks import warm
from memex.ingest import live
from memex.sources import tree
from transcripts import ClaudeSession, retry_projects, simple_turn

pytestmark = pytest.mark.skipif(not tree.available(), reason="the live tree needs inotify (Linux)")

FILES = 6


# A server's first answer may wait for its listing of the folders.
wait_for = functools.partial(hooktools.wait_for, seconds=20.0)


@pytest.fixture
def sessions(run, home: Path, tmp_path: Path) -> list[ClaudeSession]:
    """FILES Claude sessions in the default folder, indexed by a walk; the first has a subagent."""
    found = retry_projects(tmp_path / "claude-projects", FILES)
    agent = ClaudeSession(found[0].path.with_suffix("") / "subagents" / "agent-a1.jsonl", found[0].session_id, "a1")
    simple_turn(agent, "look for the retry loop", "found it in client.py")
    assert index_json(run, "--all")["files_changed"] == FILES + 1
    return found


@pytest.fixture
def server(sessions: list[ClaudeSession], monkeypatch: pytest.MonkeyPatch) -> Iterator[warm.WarmServer]:
    """A warm server (in a thread of this process, on its real socket) with `index_warm` on, its tree made."""
    monkeypatch.setenv("MEMEX_INDEX_WARM", "1")
    with serving() as instance:
        assert wait_for(lambda: (instance.live_index() or live.LiveIndex(instance.config)).tree.folders > 0)
        yield instance


@contextlib.contextmanager
def serving() -> Iterator[warm.WarmServer]:
    """A warm server as `memex index` starts one, in a thread of this process, on its real socket."""
    instance = warm.WarmServer(load_config(), idle_seconds=120, for_index=True)
    thread = threading.Thread(target=instance.serve, daemon=True)
    thread.start()
    try:
        assert wait_for(lambda: warm.ask(instance.config, "ping", {}).answer is not None)
        yield instance
    finally:
        instance.stopping.set()
        thread.join(10)


def walked(run, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """`memex index --json` by a walk (what the server's run must agree with)."""
    monkeypatch.setenv("MEMEX_INDEX_WARM", "0")
    try:
        return index_json(run, "--all")
    finally:
        monkeypatch.setenv("MEMEX_INDEX_WARM", "1")


def counts(report: dict[str, Any]) -> tuple[int, ...]:
    return tuple(report[key] for key in ("files", "files_changed", "sessions", "subagents", "turns", "failed_files"))


def test_the_server_indexes_what_changed_as_a_walk_would(
    server: warm.WarmServer, sessions: list[ClaudeSession], run, monkeypatch: pytest.MonkeyPatch
) -> None:
    simple_turn(sessions[2], "the retry loop again", "now with a backoff")  # grown
    new_id = "0000aaaa-0000-4000-8000-000000000001"
    new = ClaudeSession(sessions[3].path.parent / "fresh" / f"{new_id}.jsonl", new_id)  # in a new folder
    simple_turn(new, "a new session", "about the cache")
    second = ClaudeSession(sessions[1].path.with_suffix("") / "subagents" / "agent-b2.jsonl", sessions[1].session_id)
    second.agent_id = "b2"
    simple_turn(second, "a subagent's prompt", "a subagent's answer about the queue")  # a new subagent folder
    sessions[4].path.unlink()  # gone: no longer counted
    served = index_json(run)
    assert served["warm"] is True
    assert counts(served) == (FILES + 2, 3, FILES, 2, 4, 0)  # as a walk counts them (the grown one: 2 turns)
    again = walked(run, monkeypatch)  # the server wrote the store a walk reads: nothing left to do
    assert again["warm"] is False
    assert counts(again)[:4] == (FILES + 2, 0, FILES, 2)
    for words, session_id in (("backoff", sessions[2].session_id), ("cache", new_id), ("queue", second.session_id)):
        hits = json.loads(run("search", "--mode", "lexical", words, "--json").stdout)
        assert [hit["session_id"] for hit in hits] == [session_id]
    assert counts(index_json(run))[:4] == (FILES + 2, 0, FILES, 2)  # and again by the server: nothing


def test_a_write_just_before_the_run_is_seen(server: warm.WarmServer, sessions: list[ClaudeSession], run) -> None:
    for n in range(5):  # the agent writes, then its hook runs `memex index` at once
        simple_turn(sessions[0], f"question {n} about the pool", f"answer {n} about the pool")
        report = index_json(run)
        assert (report["warm"], report["files_changed"]) == (True, 1)  # its last turn written again, and the new


def test_a_folder_moved_in_and_out_is_followed(
    server: warm.WarmServer, sessions: list[ClaudeSession], run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = sessions[0].path.parent
    shutil.move(project, tmp_path / "elsewhere")  # a project folder moved away: its sessions are gone
    report = index_json(run)
    assert report["warm"] is True
    assert report["files"] == counts(walked(run, monkeypatch))[0]
    shutil.move(tmp_path / "elsewhere", project)  # and back, then one of its sessions grows
    simple_turn(sessions[0], "back again", "the retry loop, moved back")
    report = index_json(run)
    assert (report["warm"], report["files"], report["files_changed"]) == (True, FILES + 1, 1)


def test_much_to_read_is_left_to_the_client(server: warm.WarmServer, home: Path, tmp_path: Path, run) -> None:
    many = retry_projects(tmp_path / "claude-projects" / "-home-dev-many", 20)  # >= PARALLEL_MIN_FILES new files
    report = index_json(run)
    assert report["warm"] is False  # walked here: with worker processes and a progress bar
    assert report["files_changed"] == len(many)


def test_the_server_walks_no_folder_the_client_does_not_see(server: warm.WarmServer, home: Path) -> None:
    config: Config = server.config
    payload = {"agents": ["claude"], "roots": {"claude": ["/somewhere/else"]}}
    reply = warm.ask(config, "index", payload)
    assert reply.answer is not None and "report" not in reply.answer and reply.answer["walk"]
    payload["roots"] = {"claude": [str(p) for p in live._roots(config, ["claude"])["claude"]]}
    reply = warm.ask(config, "index", payload)
    assert reply.answer is not None and reply.answer["report"]["files"] == FILES + 1


def test_with_no_server_runs_that_come_often_start_one(
    sessions: list[ClaudeSession], run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMEX_INDEX_WARM", "1")
    config = load_config()
    try:
        report = index_json(run)
        assert (report["warm"], report["files"]) == (False, FILES + 1)
        time.sleep(1.0)
        assert warm.server_pid(config) is None  # a first run (or a nightly one) starts nothing
        assert index_json(run)["warm"] is False  # the next, soon after: walked, and a server started
        assert wait_for(lambda: warm.server_pid(config) is not None)
        pid = warm.server_pid(config)
        assert "--for-index" in Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
        simple_turn(sessions[1], "one more", "served this time")
        assert wait_for(lambda: index_json(run)["warm"] is True)
    finally:
        warm.shutdown_all(config)


def test_a_store_the_server_cannot_write_is_said_as_a_walk_would_say_it(
    sessions: list[ClaudeSession], home: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMEX_INDEX_WARM", "1")
    monkeypatch.setenv("MEMEX_BUSY_TIMEOUT_MS", "200")
    with serving() as instance:
        simple_turn(sessions[1], "a prompt while the store is locked", "an answer")
        holder = sqlite3.connect(instance.config.db_path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")  # another writer holds the store past the busy timeout
            payload = {"agents": [], "roots": live._roots(instance.config, ())}
            answer = warm.ask(instance.config, "index", payload).answer
            assert answer is not None and "cannot write to" in answer["store_error"]  # said, not walked again
            result = run("index", "--json")
        finally:
            holder.close()
        assert result.exit_code != 0
        assert "cannot write to" in result.stderr and "Traceback" not in result.stderr
        assert index_json(run)["warm"] is True  # the lock gone: served


def test_index_warm_off_never_asks(sessions: list[ClaudeSession], run) -> None:
    assert os.environ["MEMEX_INDEX_WARM"] == "0"
    assert live.ask_index(load_config(), ()) is None
    assert index_json(run)["warm"] is False
    assert warm.server_pid(load_config()) is None  # and starts no server


def test_a_change_of_the_store_alone_is_seen(
    server: warm.WarmServer, sessions: list[ClaudeSession], run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's run agrees with a walk when the store changed and no file did (a forget: its rows go,
    its tombstone keeps the file from coming back): the tree's remembered sieve is not trusted then."""
    assert index_json(run)["warm"] is True  # the server's sieve remembered
    forgotten = run("forget", sessions[3].session_id, "--yes")
    assert forgotten.exit_code == 0, forgotten.output
    served = index_json(run)
    assert served["warm"] is True
    assert counts(served) == counts(walked(run, monkeypatch))
    assert served["sessions"] == FILES - 1


LIVE = Path(__file__).resolve().parent.parent / "fixtures" / "live"
# Real transcripts of current agents (tests/fixtures/README.md) -> the default folder the `home` fixture
# points each agent to.
REAL = {
    "claude-2.1.330/projects": "claude-projects",
    "codex-0.169.0/sessions": "codex-sessions",
    "gemini-0.61.0/tmp": "gemini-tmp",
    "copilot-1.0.102/session-state": "copilot-session-state",
    "qwen-code-0.24.4/projects": "qwen-projects",
    "pi-0.73.1/sessions": "pi-sessions",
    "cline-3.0.65/sessions": "cline-sessions",
}


def test_real_transcripts_of_every_agent_are_counted_as_a_walk_counts_them(
    home: Path, tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch
) -> None:
    for source, folder in REAL.items():
        shutil.copytree(LIVE / source, tmp_path / folder)
    shutil.copy(LIVE / "opencode-1.18.33" / "opencode.db", tmp_path / "opencode.db")
    first = index_json(run, "--all")
    assert first["files"] >= 10 and first["failed_files"] == 0
    monkeypatch.setenv("MEMEX_INDEX_WARM", "1")
    with serving():
        rollout = next((tmp_path / "codex-sessions").rglob("*.jsonl"))
        with open(rollout, "a") as handle:  # a Codex rollout grows by the line it ended with
            handle.write(rollout.read_text().splitlines()[-1] + "\n")
        transcript = next((tmp_path / "claude-projects").rglob("*.jsonl"))
        with open(transcript, "a") as handle:
            handle.write(transcript.read_text().splitlines()[-1] + "\n")
        served = index_json(run)
        assert served["warm"] is True and served["files_changed"] == 2
        again = walked(run, monkeypatch)
        assert again["files_changed"] == 0
        assert (
            counts(served)[:1] + counts(served)[2:4]
            == counts(again)[:1] + counts(again)[2:4]
            == (
                first["files"],
                first["sessions"],
                first["subagents"],
            )
        )
        assert counts(index_json(run)) == (first["files"], 0, first["sessions"], first["subagents"], 0, 0)


def test_a_served_run_opens_no_store_in_the_client_and_says_a_rename(
    sessions: list[ClaudeSession], run, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client of a served run imports neither the store's modules nor SQLite; the server follows a
    renamed computer and says so through the client, as the client's own run would."""
    monkeypatch.setenv("MEMEX_INDEX_WARM", "1")

    def index() -> tuple[subprocess.CompletedProcess[str], set[str]]:
        entry = "from memex.cli.entry import main; main()"
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", entry, "index", "--json"], capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["warm"] is True
        lines = result.stderr.splitlines()
        result.stderr = "\n".join(line for line in lines if "import time:" not in line)
        return result, {line.rsplit("|", 1)[-1].strip() for line in lines if "import time:" in line}

    with serving():
        _, imported = index()
        assert "memex.cli.lean" in imported and not {"memex.api", "sqlite3", "memex.store.db"} & imported
    monkeypatch.setenv("MEMEX_COMPUTER", "newbox")  # the sessions were indexed as testbox
    with serving():
        renamed, _ = index()
        assert f"this computer was 'testbox', now 'newbox': {FILES} sessions" in renamed.stderr
        assert "testbox" not in run("sessions", "list", "--json").stdout
