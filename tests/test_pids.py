"""Whether the process a pid file names is alive, asked by a real process of another user: every check
(the daemon's, the warm server's, the doctor's) answers alike, and a process it may not signal (another
user's, which took a pid freed since: pid files live in the user's private home) is none of its memex."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memex import doctor
from memex.config import load_config
from memex.hooks import warm
from memex.signals import PID_FILE, daemon_running

NOBODY = 65534


@pytest.fixture
def shared_home() -> Iterator[Path]:
    """A MEMEX_HOME another user may read (pytest's own temp folders are private to this user)."""
    folder = Path(tempfile.mkdtemp(prefix="memex-pids-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()


def as_another_user(check: Callable[[], bool]) -> bool:
    """`check()` in a forked process that runs as another user than the process it asks about."""
    child = os.fork()
    if child == 0:
        code = 2
        try:
            if os.geteuid() == 0:
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            code = 0 if check() else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) != 2, "the check raised"
    return os.WEXITSTATUS(status) == 0


def others_pid() -> int:
    """A live process of another user than the checking one: this (root) process, or else pid 1."""
    if os.geteuid() == 0:
        return os.getpid()
    try:
        os.kill(1, 0)
    except PermissionError:
        return 1
    pytest.skip("no process of another user to ask about")


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def write_pids(home: Path, pid: int) -> None:
    config = load_config({"MEMEX_HOME": str(home)})
    for path in (home / PID_FILE, warm.pid_path(home, warm.server_key(config))):
        path.write_text(str(pid))
        path.chmod(0o644)


def test_a_process_of_another_user_is_no_daemon_or_server_for_every_check(shared_home: Path) -> None:
    """A stale pid file whose pid another user's process took since: the Stop hook must not take it for a
    running daemon (it would never start the background embedding), nor doctor call it running."""
    pid = others_pid()
    write_pids(shared_home, pid)
    config = load_config({"MEMEX_HOME": str(shared_home)})
    assert as_another_user(lambda: not daemon_running(shared_home))
    assert as_another_user(lambda: warm.server_pid(config) is None and not warm.servers(shared_home))
    assert as_another_user(lambda: doctor.check_daemon(config).status == "info")
    assert as_another_user(lambda: doctor.check_warm(config).status == "info")


def test_a_gone_process_is_dead_for_every_check(shared_home: Path) -> None:
    write_pids(shared_home, dead_pid())
    config = load_config({"MEMEX_HOME": str(shared_home)})
    assert not daemon_running(shared_home) and warm.server_pid(config) is None
    assert doctor.check_daemon(config).status == "info" and doctor.check_warm(config).status == "info"
    assert not as_another_user(lambda: daemon_running(shared_home))
