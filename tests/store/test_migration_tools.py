"""Migration 9 (tool output and role search) on a populated version-8 store: the role index is built at
once, tool output is read from the transcripts by the next `memex index`, and no turn is rebuilt (their
vectors stay valid)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from corpus import MISC
from memex.config import load_config
from memex.store.db import connect, dump_schema
from memex.store.migrations import MIGRATIONS

TOOL_ONLY = "exchangeCodeForTokens"

# What migrations 9 to 13 added, removed again to turn a store made today into the store version 8 made.
_DOWNGRADE = """
DROP INDEX sessions_computer;
DROP INDEX subagent_sessions_transcript_path;
DROP TRIGGER sessions_archive_pending_insert;
DROP TRIGGER sessions_archive_pending_update;
DROP TRIGGER subagent_sessions_archive_pending_insert;
DROP TRIGGER subagent_sessions_archive_pending_update;
DROP TABLE archive_pending;
DROP TRIGGER stream_changes_bound;
DROP TRIGGER archive_source_changes_bound;
DROP TRIGGER sessions_stream_insert;
DROP TRIGGER sessions_stream_update;
DROP TRIGGER sessions_stream_delete;
DROP TRIGGER subagent_sessions_stream_insert;
DROP TRIGGER subagent_sessions_stream_update;
DROP TRIGGER subagent_sessions_stream_delete;
DROP TRIGGER mirror_records_stream_delete;
DROP TRIGGER mirror_records_stream_update;
DROP TABLE mirror_check;
DROP TABLE stream_changes;
DROP TRIGGER archive_streams_source_insert;
DROP TRIGGER archive_streams_source_update;
DROP INDEX archive_streams_source_path;
DROP TABLE archive_source_changes;
DROP TABLE snapshots;
DROP TABLE IF EXISTS archive_listings;
DROP TRIGGER tool_outputs_fts_insert;
DROP TRIGGER tool_outputs_fts_delete;
DROP TRIGGER entries_fts_insert;
DROP TRIGGER entries_fts_delete;
DROP TABLE tool_outputs_fts;
DROP VIEW tool_outputs_fts_source;
DROP TABLE tool_outputs;
DROP TABLE tool_output_backfill;
DROP TABLE entries_fts;
DROP VIEW entries_fts_source;
ALTER TABLE entries DROP COLUMN fts_text;
PRAGMA user_version = 8;
"""


def _version_8_schema(tmp_path: Path) -> str:
    conn = sqlite3.connect(tmp_path / "v8.db")
    for script in MIGRATIONS[:8]:
        conn.executescript(script)
    schema = dump_schema(conn)
    conn.close()
    return schema


def test_a_version_8_store_gains_role_search_at_once_and_tool_output_on_the_next_index(
    home: Path, run, tmp_path: Path
) -> None:
    assert run("index", str(MISC)).exit_code == 0
    path = load_config().db_path
    old = sqlite3.connect(path)
    old.executescript(_DOWNGRADE)
    assert dump_schema(old) == _version_8_schema(tmp_path)  # exactly what version 8 made
    turns_before = old.execute("SELECT id, session_id, line_index FROM turns ORDER BY id").fetchall()
    jobs_before = old.execute("SELECT count(*) FROM embed_jobs").fetchone()[0]
    old.close()

    conn = connect(path)  # migrates
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) == 14
        pending = conn.execute("SELECT count(*) FROM tool_output_backfill").fetchone()[0]
        streams = conn.execute("SELECT count(DISTINCT session_id || '/' || agent_id) FROM turns").fetchone()[0]
        assert pending == streams > 0
        assert conn.execute("SELECT count(*) FROM tool_outputs").fetchone()[0] == 0
    finally:
        conn.close()
    # The entries' words are indexed by the migration itself.
    hits = json.loads(run("search", "--role", "user", "--json", "worktree").stdout)
    assert hits and all("worktree" in h["matched_chunk"].lower() for h in hits)
    assert json.loads(run("search", "--in", "tools", "--json", TOOL_ONLY).stdout) == []

    result = run("index", str(MISC), "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["tool_output_streams"] == pending
    hits = json.loads(run("search", "--in", "tools", "--json", TOOL_ONLY).stdout)
    assert [h["tool_name"] for h in hits] == ["Read"]

    conn = connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM tool_output_backfill").fetchone()[0] == 0
        # The turns (and the embedding work queued for them) are those of before: nothing is re-embedded.
        turns_after = conn.execute("SELECT id, session_id, line_index FROM turns ORDER BY id").fetchall()
        assert [tuple(r) for r in turns_after] == turns_before
        assert conn.execute("SELECT count(*) FROM embed_jobs").fetchone()[0] == jobs_before
    finally:
        conn.close()
    # A further index has nothing left to read.
    assert json.loads(run("index", str(MISC), "--json").stdout)["tool_output_streams"] == 0


def test_a_fresh_index_leaves_nothing_to_backfill(home: Path, run) -> None:
    assert run("index", str(MISC)).exit_code == 0
    conn = connect(load_config().db_path)
    try:
        assert conn.execute("SELECT count(*) FROM tool_output_backfill").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM tool_outputs").fetchone()[0] > 0
    finally:
        conn.close()
