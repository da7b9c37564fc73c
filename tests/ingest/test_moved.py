"""Transcripts that moved (the agents' folder renamed, a store copied from another place): the first run
records their new paths and re-indexes nothing; the next finds every file unchanged by path, at stat cost.
A copy (both paths on disk) is still a session of its own."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

from corpus import FIXTURES, HILLVIEW
from memex.api import Memex
from memex.archive import frames
from memex.config import load_config
from memex.ingest import indexer

NEW_SESSION = FIXTURES / "claude" / "misc" / "large-conversation.jsonl"
LIVE = FIXTURES / "live" / "claude-2.1.330" / "projects" / "-home-dev-proj"  # a session with a subagents/ folder


def _fill(projects: Path) -> int:
    """Real transcripts (old-style sidechains and a new-style subagents folder); returns how many files."""
    shutil.copytree(HILLVIEW, projects / HILLVIEW.name)
    shutil.copytree(LIVE, projects / LIVE.name)
    return len(list(projects.rglob("*.jsonl")))


def _index(run, workers: str = "2") -> dict[str, object]:  # type: ignore[no-untyped-def]
    result = run("index", "--no-embed", "--json", "--workers", workers)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _stored(conn: sqlite3.Connection) -> dict[str, list[tuple[object, ...]]]:
    """What must not change when files move: turns (their ids), chunks, mirrors and what waits to publish."""
    queries = {
        "turns": "SELECT id, session_id, agent_id, line_index FROM turns ORDER BY id",
        "chunks": "SELECT id, turn_id FROM chunks ORDER BY id",
        "entries": "SELECT count(*) FROM entries",
        "mirrors": "SELECT * FROM mirror_records ORDER BY 1, 2",
        "outbox": "SELECT count(*) FROM outbox",
        "sessions": "SELECT session_id, title, started_at, ended_at, last_offset FROM sessions ORDER BY 1",
    }
    return {name: conn.execute(sql).fetchall() for name, sql in queries.items()}


def _paths(conn: sqlite3.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT transcript_path FROM sessions WHERE file_size IS NOT NULL "
        "UNION ALL SELECT transcript_path FROM subagent_sessions UNION ALL SELECT source_path FROM archive_streams"
    ).fetchall()
    return [path for (path,) in rows]


# One worker: each file planned and ingested in its own transaction; two: every file planned first, the moves
# recorded together.
@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_moved_folder_is_recorded_once_then_found_unchanged_by_path(
    run, conn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    old = tmp_path / "claude-projects"
    files = _fill(old)
    first = _index(run)
    assert first["files"] == files and first["subagents"] >= 2
    before = _stored(conn)

    new = tmp_path / "renamed-projects"
    os.rename(old, new)
    monkeypatch.setenv("MEMEX_CLAUDE_DIR", str(new))
    moved = _index(run, workers)
    # Nothing re-indexed: no file read, no turn rebuilt (same ids), no mirror written or queued to publish.
    assert (moved["files"], moved["files_changed"], moved["turns"], moved["bytes_read"]) == (files, 0, 0, 0)
    assert (moved["mirrors"], moved["missing_files"], moved["sessions"]) == (0, 0, first["sessions"])
    assert _stored(conn) == before
    paths = _paths(conn)
    assert paths and all(path.startswith(f"{new.resolve()}/") for path in paths)
    assert conn.execute("SELECT count(*) FROM archive_streams WHERE source_gone_at IS NOT NULL").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM archive_pending").fetchone()[0] == 0

    # The next run's walk finds every file as the store holds it, by path: none is planned or read.
    found = Memex(load_config(), conn).discover()
    assert (found.transcripts, len(found.unchanged)) == ([], files)
    again = _index(run, workers)
    assert (again["files"], again["files_changed"], again["turns"]) == (files, 0, 0)
    assert _stored(conn) == before

    session = next(p for p in HILLVIEW.glob("*.jsonl") if not p.name.startswith("agent-")).stem
    raw = run("show", session, "--raw")
    assert raw.exit_code == 0, raw.output
    assert raw.stdout == (new / HILLVIEW.name / f"{session}.jsonl").read_text()


def test_a_copy_beside_its_original_stays_a_session_of_its_own(run, conn, tmp_path: Path) -> None:
    projects = tmp_path / "claude-projects"
    files = _fill(projects)
    first = _index(run)
    paths = sorted(_paths(conn))

    shutil.copytree(projects / LIVE.name, projects / "-home-dev-proj-copy")  # same sizes and times
    copied = _index(run)
    copies = len(list(LIVE.rglob("*.jsonl")))
    assert (copied["files"], copied["files_changed"]) == (files + copies, copies)
    assert copied["sessions"] == first["sessions"] + 2  # the copies' sessions under ids of their own
    # The originals stay where they were read; the copies are stored beside them.
    assert set(paths) <= set(_paths(conn))
    assert len(_paths(conn)) == len(paths) + 2 * copies  # a stream and an archive copy each
    again = _index(run)
    assert (again["files"], again["files_changed"]) == (files + copies, 0)


def test_a_backup_named_by_hand_takes_no_path_and_the_returning_original_keeps_its_sessions(
    run, conn, tmp_path: Path
) -> None:
    """A folder named on the command line may be a backup the original comes back beside (a drive
    unmounted, a folder renamed for a while): indexing it while the original is away records no move, so the
    original, back, is still the sessions' file, not a copy of the backup's."""
    projects = tmp_path / "claude-projects"
    _fill(projects)
    first = _index(run)
    paths = sorted(_paths(conn))
    backup = tmp_path / "backup"
    shutil.copytree(projects, backup)  # same sizes and times
    away = tmp_path / "away"
    os.rename(projects, away)
    named = run("index", "--no-embed", "--json", str(backup))
    assert named.exit_code == 0 and json.loads(named.stdout)["files_changed"] == 0
    assert sorted(_paths(conn)) == paths  # no move recorded
    os.rename(away, projects)
    back = _index(run)
    assert (back["files_changed"], back["sessions"]) == (0, first["sessions"])
    assert sorted(_paths(conn)) == paths


def _copy_sources(home: Path) -> list[str]:
    """The source path each archive copy's header names (what a store rebuilt from scratch learns)."""
    sources = []
    for path in sorted((home / "archive").rglob("*.zst")):
        with open(path, "rb") as handle:
            scan = frames.scan(handle, os.fstat(handle.fileno()).st_size)
        assert scan is not None
        sources.append(scan.header["source"])
    return sources


