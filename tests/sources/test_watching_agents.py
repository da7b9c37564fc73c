"""The daemon's watcher notices the new agents' changes: a Copilot session's file with its inline subagent,
and an OpenCode database whose new rows sit in its write-ahead log."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from corpus import LIVE_COPILOT, LIVE_OPENCODE_DB
from memex.sync.watch import Watcher

TASK = LIVE_COPILOT / "454f9272-7e41-4653-9935-859f48cbe18e" / "events.jsonl"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_copilot_session_and_its_inline_subagent(tmp_path: Path) -> None:
    clock = Clock()
    watcher = Watcher({"copilot": [tmp_path]}, clock, debounce=1.0, debounce_max=5.0)
    watcher.baseline()
    (tmp_path / TASK.parent.name).mkdir()
    shutil.copy(TASK, tmp_path / TASK.parent.name / "events.jsonl")
    assert watcher.scan() == 1
    clock.now += 2
    assert [t.subagent_id for t in watcher.ready()] == [None, "47b32c80-97b8-4351-8259-94c7f55b3409"]


def test_an_opencode_database_changing_in_its_wal(tmp_path: Path) -> None:
    database = tmp_path / "opencode.db"
    shutil.copy(LIVE_OPENCODE_DB, database)
    agent = sqlite3.connect(database, isolation_level=None)
    agent.execute("PRAGMA journal_mode = WAL")
    agent.execute("PRAGMA wal_autocheckpoint = 0")
    clock = Clock()
    watcher = Watcher({"opencode": [database]}, clock, debounce=1.0, debounce_max=5.0)
    watcher.baseline()
    agent.execute("UPDATE session SET time_updated = time_updated + 1")
    assert watcher.scan() == 1
    clock.now += 2
    assert len(watcher.ready()) == 4  # the database's sessions: the ingest reads the changed ones
    agent.close()
