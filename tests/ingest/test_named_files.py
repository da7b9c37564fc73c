"""`memex index PATH` (what the Stop hook does, and a re-index of one file): the named file is read as the
store holds it, whatever else the store holds. Neither every stream's row nor the parsers of agents that
do not claim the file are read; the file is indexed, copied to the archive and mirrored as in a full run."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from agent_cli import index_json
from corpus import CODEX_SHORT
from memex.store import snapshots, streams
from memex.store.computers import stranded
from memex.store.db import connect
from transcripts import ClaudeSession, retry_projects, simple_turn

FILES = 12


@pytest.fixture
def claude_root(home: Path, tmp_path: Path) -> Path:
    return tmp_path / "claude-projects"  # the default folder the `home` fixture points memex to


@pytest.fixture
def indexed(run, claude_root: Path) -> list[ClaudeSession]:
    """FILES Claude sessions, indexed; the first has a subagent."""
    sessions = retry_projects(claude_root, FILES)
    first = sessions[0]
    agent = ClaudeSession(first.path.with_suffix("") / "subagents" / "agent-a1.jsonl", first.session_id, agent_id="a1")
    simple_turn(agent, "look for the retry loop", "found it in client.py")
    assert index_json(run, "--all")["files_changed"] == FILES + 1
    return sessions


@pytest.fixture
def every_stream_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each read of every stream the store holds (its snapshot, or all its rows); they still run."""
    reads: list[str] = []
    real_snapshot, real_rows = snapshots.read_streams, streams.every_stream

    def read_streams(conn: sqlite3.Connection) -> snapshots.Streams:
        reads.append("snapshot")
        return real_snapshot(conn)

    def every_stream(conn: sqlite3.Connection) -> list[tuple[int, int, str, str, str, str]]:
        reads.append("rows")
        return real_rows(conn)

    monkeypatch.setattr(snapshots, "read_streams", read_streams)
    monkeypatch.setattr(streams, "every_stream", every_stream)
    return reads


def _db() -> sqlite3.Connection:
    return connect(Path(os.environ["MEMEX_HOME"]) / "memex.db")


def test_a_grown_file_named_is_read_copied_and_mirrored_without_reading_every_stream(
    run, indexed: list[ClaudeSession], every_stream_read: list[str]
) -> None:
    grown = indexed[4]
    simple_turn(grown, "one more prompt about the jitter", "added jitter to the backoff")
    report = index_json(run, grown.path)
    assert every_stream_read == []
    assert (report["files"], report["files_changed"], report["sessions"]) == (1, 1, 1) and report["turns"] >= 1
    assert report["mirrors"] == 1
    conn = _db()
    try:
        text = conn.execute("SELECT group_concat(full_text) FROM turns WHERE session_id = ?", (grown.session_id,))
        assert "jitter" in text.fetchone()[0]
        copied = conn.execute(
            "SELECT source_size FROM archive_streams WHERE session_id = ? AND agent_id = ''", (grown.session_id,)
        ).fetchone()
        assert copied[0] == grown.path.stat().st_size  # the archive holds the grown file
        mirrored = conn.execute(
            "SELECT group_concat(s.body) FROM mirror_segments s JOIN mirror_records m ON m.id = s.mirror_id "
            "WHERE m.session_id = ?",
            (grown.session_id,),
        ).fetchone()[0]
        assert "added jitter to the backoff" in mirrored
    finally:
        conn.close()
    assert index_json(run, grown.path)["files_changed"] == 0  # as the store now holds it