# Parallel: a new file read by worker processes beside the moved ones (which the run's end copies).
@pytest.mark.parametrize("workers", ["1", "2", "parallel"])
def test_a_move_rewrites_the_copies_headers_so_a_store_rebuilt_from_the_archive_knows_the_new_paths(
    run, conn, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    old = tmp_path / "claude-projects"
    files = _fill(old)
    _index(run)
    new = tmp_path / "renamed-projects"
    os.rename(old, new)
    monkeypatch.setenv("MEMEX_CLAUDE_DIR", str(new))
    if workers == "parallel":
        monkeypatch.setattr(indexer, "PARALLEL_MIN_FILES", 1)
        monkeypatch.setattr(indexer, "PARALLEL_MIN_BYTES", 0)
        shutil.copy(NEW_SESSION, new / HILLVIEW.name)
        files, workers = files + 1, "2"
    _index(run, workers)
    sources = _copy_sources(home)
    assert len(sources) == files and all(source.startswith(f"{new.resolve()}/") for source in sources)
    assert conn.execute("SELECT count(*) FROM archive_pending").fetchone()[0] == 0
    again = _index(run, workers)
    assert (again["files"], again["files_changed"]) == (files, 0)  # the copies are whole: nothing read again

    # The store lost, the archive kept: the copies name the files on disk, so none is restored as a
    # session whose original is gone (it would be stored again beside the file's, as a copy of it).
    conn.close()
    for path in home.glob("memex.db*"):
        path.unlink()
    rebuilt = _index(run, workers)
    assert (rebuilt["files"], rebuilt["sessions"]) == (files, again["sessions"])
    with sqlite3.connect(home / "memex.db") as fresh:
        assert fresh.execute("SELECT count(*) FROM archive_streams WHERE source_gone_at IS NOT NULL").fetchone() == (0,)
        paths = [path for (path,) in fresh.execute("SELECT transcript_path FROM sessions")]
    assert paths and all(path.startswith(f"{new.resolve()}/") for path in paths)


def test_a_move_whose_header_was_rewritten_before_a_crash_gets_its_row_at_the_next_run(
    run, conn, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run killed between rewriting a moved copy's header and its commit leaves the copy naming the new
    path and the row the old one, pending: the next run records the new path."""
    old = tmp_path / "claude-projects"
    _fill(old)
    _index(run)
    new = tmp_path / "renamed-projects"
    os.rename(old, new)
    monkeypatch.setenv("MEMEX_CLAUDE_DIR", str(new))
    _index(run)
    session_id, agent_id, source, stored = conn.execute(
        "SELECT session_id, agent_id, source_path, stored_bytes FROM archive_streams ORDER BY 1 LIMIT 1"
    ).fetchone()
    stale = source.replace(str(new.resolve()), str(old.resolve()))
    conn.execute(  # as the killed run left it: the row as before the move, the stream pending
        "UPDATE archive_streams SET source_path = ? WHERE session_id = ? AND agent_id = ?",
        (stale, session_id, agent_id),
    )
    conn.execute("INSERT INTO archive_pending (session_id, agent_id) VALUES (?, ?)", (session_id, agent_id))
    _index(run)
    row = conn.execute(
        "SELECT source_path, stored_bytes FROM archive_streams WHERE session_id = ? AND agent_id = ?",
        (session_id, agent_id),
    ).fetchone()
    assert tuple(row) == (source, stored)
    assert conn.execute("SELECT count(*) FROM archive_pending").fetchone()[0] == 0
