"""The daemon among poisoned files: it always starts, ingests every good file, and tries a failing file
again with back-off without holding up any other."""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from pathlib import Path

import pytest

from memex.store.db import connect
from memex.sync.daemon import RETRY_FIRST_SECONDS
from synctools import SLAY, Computer
from transcripts import ClaudeSession, simple_turn

SESSION = "dddddddd-1111-2222-3333-444444444444"
POISON = "99999999-1111-2222-3333-444444444444"


def session_ids(computer: Computer) -> set[str]:
    conn = sqlite3.connect(computer.config.db_path)
    try:
        return {row[0] for row in conn.execute("SELECT session_id FROM sessions")}
    finally:
        conn.close()


def big_gemini_chat(computer: Computer, size: int) -> Path:
    """A legacy Gemini chat (one JSON document) of about `size` bytes."""
    chat = computer.gemini_dir / ("0" * 64) / "chats" / "session-2026-03-03T10-00-bbbb0000.json"
    chat.parent.mkdir(parents=True, exist_ok=True)
    message = {"id": "m1", "timestamp": "2026-03-03T10:00:01Z", "type": "user", "content": "q" * size}
    chat.write_text(json.dumps({"sessionId": "big-chat", "projectHash": "0" * 64, "messages": [message]}))
    return chat


def attempts(caplog: pytest.LogCaptureFixture, path: Path) -> int:
    return sum(f"cannot ingest {path}" in r.getMessage() for r in caplog.records)


def test_the_daemon_starts_among_poisoned_files(computers) -> None:
    a = computers("alpha", url="")
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    folder = a.claude_dir / "-home-dev-shop"
    folder.mkdir(parents=True)
    os.mkfifo(folder / f"{POISON}.jsonl")  # would block a reader forever
    (folder / "a.jsonl").symlink_to(folder / "b.jsonl")
    (folder / "b.jsonl").symlink_to(folder / "a.jsonl")
    (folder / "zero.jsonl").symlink_to("/dev/zero")
    (folder / "x.jsonl").mkdir()
    session = ClaudeSession(folder / f"{SESSION}.jsonl", SESSION)
    session.write(session.prompt("a pull request"), {**session.pr_link(1), "prNumber": 2**64 - 1})
    a.start()
    assert session_ids(a) == {SLAY.stem, SESSION}
    simple_turn(session, "and it keeps working", "ok")
    a.step()
    a.clock.advance(a.config.daemon_debounce_max_seconds)
    assert a.step().ingested == 1


def test_a_failing_file_is_retried_with_back_off_and_holds_up_no_other(
    computers, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="memex.daemon")
    a = computers("alpha", url="", max_line_bytes=65_536, daemon_debounce_seconds=2)
    a.start()
    chat = big_gemini_chat(a, 100_000)  # over max_line_bytes: its ingest fails
    session = ClaudeSession(a.claude_dir / "-home-dev-shop" / f"{SESSION}.jsonl", SESSION)
    simple_turn(session, "written while the chat is poisoned", "ok")
    a.step()
    a.clock.advance(2)
    assert a.step().ingested == 1  # the good file, in the same pass
    assert SESSION in session_ids(a) and attempts(caplog, chat) == 1
    # Tried again after 30 s, then 60 s, then 120 s: never at every pass.
    for wait in (RETRY_FIRST_SECONDS, 2 * RETRY_FIRST_SECONDS, 4 * RETRY_FIRST_SECONDS):
        tries = attempts(caplog, chat)
        a.clock.advance(wait - 1)
        a.step()
        assert attempts(caplog, chat) == tries
        simple_turn(session, "other files go on", "ok")  # meanwhile, other files are ingested as usual
        a.clock.advance(1)
        a.step()
        assert attempts(caplog, chat) == tries + 1
    a.clock.advance(2)
    assert a.step().ingested == 1
    # Fixed: ingested at its next try, and its back-off forgotten.
    big_gemini_chat(a, 1_000)
    a.clock.advance(8 * RETRY_FIRST_SECONDS)
    a.step()
    assert "big-chat" in session_ids(a)
    assert a.daemon is not None and a.daemon._failures == {}


def test_a_start_up_index_on_a_locked_store_is_done_at_the_next_pass(computers) -> None:
    a = computers("alpha", url="", busy_timeout_ms=50)
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    connect(a.config.db_path).close()  # the store exists; another process holds its write lock
    holder = sqlite3.connect(a.config.db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    a.start()  # starts anyway
    assert session_ids(a) == set()
    holder.execute("ROLLBACK")
    holder.close()
    a.step()
    assert session_ids(a) == {SLAY.stem}
