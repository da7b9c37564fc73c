"""The daemon's loop with a fake clock: debounced ingest, publication on close, periodic refresh, Stop
notifications, its lock and extra tasks; and the real `memex daemon` process."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest
import redis

from corpus import LIVE_AIDER
from memex.errors import UserError
from memex.hooks.events import run as run_hook
from memex.signals import daemon_running, notify_stop
from memex.sync.daemon import ROOTS_REFRESH_SECONDS, Daemon
from memex.sync.keys import Keys
from synctools import CODEX_SHORT, GEMINI_LEGACY, SLAY, TOKEN, Computer, drop_prefix, settle, wait_until
from transcripts import ClaudeSession, simple_turn

pytestmark = [pytest.mark.model, pytest.mark.subprocess]

SESSION = "dddddddd-1111-2222-3333-444444444444"


def new_session(computer: Computer) -> ClaudeSession:
    return ClaudeSession(computer.claude_dir / "-home-dev-shop" / f"{SESSION}.jsonl", SESSION)


def publications(redis_url: str, prefix: str, session_id: str = SESSION) -> int:
    """How many times a session's mirror went into the stream."""
    client = redis.Redis.from_url(redis_url)
    try:
        return sum(
            1 for _, fields in client.xrange(Keys(prefix).stream) if fields[b"session_id"] == session_id.encode()
        )
    finally:
        client.close()


def test_changes_are_ingested_once_they_settle(computers) -> None:
    a = computers("alpha", daemon_debounce_seconds=2, daemon_debounce_max_seconds=10)
    a.start()
    session = new_session(a)
    simple_turn(session, "first words about the ocelot build", "ok")
    assert a.step().ingested == 0  # seen, held by the debounce
    a.clock.advance(1)
    simple_turn(session, "more words", "ok")
    assert a.step().ingested == 0  # still being written
    a.clock.advance(2)
    assert a.step().ingested == 1  # quiet for 2 s: one ingest for both bursts
    # A session written without pause is ingested at the latest after debounce_max.
    ingested = 0
    for _ in range(12):
        simple_turn(session, "a steady stream of work", "ok")
        a.clock.advance(1)
        ingested += a.step().ingested
    assert ingested == 1


def test_a_mirror_is_published_when_its_session_closes(computers, redis_url: str, prefix: str) -> None:
    a = computers("alpha", mirror_idle_seconds=300)
    a.start()
    session = new_session(a)
    simple_turn(session, "why is the tapir service slow", "the cache is cold")
    a.step()
    a.clock.advance(2)
    assert a.step().ingested == 1
    for _ in range(29):  # 290 s of quiet: still open
        a.clock.advance(10)
        assert a.step().queued == 0
    a.clock.advance(10)
    report = a.step()
    assert report.queued == 1 and report.sent == 1
    assert publications(redis_url, prefix) == 1
    for _ in range(10):  # nothing changed: nothing more to send
        a.clock.advance(60)
        assert a.step().queued == 0


def test_a_long_session_is_refreshed_every_half_hour(computers, redis_url: str, prefix: str) -> None:
    a = computers("alpha", mirror_idle_seconds=300, mirror_refresh_seconds=1800)
    a.start()
    session = new_session(a)
    for minute in range(70):  # a turn a minute for 70 minutes
        simple_turn(session, f"step {minute} of the long migration", "done")
        a.clock.advance(58)
        a.step()
        a.clock.advance(2)
        a.step()
    assert publications(redis_url, prefix) == 2  # at 30 and 60 minutes
    a.clock.advance(300)
    a.step()
    assert publications(redis_url, prefix) == 3  # and when it closes


def test_a_stop_notification_publishes_at_once(computers, redis_url: str, prefix: str) -> None:
    a = computers("alpha", mirror_idle_seconds=300)
    assert not notify_stop(a.home, SESSION)  # no daemon: nothing is written
    a.start()
    assert daemon_running(a.home)
    session = new_session(a)
    simple_turn(session, "configure the kinkajou proxy", "done")
    # Claude Code's Stop hook: it ingests the session, then tells the daemon.
    payload = {"session_id": SESSION, "transcript_path": str(session.path), "hook_event_name": "Stop"}
    output, entry = run_hook("Stop", json.dumps(payload).encode(), env=a.env)
    assert output == "" and entry["status"] == "ok"
    report = a.step()
    assert report.sent == 1 and publications(redis_url, prefix) == 1
    assert not list((a.home / "signals").glob("*.json"))  # taken


