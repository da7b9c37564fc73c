"""Ctrl-C, as a terminal sends it (SIGINT to the whole process group, worker processes included), stops
a command with one line saying what was kept and how to continue, exit status 130: no traceback, no
click `Aborted!`. The time it takes to stop is measured by `bench/interrupt.py`, not asserted here."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from synctools import wait_until
from transcripts import ClaudeSession, simple_turn

pytestmark = [pytest.mark.subprocess]

MEMEX = str(Path(sys.executable).parent / "memex")


def start(*args: str, **env: str) -> subprocess.Popen[str]:
    """`memex ARGS` in a process group of its own, as a terminal's foreground job."""
    return subprocess.Popen(
        [MEMEX, *args],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def ctrl_c(process: subprocess.Popen[str]) -> tuple[str, str]:
    os.killpg(process.pid, signal.SIGINT)
    return process.communicate(timeout=60)


def count(home: Path, sql: str) -> int:
    try:
        conn = sqlite3.connect(f"file:{home / 'memex.db'}?mode=ro", uri=True)
        try:
            return conn.execute(sql).fetchone()[0]
        finally:
            conn.close()
    except sqlite3.OperationalError:  # not created yet
        return 0


def sessions(root: Path, n: int, turns: int) -> Path:
    for i in range(n):
        session_id = f"{i:08d}-1111-2222-3333-444444444444"
        session = ClaudeSession(root / "-home-dev-shop" / f"{session_id}.jsonl", session_id)
        for t in range(turns):
            simple_turn(session, f"question {t} about the cart total and the discount rule {i}", f"answer {t} " * 30)
    return root


@pytest.fixture
def queued(run, home: Path, tmp_path: Path) -> Path:
    """A store with a few hundred texts waiting to be embedded."""
    assert run("index", "--no-embed", str(sessions(tmp_path / "projects", 20, 8))).exit_code == 0
    return home


def test_ctrl_c_stops_embed_and_says_what_was_kept(queued: Path) -> None:
    total = count(queued, "SELECT count(*) FROM embed_jobs WHERE status = 'pending'")
    process = start("embed", MEMEX_EMBED_BATCH_SIZE="2")
    wait_until(lambda: count(queued, "SELECT count(*) FROM vectors") >= 2, timeout=120, interval=0.05)
    out, err = ctrl_c(process)
    assert process.returncode == 130, err
    stored = count(queued, "SELECT count(*) FROM vectors")
    waiting = count(queued, "SELECT count(*) FROM embed_jobs WHERE status = 'pending'")
    assert stored > 0 and 0 < waiting < total
    assert err == (
        f"memex: interrupted: {stored} vectors computed and stored, {waiting} texts still queued; run "
        "`memex embed` to continue (search works meanwhile)\n"
    )
    assert out == ""
    # What was kept is used: the next run embeds only what waits.
    again = subprocess.run([MEMEX, "embed", "--json"], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert count(queued, "SELECT count(*) FROM embed_jobs WHERE status = 'pending'") == 0


def test_ctrl_c_stops_a_parallel_index_and_its_workers(home: Path, tmp_path: Path) -> None:
    root = sessions(tmp_path / "projects", 400, 12)
    process = start("index", "--workers", "2", "--no-embed", str(root))
    wait_until(lambda: count(home, "SELECT count(*) FROM sessions") >= 5, timeout=120, interval=0.02)
    _, err = ctrl_c(process)
    assert process.returncode == 130, err
    assert err == (
        "memex: interrupted: every transcript indexed before the interrupt is kept; run `memex index` again "
        "to continue\n"
    )
    kept = count(home, "SELECT count(*) FROM sessions")
    assert 5 <= kept < 400
    # The workers are gone with it (none is left parsing in the background).
    group = ["pgrep", "-g", str(process.pid)]
    wait_until(lambda: subprocess.run(group, capture_output=True).stdout == b"", timeout=10)
    again = subprocess.run([MEMEX, "index", "--no-embed", "--json", str(root)], capture_output=True, text=True)
    assert again.returncode == 0 and count(home, "SELECT count(*) FROM sessions") == 400


def test_ctrl_c_stops_the_daemon(home: Path, tmp_path: Path) -> None:
    process = start("daemon", "--no-api", MEMEX_REDIS_URL="", MEMEX_DAEMON_SCAN_SECONDS="1")
    wait_until(lambda: (home / "memex.db").exists(), timeout=60)
    time.sleep(1.0)
    _, err = ctrl_c(process)
    assert process.returncode == 130, err
    assert "Traceback" not in err and "Aborted!" not in err
    assert err.splitlines()[-1] == (
        "memex: interrupted: what the daemon indexed is kept, and mirrors not sent yet wait in the outbox; "
        "`memex daemon` continues from there"
    )
