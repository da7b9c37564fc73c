"""The warm server: same answers as the cold path, started on demand, gone when idle or outdated."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hooktools import MEMEX, PAST, build_corpus, context, hook, prompt_event, runs, wait_for
from memex import doctor
from memex.api import Memex
from memex.config import Config, load_config
from memex.hooks import warm
from memex.store.db import connect_existing

PROMPT = "why does parse_config_file crash when the config file is empty?"


@pytest.fixture
def corpus(home: Path, tmp_path: Path, run, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    sessions = build_corpus(tmp_path / "claude-projects")
    run("index", str(tmp_path / "claude-projects"))
    return sessions


@pytest.fixture
def server(corpus, home: Path):
    """A warm server running in a thread of the test process."""
    config = load_config()
    instance = warm.WarmServer(config, idle_seconds=60)
    thread = threading.Thread(target=instance.serve, daemon=True)
    thread.start()
    assert wait_for(lambda: warm.ask(config, "ping", {}).answer is not None)
    yield instance, thread, config
    instance.stopping.set()
    thread.join(10)


def sock(config: Config) -> Path:
    return warm.socket_path(config.home, warm.server_key(config))


def cold_text(config: Config, request: dict) -> str:
    conn = connect_existing(config.db_path, 1000)
    assert conn is not None
    try:
        return (
            Memex(config, conn)
            .recall(request["prompt"], session_id=request.get("session_id"), project_dir=request.get("project_dir"))
            .text
        )
    finally:
        conn.close()


def test_warm_answers_like_the_cold_path(server, corpus) -> None:
    _, _, config = server
    request = {"prompt": PROMPT, "session_id": corpus["current"].session_id, "project_dir": "/home/dev/shop"}
    reply = warm.ask(config, "recall", request)
    assert reply.answer is not None and reply.answer["hits"] == 2
    assert reply.answer["text"] == cold_text(config, request) and PAST[:8] in reply.answer["text"]
    assert warm.ask(config, "ping", {}).answer["requests"] >= 2


def test_one_server_per_home(server) -> None:
    _, _, config = server
    assert warm.WarmServer(config).serve() is False  # the lock stays held: the second one gives up


def test_outdated_client_or_server_stops_it(server) -> None:
    _, thread, config = server
    reply = warm.ask(config, "recall", {"prompt": PROMPT}, stamp="another-version")
    assert reply.answer is None and reply.reason == "stale" and reply.needs_server
    # The replacement started right away waits for the old one to let go, then serves.
    successor = warm.WarmServer(config, idle_seconds=60)
    follower = threading.Thread(target=successor.serve, daemon=True)
    follower.start()
    thread.join(5)
    assert not thread.is_alive()
    try:
        assert wait_for(lambda: warm.ask(config, "ping", {}).answer is not None)
        assert follower.is_alive()
    finally:
        successor.stopping.set()
        follower.join(5)
    assert not sock(config).exists()


def test_settings_change_stops_it(server) -> None:
    """An edit of `config.toml` that changes the server's settings retires it: no hook asks for them now."""
    instance, thread, config = server
    config.config_file.write_text("recall_max_hits = 2\n")
    # A hook loads its settings afresh: the edited file's are another server's.
    edited = load_config()
    assert warm.server_key(edited) != instance.key
    assert warm.ask(edited, "recall", {"prompt": PROMPT}).reason == "absent"
    thread.join(5)
    assert not thread.is_alive() and not sock(config).exists()


def test_an_edit_that_keeps_the_settings_keeps_the_server(server) -> None:
    _, thread, config = server
    config.config_file.write_text("# a comment only\n")
    time.sleep(3 * warm.TICK_SECONDS)
    assert thread.is_alive() and warm.ask(load_config(), "ping", {}).answer is not None


def test_idle_server_exits(corpus, home: Path) -> None:
    config = load_config()
    instance = warm.WarmServer(config, idle_seconds=1)
    thread = threading.Thread(target=instance.serve, daemon=True)
    thread.start()
    assert wait_for(lambda: warm.ask(config, "ping", {}).answer is not None)
    thread.join(6)
    assert not thread.is_alive() and not sock(config).exists()
    assert warm.ask(config, "ping", {}).reason == "absent"


