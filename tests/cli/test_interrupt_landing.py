"""A signal's exception is raised wherever the interpreter happens to be. When it lands in a class being
created (a module imported on first use, as an agent's adapter is), Python re-raises it as "RuntimeError:
Error calling __set_name__": CI once saw a SIGTERM sent to the daemon during its start-up index end in that
traceback. Such an error is the interrupt it stands for: the command stops as interrupted, no file is
marked failed, and the daemon stops cleanly."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from memex.cli.daemon import _Stopped
from memex.errors import interrupt_behind
from memex.ingest import pipeline
from memex.sync import daemon as sync_daemon
from transcripts import ClaudeSession, simple_turn


class _LandsHere:
    """A descriptor whose `__set_name__` is where the signal arrives."""

    def __init__(self, interrupt: KeyboardInterrupt) -> None:
        self.interrupt = interrupt

    def __set_name__(self, owner: type, name: str) -> None:
        raise self.interrupt


def landed_in_a_class(interrupt: KeyboardInterrupt) -> RuntimeError:
    """The error Python raises when `interrupt` arrives while a class is being created."""
    try:
        type("Chat", (), {"meta": _LandsHere(interrupt)})
    except RuntimeError as exc:
        return exc
    raise AssertionError("Python no longer wraps an error of __set_name__")


def test_an_interrupt_is_found_behind_the_error_it_was_re_raised_as() -> None:
    interrupt = KeyboardInterrupt()
    error = landed_in_a_class(interrupt)
    assert "__set_name__" in str(error) and interrupt_behind(error) is interrupt
    assert interrupt_behind(interrupt) is interrupt
    try:
        try:
            raise ValueError("a bad line")
        except ValueError as inner:
            raise OSError("the file vanished") from inner
    except OSError as outer:
        assert interrupt_behind(outer) is None


@pytest.fixture(autouse=True)
def sigint_restored():
    """An interrupted command ignores a second Ctrl-C from then on: this test process must not (the
    processes later tests start would inherit it)."""
    handler = signal.getsignal(signal.SIGINT)
    yield
    signal.signal(signal.SIGINT, handler)


@pytest.fixture
def one_session(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    session_id = "11111111-2222-3333-4444-555555555555"
    simple_turn(ClaudeSession(root / "-home-dev-shop" / f"{session_id}.jsonl", session_id), "the cart total", "ok")
    return root


def test_a_ctrl_c_landing_in_a_class_interrupts_the_index_without_failing_the_file(
    run, one_session: Path, monkeypatch
) -> None:
    def read_the_file(*args, **kwargs):
        raise landed_in_a_class(KeyboardInterrupt())

    monkeypatch.setattr(pipeline, "ingest_transcript", read_the_file)
    interrupted = run("index", "--no-embed", str(one_session))
    assert interrupted.exit_code == 130, interrupted.output
    assert interrupted.stderr.startswith("memex: interrupted:") and "Traceback" not in interrupted.stderr
    monkeypatch.undo()
    again = run("index", "--no-embed", "--json", str(one_session))  # nothing was kept: it is all read now
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert (report["files_changed"], report["sessions"], report["turns"], report["failed_files"]) == (1, 1, 1, 0)


def test_a_sigterm_landing_in_a_class_during_the_start_up_index_stops_the_daemon(
    run, one_session: Path, home: Path, monkeypatch
) -> None:
    def index_all(self) -> None:
        raise landed_in_a_class(_Stopped())

    monkeypatch.setenv("MEMEX_REDIS_URL", "")
    monkeypatch.setattr(sync_daemon.Daemon, "index_all", index_all)
    stopped = run("daemon", "--once", "--no-api")
    assert stopped.exit_code == 0, stopped.output
    assert stopped.stderr.strip().splitlines()[-1] == "memex daemon: stopped"
    assert "failed" not in stopped.stderr and not (home / "daemon.pid").exists()
