"""Migration 7 (today's agent formats) on a store made by the migrations before it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from corpus import LIVE_CODEX_READ
from memex.ingest.pipeline import ingest_transcript
from memex.sources import codex
from memex.store.db import connect
from memex.store.migrations import MIGRATIONS


def test_a_version_6_store_keeps_its_links_and_titles_and_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "memex.db"
    old = sqlite3.connect(path)
    for script in MIGRATIONS[:6]:
        old.executescript(script)
    old.execute("PRAGMA user_version = 6")
    old.executescript(
        """
        INSERT INTO sessions (session_id, agent, computer, title, title_rank, file_size, file_mtime_ns, head_hash,
            tail_hash, updated_at)
        VALUES ('s1', 'claude', 'box', 'fix the cart', 1, 100, 5, 'h', 't', 'now'),
               ('s2', 'claude', 'box', 'Cart work', 4, 100, 5, 'h', 't', 'now');
        INSERT INTO subagent_sessions (session_id, agent_id, transcript_path, file_size, file_mtime_ns, head_hash,
            updated_at) VALUES ('s1', 'a1', '/x', 10, 5, 'h', 'now');
        INSERT INTO pr_links VALUES ('s1', 12, 'https://github.com/dev/shop/pull/12', 'dev/shop');
        INSERT INTO pr_links VALUES ('s2', 3, NULL, NULL);
        """
    )
    old.commit()
    old.close()
    conn = connect(path)
    links = [tuple(r) for r in conn.execute("SELECT session_id, agent_id, link_key, pr_number, source FROM pr_links")]
    assert sorted(links) == [
        ("s1", "", "https://github.com/dev/shop/pull/12", 12, "record"),
        ("s2", "", "#3", 3, "record"),
    ]
    # Prompt titles (1) and custom titles (4) keep their order above a subagent's task (1 now).
    assert [tuple(r) for r in conn.execute("SELECT title_rank FROM sessions ORDER BY session_id")] == [(2,), (5,)]
    # Every stream is read again by the next `memex index` (the new parsers apply to what is indexed).
    states = conn.execute(
        "SELECT file_mtime_ns, head_hash FROM sessions UNION ALL SELECT file_mtime_ns, head_hash FROM subagent_sessions"
    ).fetchall()
    assert {tuple(r) for r in states} == {(-1, "reparse")}


def test_a_stream_marked_for_reparse_is_read_again(conn, config) -> None:
    transcript = codex.classify(LIVE_CODEX_READ)
    assert ingest_transcript(conn, config, transcript).status == "new"
    assert ingest_transcript(conn, config, transcript).status == "unchanged"
    conn.execute("UPDATE sessions SET file_mtime_ns = -1, head_hash = 'reparse'")  # what migration 7 does
    again = ingest_transcript(conn, config, transcript)
    assert again.status == "rewritten" and again.turns == 2