def test_bad_requests_get_errors(server) -> None:
    _, _, config = server
    path = sock(config)
    unknown = {"v": warm.code_stamp(), "s": warm.settings_stamp(config), "op": "nope"}  # not stale: unknown
    for data in (b"not json\n", b"[1]\n", json.dumps(unknown).encode() + b"\n"):
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(str(path))
        client.sendall(data)
        answer = json.loads(client.makefile().readline())
        client.close()
        assert answer["ok"] is False
    assert warm.ask(config, "ping", {}).answer is not None  # still serving


def test_stale_socket_file_is_refused(corpus, home: Path) -> None:
    config = load_config()
    path = sock(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(path))
    leftover.close()  # the file stays, nobody listens
    reply = warm.ask(config, "recall", {"prompt": PROMPT})
    assert reply.answer is None and reply.reason == "refused" and reply.needs_server


# Another process holding a lock file's lock, as a live server of other settings does, until its stdin ends.
HOLDER = """
import fcntl, os, sys
lock = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(lock, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def server_files(home: Path, key: str) -> list[Path]:
    return [home / f"warm-{key}.lock", warm.socket_path(home, key), warm.pid_path(home, key)]


def leave_files(home: Path, key: str, pid: int) -> list[Path]:
    """The files a server of `key` killed (or still running) has: its lock file, socket and pid file."""
    lock, path, pid_file = server_files(home, key)
    lock.touch()
    path.parent.mkdir(parents=True, exist_ok=True)
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(path))
    leftover.close()
    pid_file.write_text(str(pid))
    return [lock, path, pid_file]


def test_a_starting_server_sweeps_the_files_of_servers_gone(corpus, home: Path) -> None:
    """The lock file (and socket and pid file) of settings no longer used, of a killed server, and the
    `warm.sock` of versions before one server per settings go when a server starts; those of a live server
    of other settings stay, and a server that stops takes its own files with it."""
    config = load_config()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = leave_files(home, "deadbeef0001", int(gone.stdout))
    legacy = [home / "warm.lock", home / "warm.sock", home / "warm.pid"]
    for path in legacy:
        path.write_text(gone.stdout)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(home / "warm-11fe5e771e55.lock")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        live = leave_files(home, "11fe5e771e55", holder.pid)
        instance = warm.WarmServer(config, idle_seconds=60)
        thread = threading.Thread(target=instance.serve, daemon=True)
        thread.start()
        assert wait_for(lambda: warm.ask(config, "ping", {}).answer is not None)
        assert [path for path in dead + legacy if path.exists()] == []
        assert all(path.exists() for path in live) and warm.servers(home) == {
            instance.key: os.getpid(),
            "11fe5e771e55": holder.pid,
        }
        instance.stopping.set()
        thread.join(10)
        assert [path for path in server_files(home, instance.key) if path.exists()] == []
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
    assert warm.sweep(home, instance.key) == ["11fe5e771e55"]  # its process gone, its files go next
    assert [path for path in live if path.exists()] == []


def test_the_sweep_leaves_files_that_are_no_servers(home: Path) -> None:
    """Only `warm-<key>.{lock,sock,pid}` with a settings key are a server's: a user's `warm-notes.pid` or
    `warm-up.lock` beside them stays."""
    home.mkdir(parents=True, exist_ok=True)
    others = [home / "warm-notes.pid", home / "warm-up.lock", home / "warm-deadbeef0001.txt"]
    for path in others:
        path.write_text("mine")
    gone = leave_files(home, "deadbeef0001", 999_999_999)
    assert warm.sweep(home, "0123456789ab") == ["deadbeef0001"]
    assert [path for path in gone if path.exists()] == [] and all(path.exists() for path in others)


def test_a_server_leaves_a_lock_file_that_is_no_longer_its_own(corpus, home: Path) -> None:
    """A server whose lock file was removed while it ran (and made again by another) removes, as it stops,
    only its own: the newer lock file stays with whoever holds it."""
    config = load_config()
    instance = warm.WarmServer(config, idle_seconds=60)
    thread = threading.Thread(target=instance.serve, daemon=True)
    thread.start()
    assert wait_for(lambda: warm.ask(config, "ping", {}).answer is not None)
    lock = server_files(home, instance.key)[0]
    assert lock.name.endswith(".lock") and lock.exists()
    lock.unlink()
    lock.write_text("")  # another lock file now at its path
    instance.stopping.set()
    thread.join(10)
    assert lock.exists()


def test_long_home_puts_the_socket_in_the_temp_folder(tmp_path: Path) -> None:
    home = tmp_path / ("x" * 120)
    path = warm.socket_path(home, "a1")
    assert len(str(path)) < 108 and path.name.endswith(".sock") and str(os.getuid()) in path.parent.name
    assert warm.socket_path(home, "a1") == path and warm.socket_path(tmp_path / "y" / ("x" * 120), "a1") != path
    assert warm.socket_path(home, "b2") != path  # one server per settings, also there


def test_prompt_hook_starts_the_server_and_then_uses_it(corpus, home: Path, monkeypatch) -> None:
    """Through the real executable: the first prompt answers cold and starts the server; the next is warm."""
    monkeypatch.setenv("MEMEX_WARM_IDLE_SECONDS", "60")
    event = prompt_event(corpus["current"], PROMPT)
    first = context(hook("UserPromptSubmit", event), "UserPromptSubmit")
    assert runs(home)[-1]["path"] == "cold" and runs(home)[-1]["warm"] == "absent"
    config = load_config()
    try:
        assert wait_for(lambda: warm.ask(config, "ping", {}).answer is not None)
        pid = warm.server_pid(config)
        assert pid
        second = context(hook("UserPromptSubmit", event), "UserPromptSubmit")
        assert runs(home)[-1]["path"] == "warm" and second == first
        # Gated prompts never reach the server.
        assert hook("UserPromptSubmit", prompt_event(corpus["current"], "ok thanks")).stdout == b""
    finally:
        reply = warm.ask(config, "shutdown", {})
        pid = warm.server_pid(config)
        if reply.answer is None and pid:
            os.kill(pid, signal.SIGTERM)
    assert wait_for(lambda: warm.server_pid(config) is None)


def memex_cli(*args: str) -> str:
    result = subprocess.run([str(MEMEX), *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_two_settings_each_have_their_own_warm_server(corpus, home: Path, monkeypatch) -> None:
    """Two shells (or two Claude Code instances) with other MEMEX_* settings alternate prompts: after each
    one's first prompt both are answered warm, with their own settings, and neither server replaces the other.
    Doctor and `memex hooks status` see both; `memex hooks shutdown` stops both."""
    monkeypatch.setenv("MEMEX_WARM_IDLE_SECONDS", "60")
    event = prompt_event(corpus["current"], PROMPT)
    wide, narrow = dict(os.environ), {**os.environ, "MEMEX_RECALL_MAX_HITS": "1"}
    configs = {"wide": load_config(wide), "narrow": load_config(narrow)}
    hits = {"wide": 2, "narrow": 1}
    try:
        for name, env in (("wide", wide), ("narrow", narrow)):
            assert context(hook("UserPromptSubmit", event, env=env), "UserPromptSubmit")
            assert runs(home)[-1]["path"] == "cold" and runs(home)[-1]["warm"] == "absent"
            assert wait_for(lambda c=configs[name]: warm.ask(c, "ping", {}).answer is not None)
        pids = {name: warm.server_pid(config) for name, config in configs.items()}
        assert None not in pids.values() and pids["wide"] != pids["narrow"]
        for _ in range(2):
            for name, env in (("wide", wide), ("narrow", narrow)):
                assert context(hook("UserPromptSubmit", event, env=env), "UserPromptSubmit")
                assert runs(home)[-1]["path"] == "warm" and runs(home)[-1]["hits"] == hits[name]
        assert {name: warm.server_pid(config) for name, config in configs.items()} == pids
        assert warm.servers(home) == {warm.server_key(c): pids[n] for n, c in configs.items()}
        check = doctor.check_warm(configs["wide"])
        assert check.status == "ok" and str(pids["wide"]) in check.detail and str(pids["narrow"]) in check.detail
        status = json.loads(memex_cli("hooks", "status", "--json"))["warm_server"]
        assert status["pid"] == pids["wide"] and [other["pid"] for other in status["others"]] == [pids["narrow"]]
        assert memex_cli("hooks", "shutdown").strip() == "2 warm servers stopped."
        assert wait_for(lambda: not warm.servers(home))
        assert all(not sock(config).exists() for config in configs.values())
    finally:
        for config in configs.values():
            pid = warm.server_pid(config)
            if pid:
                os.kill(pid, signal.SIGTERM)
    assert memex_cli("hooks", "shutdown").strip() == "no warm server was running."
