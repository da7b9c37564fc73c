"""A real `kill -9` of `memex index` at any moment, then a re-run, gives the database of one clean run."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from corpus import db_content
from transcripts import ClaudeSession, simple_turn

pytestmark = [pytest.mark.subprocess]


def make_corpus(root: Path, sessions: int = 80, turns: int = 120) -> None:
    for s in range(sessions):
        sid = str(uuid.UUID(int=s + 1))
        session = ClaudeSession(root / f"-home-dev-p{s % 4}" / f"{sid}.jsonl", sid, cwd=f"/home/dev/p{s % 4}")
        sub = ClaudeSession(root / f"-home-dev-p{s % 4}" / sid / "subagents" / "agent-x1.jsonl", sid, agent_id="x1")
        for n in range(turns):
            simple_turn(session, f"session {s} question {n} " + "words " * 40, f"answer {n} " * 20, edit=f"m{n}.py")
            if n % 10 == 0:
                simple_turn(sub, f"sub task {n}", "sub answer")


def run_index(home: Path, corpus: Path) -> subprocess.Popen:
    env = {**os.environ, "MEMEX_HOME": str(home), "MEMEX_COMPUTER": "testbox", "MEMEX_INDEX_EMBEDS": "0"}
    return subprocess.Popen(
        [sys.executable, "-m", "memex", "index", str(corpus), "--json"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_kill_9_mid_ingest_then_rerun_equals_clean_run(tmp_path: Path) -> None:
    corpus = tmp_path / "projects"
    make_corpus(corpus)
    clean_home, crash_home = tmp_path / "clean", tmp_path / "crash"
    assert run_index(clean_home, corpus).wait() == 0

    killed, delay = 0, 0.4
    while killed < 6 and delay < 3.0:  # each run gets a little further before it dies
        process = run_index(crash_home, corpus)
        time.sleep(delay)
        if process.poll() is not None:
            break
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        killed += 1
        delay += 0.1
    assert killed >= 3, "the index finished before it could be killed: make the corpus bigger"
    assert run_index(crash_home, corpus).wait() == 0

    clean = sqlite3.connect(clean_home / "memex.db")
    crashed = sqlite3.connect(crash_home / "memex.db")
    assert db_content(crashed) == db_content(clean)
    assert crashed.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    crashed.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('integrity-check')")