def test_a_named_file_unchanged_new_rewritten_or_a_subagent_is_read_as_it_is(
    run, indexed: list[ClaudeSession], claude_root: Path, every_stream_read: list[str]
) -> None:
    unchanged = index_json(run, indexed[2].path)
    assert (unchanged["files"], unchanged["files_changed"], unchanged["sessions"]) == (1, 0, 1)

    rewritten = indexed[3].path  # the same size, one nanosecond later
    before = rewritten.stat()
    rewritten.write_text(rewritten.read_text().replace("retry", "RETRY"))
    os.utime(rewritten, ns=(before.st_atime_ns, before.st_mtime_ns + 1))
    assert index_json(run, rewritten)["files_changed"] == 1

    fresh_id = "99999999-1111-2222-3333-444444444444"
    fresh = ClaudeSession(claude_root / "-home-dev-new" / f"{fresh_id}.jsonl", fresh_id)
    simple_turn(fresh, "a prompt in a new project", "an answer there")
    assert index_json(run, fresh.path)["files_changed"] == 1

    subagent = ClaudeSession(
        indexed[0].path.with_suffix("") / "subagents" / "agent-a1.jsonl", indexed[0].session_id, agent_id="a1"
    )
    simple_turn(subagent, "and the second task", "done too")
    report = index_json(run, subagent.path)
    assert (report["files_changed"], report["subagents"]) == (1, 1)
    assert index_json(run, subagent.path)["files_changed"] == 0
    assert every_stream_read == []

    conn = _db()
    try:
        rows = conn.execute("SELECT session_id, group_concat(full_text) FROM turns GROUP BY session_id").fetchall()
        text = dict(rows)
        assert "RETRY" in text[indexed[3].session_id]
        assert "a prompt in a new project" in text[fresh.session_id]
        assert "and the second task" in text[indexed[0].session_id]
    finally:
        conn.close()
    assert index_json(run, "--all")["files_changed"] == 0  # the full walk finds what the named runs stored


def test_a_file_of_another_agent_named_is_indexed_as_that_agent(run, indexed: list[ClaudeSession], tmp_path) -> None:
    rollout = tmp_path / "elsewhere" / CODEX_SHORT.name
    rollout.parent.mkdir()
    shutil.copy(CODEX_SHORT, rollout)
    report = index_json(run, rollout, indexed[1].path)
    assert (report["files"], report["files_changed"]) == (2, 1)
    conn = _db()
    try:
        agents = conn.execute("SELECT agent, count(*) FROM sessions GROUP BY agent ORDER BY agent").fetchall()
        assert [tuple(r) for r in agents] == [("claude", FILES), ("codex", 1)]
    finally:
        conn.close()


def _imported_by_index(path: Path) -> set[str]:
    """The modules a new `memex index --no-embed PATH` process imports (listed at its exit: the run's
    `os._exit`, which would skip that, is turned off)."""
    modules = "import atexit, sys; atexit.register(lambda: print(*sys.modules, file=sys.stderr))"
    run = "import memex.cli.main as cli; cli.FAST_EXIT = frozenset(); cli.main()"
    result = subprocess.run(
        [sys.executable, "-c", f"{modules}; {run}", "index", "--no-embed", str(path)],
        capture_output=True, text=True, env=os.environ,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return set(result.stderr.split())


@pytest.mark.subprocess
def test_naming_a_claude_transcript_imports_no_other_agents_parser(indexed: list[ClaudeSession]) -> None:
    simple_turn(indexed[5], "a prompt after the hook", "an answer after it")
    imported = _imported_by_index(indexed[5].path)
    assert {"memex.sources.claude", "memex.ingest.pipeline"} <= imported
    others = {"memex.sources.codex", "memex.sources.gemini", "memex.sources.cursor", "memex.sources.opencode"}
    assert not others & imported
    assert "memex.archive.reader" not in imported  # the archive's restoring is for the default folders
    again = _imported_by_index(indexed[5].path)  # unchanged now: nothing to read, no pipeline
    assert "memex.sources.claude" in again and "memex.ingest.pipeline" not in again


def _steps(conn: sqlite3.Connection, query: object) -> int:
    """The SQLite virtual machine's steps (in hundreds) `query()` takes."""
    count = [0]

    def tick() -> int:
        count[0] += 1
        return 0

    conn.set_progress_handler(tick, 100)
    try:
        query()  # type: ignore[operator]
    finally:
        conn.set_progress_handler(None, 0)
    return count[0]


def test_the_check_for_sessions_under_another_name_reads_no_session_of_this_one(config) -> None:
    conn = connect(config.db_path)
    try:

        def add(count: int, computer: str, start: int) -> None:
            conn.executemany(
                "INSERT INTO sessions (session_id, agent, computer, updated_at) VALUES (?, 'claude', ?, 'now')",
                [(f"s{n:06d}", computer) for n in range(start, start + count)],
            )

        add(1, "alpha-old", 0)
        add(2, "zulu-old", 1)
        add(10, "testbox", 100)
        few = _steps(conn, lambda: stranded(conn, "testbox"))
        add(5000, "testbox", 1000)
        assert stranded(conn, "testbox") == {"alpha-old": 1, "zulu-old": 2}
        many = _steps(conn, lambda: stranded(conn, "testbox"))
        assert many <= few + 2  # not one step per session of this computer
    finally:
        conn.close()
