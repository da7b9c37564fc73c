"""A large append-only transcript is read a segment at a time, each written in its own transaction: the
store ends up exactly as one whole read leaves it, also when a run stops between two segments."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from corpus import MISC
from memex.config import load_config
from memex.ingest import indexer, pipeline
from memex.ingest.indexer import discover, index_transcripts
from memex.store.db import connect

LARGE = MISC / "large-conversation.jsonl"  # 460 lines, 1.4 MB of a real session
SEGMENT = 60_000  # ~25 segments of it

_QUERIES = {
    "entries": "SELECT line_index, entry_type, kind, role, timestamp, uuid, text FROM entries ORDER BY line_index",
    "turns": "SELECT line_index, end_line_index, kind, provisional, prompt_text, full_text, tool_summary, "
    "started_at, ended_at FROM turns ORDER BY line_index",
    "chunks": "SELECT t.line_index, c.content FROM chunks c JOIN turns t ON t.id = c.turn_id ORDER BY 1, c.id",
    "files": "SELECT t.line_index, f.file_path, f.tool_name FROM file_mentions f JOIN turns t ON t.id = f.turn_id "
    "ORDER BY 1, 2, 3",
    "mirror": "SELECT m.title, m.timestamp_start, m.timestamp_end, m.content_hash, s.start, s.length, s.body "
    "FROM mirror_records m JOIN mirror_segments s ON s.mirror_id = m.id ORDER BY s.start",
    "session": "SELECT session_id, title, project_dir, started_at, ended_at, file_size, last_offset, resume_offset, "
    "bad_lines, head_hash, tail_hash FROM sessions",
    "tool outputs": "SELECT t.line_index, o.line_index, o.tool_name, o.text FROM tool_outputs o "
    "JOIN turns t ON t.id = o.turn_id ORDER BY 1, 2",
}


def _index(home: Path, folder: Path) -> dict[str, object]:
    config = load_config({"MEMEX_HOME": str(home), "MEMEX_COMPUTER": "seg", "MEMEX_REDIS_URL": ""})
    conn = connect(config.db_path)
    try:
        return index_transcripts(conn, config, discover({"claude": [folder]})).to_json()
    finally:
        conn.close()


def _store(home: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(home / "memex.db")
    try:
        return {name: conn.execute(sql).fetchall() for name, sql in _QUERIES.items()}
    finally:
        conn.close()


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    target = tmp_path / "projects" / "-home-dev-shop" / LARGE.name
    target.parent.mkdir(parents=True)
    shutil.copy(LARGE, target)
    return target.parent


@pytest.fixture
def whole(tmp_path: Path, folder: Path) -> dict[str, list[tuple[object, ...]]]:
    """The store one read of the whole file makes."""
    _index(tmp_path / "whole", folder)
    return _store(tmp_path / "whole")


def test_segments_make_the_store_one_read_makes(tmp_path: Path, folder: Path, whole, monkeypatch) -> None:
    monkeypatch.setattr(pipeline, "SEGMENT_BYTES", SEGMENT)
    reads: list[int] = []
    parse = pipeline.parse_stream

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        parsed = parse(*args, **kwargs)
        reads.append(parsed.end_offset - parsed.start_offset)
        return parsed

    monkeypatch.setattr(pipeline, "parse_stream", counted)
    report = _index(tmp_path / "segments", folder)
    assert len(reads) >= LARGE.stat().st_size // SEGMENT // 2  # it was read a segment at a time
    assert max(reads) < 4 * SEGMENT
    assert report["files_changed"] == 1 and report["failed_files"] == 0
    assert report["lines"] >= 460
    assert _store(tmp_path / "segments") == whole
    assert _index(tmp_path / "segments", folder)["files_changed"] == 0  # stored as the whole file, at last


def test_a_run_stopped_between_segments_keeps_them_and_the_next_completes(
    tmp_path: Path, folder: Path, whole, monkeypatch
) -> None:
    monkeypatch.setattr(pipeline, "SEGMENT_BYTES", SEGMENT)
    write = pipeline.write_stream
    calls = []

    def stopped(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if len(calls) == 4:
            raise RuntimeError("the machine went down")
        return write(*args, **kwargs)

    monkeypatch.setattr(pipeline, "write_stream", stopped)
    assert _index(tmp_path / "segments", folder)["failed_files"] == 1
    kept = _store(tmp_path / "segments")
    assert 0 < len(kept["turns"]) < len(whole["turns"])  # three segments were kept
    monkeypatch.setattr(pipeline, "write_stream", write)
    assert _index(tmp_path / "segments", folder)["files_changed"] == 1
    assert _store(tmp_path / "segments") == whole


def test_segments_parsed_by_workers_make_the_same_store(tmp_path: Path, folder: Path, whole, monkeypatch) -> None:
    monkeypatch.setattr(pipeline, "SEGMENT_BYTES", SEGMENT)
    monkeypatch.setattr(indexer, "PARALLEL_MIN_FILES", 1)
    monkeypatch.setattr(indexer, "PARALLEL_MIN_BYTES", 1)
    config = load_config({"MEMEX_HOME": str(tmp_path / "workers"), "MEMEX_COMPUTER": "seg", "MEMEX_REDIS_URL": ""})
    conn = connect(config.db_path)
    try:
        report = index_transcripts(conn, config, discover({"claude": [folder]}), workers=2)
    finally:
        conn.close()
    assert report.files_changed == 1 and not report.failed
    assert _store(tmp_path / "workers") == whole