def test_a_second_daemon_for_the_same_home_is_refused(computers) -> None:
    a = computers("alpha")
    a.start()
    second = Daemon(a.config, clock=a.clock, serve_api=False)
    with pytest.raises(UserError, match="already runs"):
        second.start()
    second.close()
    assert daemon_running(a.home)  # the first one's pid file is untouched
    a.stop()
    assert not daemon_running(a.home)


def test_extra_tasks_run_every_pass_and_their_errors_do_not_stop_it(
    computers, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="memex")
    calls = []

    def drain_embeddings() -> None:
        calls.append(1)
        raise RuntimeError("model not loaded")

    a = computers("alpha")
    a.start(tasks=[drain_embeddings])
    for _ in range(5):
        a.clock.advance(1)
        a.step()
    assert len(calls) == 5
    assert len([r for r in caplog.records if "model not loaded" in r.getMessage()]) == 1


def test_daemon_once_from_the_cli(computers, redis_url: str, prefix: str) -> None:
    a = computers("alpha")
    a.env.pop("MEMEX_API_TOKEN")
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    result = a.cli("daemon", "--once", "--no-api")
    assert result.exit_code == 0, result.output
    assert "computer alpha" in result.stderr and "api-token" in result.stderr
    token_file = a.home / "api-token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600 and len(token_file.read_text().strip()) >= 32
    assert publications(redis_url, prefix, SLAY.stem) == 1
    again = a.cli("daemon", "--once", "--no-api")
    assert again.exit_code == 0 and publications(redis_url, prefix, SLAY.stem) == 1  # nothing new to send


def test_an_empty_token_file_is_replaced(computers) -> None:
    """An empty `api-token` (touched, or cut short by a crash) holds no token: the daemon writes one (it
    recursed until RecursionError)."""
    a = computers("alpha")
    a.env.pop("MEMEX_API_TOKEN")
    a.home.mkdir(parents=True)
    (a.home / "api-token").touch()
    result = a.cli("daemon", "--once", "--no-api")
    assert result.exit_code == 0, result.output
    token_file = a.home / "api-token"
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600 and len(token_file.read_text().strip()) >= 32
    assert sorted(path.name for path in a.home.iterdir() if "token" in path.name) == ["api-token"]


def test_a_busy_api_port_is_one_clear_line(computers) -> None:
    a = computers("alpha")
    a.start(serve_api=True)
    assert a.daemon is not None and a.daemon.api is not None
    b = computers("beta", api_address=f"127.0.0.1:{a.daemon.api.port}")
    result = b.cli("daemon", "--once")
    assert result.exit_code == 2 and "cannot listen" in result.stderr and "Traceback" not in result.output


def test_the_real_daemon_process(computers, tmp_path: Path) -> None:
    """`memex daemon` as a user runs it: it announces itself, ships a new session, serves its API and stops
    cleanly on SIGTERM."""
    a = computers("alpha", mirror_idle_seconds=1, daemon_debounce_seconds=0, daemon_scan_seconds=0, heartbeat_seconds=1)
    b = computers("beta")
    b.start()
    env = {**os.environ, **a.env}
    process = subprocess.Popen(
        [sys.executable, "-m", "memex", "daemon"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:

        def alpha_live() -> bool:
            rows = json.loads(b.cli("computers", "--json").stdout)["computers"]
            return any(r["computer"] == "alpha" and r["status"] == "live" and r["api_url"] for r in rows)

        wait_until(alpha_live, timeout=20)
        session = new_session(a)
        simple_turn(session, "the real daemon ships the axolotl notes", "shipped")

        def received() -> bool:
            b.step()
            return SESSION in b.mirrors("alpha")

        wait_until(received, timeout=20)
        raw = b.cli("show", SESSION, "--raw")
        assert raw.exit_code == 0 and raw.stdout_bytes == session.path.read_bytes()
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=20)
        assert process.returncode == 0, err.decode()
        assert b"memex daemon: stopped" in err and b"Traceback" not in err
        rows = json.loads(b.cli("computers", "--json").stdout)["computers"]
        assert next(r for r in rows if r["computer"] == "alpha")["status"] == "stale"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def _daemon_process(computer: Computer, stderr: IO[bytes] | int = subprocess.PIPE) -> subprocess.Popen[bytes]:
    """`memex daemon` as its own process, once it runs (its pid file written)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "memex", "daemon", "--no-api"],
        env={**os.environ, **computer.env},
        stdout=subprocess.DEVNULL,
        stderr=stderr,
    )
    pid_file = computer.home / "daemon.pid"

    def started() -> bool:
        return process.poll() is not None or (pid_file.exists() and pid_file.read_text() == str(process.pid))

    wait_until(started, timeout=30)
    assert process.poll() is None, process.communicate()[1].decode()
    return process


def test_a_misspelled_model_is_one_line_and_the_daemon_goes_on(computers, tmp_path: Path) -> None:
    """embed_model set to a name memex does not know: the daemon logs one line naming the setting and the
    choices (not a traceback, not again at every pass) and keeps indexing; words still find."""
    a = computers("alpha", embed_model="e5-smal-q4", daemon_debounce_seconds=0, daemon_embed_seconds=1)
    log_file = tmp_path / "daemon.err"
    with log_file.open("wb") as err:
        process = _daemon_process(a, stderr=err)
    expected = "embed_model 'e5-smal-q4' is not a model memex knows; choices: e5-small-q4"
    try:
        session = new_session(a)
        simple_turn(session, "the first notes about the okapi enclosure", "noted")
        wait_until(lambda: expected in log_file.read_text(), timeout=30)  # its turn queued for a vector
        simple_turn(session, "later: the okapi enclosure needs a gate", "a gate it is")
        wait_until(lambda: "needs a gate" in a.cli("search", "okapi gate", "--mode", "lexical").stdout, timeout=30)
        assert process.poll() is None
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
    log = log_file.read_text()
    assert process.returncode == 0 and "Traceback" not in log, log
    assert [line for line in log.splitlines() if "e5-smal-q4" in line] == [
        next(line for line in log.splitlines() if expected in line)
    ], log
    found = a.cli("search", "okapi")
    assert found.exit_code == 0 and f"semantic search unavailable ({expected})" in found.stderr


def test_a_killed_daemon_is_not_taken_for_a_running_one(computers) -> None:
    """SIGKILL leaves the daemon's pid file behind: the Stop hook must not keep leaving notifications for
    it (instead of starting the background embedding), and a new daemon starts where it stopped."""
    a = computers("alpha", mirror_idle_seconds=300)
    process = _daemon_process(a)
    assert daemon_running(a.home)
    process.kill()
    process.wait()
    assert (a.home / "daemon.pid").exists()  # left behind
    assert not daemon_running(a.home)
    session = new_session(a)
    simple_turn(session, "configure the kinkajou proxy", "done")
    payload = {"session_id": SESSION, "transcript_path": str(session.path), "hook_event_name": "Stop"}
    output, entry = run_hook("Stop", json.dumps(payload).encode(), env=a.env)
    assert output == "" and entry["status"] == "ok"
    assert not list((a.home / "signals").glob("*.json"))  # nobody would take it
    again = _daemon_process(a)
    try:
        assert daemon_running(a.home)
    finally:
        again.send_signal(signal.SIGTERM)
        _, err = again.communicate(timeout=20)
    assert again.returncode == 0 and b"Traceback" not in err, err.decode()
    assert not daemon_running(a.home) and not (a.home / "daemon.pid").exists()


def test_a_hangup_stops_the_daemon_cleanly(computers) -> None:
    """SIGHUP (the terminal the daemon was started from closed) stops it like SIGTERM: it withdraws its
    heartbeat and removes its pid file (it died on the spot, announced live until the heartbeat expired)."""
    a = computers("alpha", heartbeat_ttl_seconds=3600)
    b = computers("beta")
    process = _daemon_process(a)

    def alpha_status() -> str | None:
        rows = json.loads(b.cli("computers", "--json").stdout)["computers"]
        return next((r["status"] for r in rows if r["computer"] == "alpha"), None)

    try:
        wait_until(lambda: alpha_status() == "live", timeout=20)
        process.send_signal(signal.SIGHUP)
        _, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0 and b"memex daemon: stopped" in err, err.decode()
    assert not (a.home / "daemon.pid").exists() and alpha_status() == "stale"


def test_an_edited_config_file_restarts_the_daemon_with_its_settings(computers, redis_url: str, prefix: str) -> None:
    """`config.toml` edited while the daemon runs (setting up sharing, step 3): the daemon restarts with
    the new settings (it kept the old ones until restarted by hand); an edit that does not load is logged
    and the daemon keeps running with its settings."""
    moved = f"{prefix}-moved"
    a = computers("alpha")
    a.env.pop("MEMEX_REDIS_PREFIX")
    a.home.mkdir(parents=True)
    settings = a.home / "config.toml"
    settings.write_text(f'redis_prefix = "{prefix}"\n')
    client = redis.Redis.from_url(redis_url)
    log = a.root / "daemon.err"
    with log.open("wb") as stderr:
        process = _daemon_process(a, stderr)
    try:
        wait_until(lambda: client.exists(Keys(prefix).heartbeat("alpha")), timeout=20)
        settings.write_text("redis_prefix = \n")  # being typed
        wait_until(lambda: b"the daemon keeps its settings" in log.read_bytes(), timeout=20)
        assert process.poll() is None and daemon_running(a.home)
        settings.write_text(f'redis_prefix = "{moved}"\n')
        wait_until(lambda: client.exists(Keys(moved).heartbeat("alpha")), timeout=20)
        assert not client.exists(Keys(prefix).heartbeat("alpha"))  # withdrawn by the clean stop
        wait_until(lambda: daemon_running(a.home), timeout=20)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        client.close()
        drop_prefix(redis_url, moved)
    err = log.read_text()
    assert process.returncode == 0 and "restarts with the new settings" in err and "Traceback" not in err, err
    assert err.count("memex daemon: computer alpha") == 2 and err.rstrip().endswith("memex daemon: stopped")


def test_the_daemon_counts_as_running_during_its_start_up_index(computers) -> None:
    """The start-up index (the first one is a backfill of minutes) runs with the pid file written: the
    daemon is running for the Stop hook, `memex doctor` and a second daemon (it was absent until the index
    ended, so a second daemon was refused with 'pid ?'); SIGTERM then stops it cleanly (it died on the
    spot, its pid file left behind)."""
    a = computers("alpha", busy_timeout_ms=4000)
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    assert a.cli("index").exit_code == 0
    simple_turn(new_session(a), "a session written while no daemon ran", "ok")
    blocker = sqlite3.connect(a.config.db_path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the start-up index waits for the store
    log = a.root / "daemon.err"
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "memex", "daemon", "--no-api"],
            env={**os.environ, **a.env},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        wait_until(lambda: daemon_running(a.home) or process.poll() is not None, timeout=6)
        assert process.poll() is None and daemon_running(a.home)
        refused = a.cli("daemon", "--once", "--no-api")
        assert refused.exit_code != 0 and f"(pid {process.pid})" in refused.stderr
        process.send_signal(signal.SIGTERM)  # systemctl stop, during the start-up index
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        try:
            process.wait(timeout=30)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    err = log.read_text()
    assert process.returncode == 0 and "memex daemon: stopped" in err and "Traceback" not in err, err
    assert not (a.home / "daemon.pid").exists()


def test_settle_helper_sanity(computers) -> None:
    """Two idle daemons settle at once (the helper the other tests rely on)."""
    a, b = computers("alpha"), computers("beta")
    a.start()
    b.start()
    settle(a, b, passes=3)
    assert TOKEN and a.step().waiting == 0


def test_each_agents_new_transcripts_are_found_and_other_files_ignored(computers) -> None:
    a = computers("alpha")
    a.start()
    rollout = a.codex_dir / "2025" / "11" / "13" / CODEX_SHORT.name
    rollout.parent.mkdir(parents=True)
    rollout.write_bytes(CODEX_SHORT.read_bytes())
    chat = a.gemini_dir / GEMINI_LEGACY.parent.parent.name / "chats" / GEMINI_LEGACY.name
    chat.parent.mkdir(parents=True)
    chat.write_bytes(GEMINI_LEGACY.read_bytes())
    (a.gemini_dir / GEMINI_LEGACY.parent.parent.name / "logs.json").write_text("[]")
    noise = a.claude_dir / "-home-dev-shop" / SESSION / "tool-results" / "toolu_1.jsonl"
    noise.parent.mkdir(parents=True)
    noise.write_text('{"not": "a transcript"}\n')
    a.step()
    a.clock.advance(a.config.daemon_debounce_seconds)
    assert a.step().ingested == 2
    assert {m["agent"] for m in a.mirrors("alpha").values()} == {"codex", "gemini"}


def test_histories_in_project_folders_found_after_the_start_are_watched(computers) -> None:
    """Aider keeps its history in the project folder, found through the projects of the indexed sessions:
    a project first seen while the daemon runs is watched too (its folders were fixed at start)."""
    a = computers("alpha")
    project = a.root / "shop"
    project.mkdir(parents=True)
    a.start()
    session = ClaudeSession(a.claude_dir / "-shop" / f"{SESSION}.jsonl", SESSION, cwd=str(project))
    simple_turn(session, "set up the wombat service", "done")
    a.step()
    a.clock.advance(a.config.daemon_debounce_seconds)
    assert a.step().ingested == 1
    shutil.copy(LIVE_AIDER / ".aider.chat.history.md", project / ".aider.chat.history.md")
    ingested = 0
    for _ in range(4):
        a.clock.advance(ROOTS_REFRESH_SECONDS / 2)
        ingested += a.step().ingested
    assert ingested == 1
    conn = sqlite3.connect(a.config.db_path)
    try:
        assert conn.execute("SELECT count(*) FROM sessions WHERE agent = 'aider'").fetchone()[0] > 0
    finally:
        conn.close()


def test_search_on_this_computer_needs_no_daemon(computers) -> None:
    a = computers("alpha")
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    a.start()
    a.stop()
    result = a.cli("search", "slay", "--computer", "alpha", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)[0]["session_id"] == SLAY.stem


def test_an_ingest_that_fails_is_tried_again(computers, monkeypatch: pytest.MonkeyPatch) -> None:
    import memex.sync.daemon as daemon_module

    a = computers("alpha")
    a.start()
    session = new_session(a)
    simple_turn(session, "the store is locked for a moment", "ok")
    real = daemon_module.ingest_transcript
    calls = 0

    def locked_once(*args, **kwargs):
        nonlocal calls
        calls += 1
        if calls == 1:
            raise sqlite3.OperationalError("database is locked")
        return real(*args, **kwargs)

    monkeypatch.setattr(daemon_module, "ingest_transcript", locked_once)
    a.step()
    a.clock.advance(a.config.daemon_debounce_seconds)
    assert a.step().ingested == 0  # failed, logged, kept
    assert a.step().ingested == 1
    assert SESSION in a.mirrors("alpha")


def test_the_daemon_embeds_what_it_ingested(computers) -> None:
    from memex import Memex

    a = computers("alpha", daemon_debounce_seconds=1)
    face = Memex(a.config)
    a.start(tasks=[lambda: face.embed_slice(30)])
    session = new_session(a)
    simple_turn(session, "why does the ocelot build fail on arm64", "The linker flag was missing; added it.")
    a.step()
    a.clock.advance(2)
    assert a.step().ingested == 1
    a.clock.advance(1)
    a.step()  # the embedding task runs after the ingest of the same pass, or at the next one
    conn = sqlite3.connect(a.config.db_path)
    pending = conn.execute("SELECT count(*) FROM embed_jobs WHERE status = 'pending'").fetchone()[0]
    levels = {r[0] for r in conn.execute("SELECT DISTINCT level FROM vectors")}
    assert pending == 0 and levels == {"chunk", "turn", "session"}
