"""Order-independent results: a store that read a transcript a few lines at a time holds what a store that
read it once holds: the session's start, its count of bad lines, and the session id itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus import MISC, db_content
from memex.config import Config, load_config
from memex.ingest.indexer import discover, index_transcripts
from memex.ingest.pipeline import ingest_transcript
from memex.sources import claude
from memex.store.db import connect
from transcripts import ClaudeSession, simple_turn, text

SID = "11111111-2222-3333-4444-555555555555"


def fresh_store(tmp_path: Path, name: str):
    config = load_config({"MEMEX_HOME": str(tmp_path / name), "MEMEX_COMPUTER": "testbox"})
    return config, connect(config.db_path)


def one_shot(tmp_path: Path, root: Path) -> dict[str, list[tuple]]:
    """What a store that reads the final files once holds."""
    config, conn = fresh_store(tmp_path, "one-shot")
    index_transcripts(conn, config, discover({"claude": [root]}))
    content = db_content(conn)
    content["bad_lines"] = sorted(tuple(r) for r in conn.execute("SELECT session_id, bad_lines FROM sessions"))
    conn.close()
    return content


def stored(conn) -> dict[str, list[tuple]]:
    content = db_content(conn)
    content["bad_lines"] = sorted(tuple(r) for r in conn.execute("SELECT session_id, bad_lines FROM sessions"))
    return content


def test_started_at_is_the_earliest_timestamp_whenever_it_was_read(conn, config: Config, tmp_path: Path) -> None:
    root = tmp_path / "projects"
    session = ClaudeSession(root / "-p" / f"{SID}.jsonl", SID)
    simple_turn(session, "first question", "first answer")
    simple_turn(session, "second question", "second answer")
    transcript = claude.classify(session.path)
    ingest_transcript(conn, config, transcript)
    assert conn.execute("SELECT resume_line_index FROM sessions").fetchone()[0] > 0  # the next run appends
    # A record written later carries an earlier time (snapshots and resumed copies are not in time order).
    early = {**session.prompt("a late line about an early moment"), "timestamp": "2026-01-01T00:00:00.000Z"}
    session.write(early, session.assistant(text("ok")))
    ingest_transcript(conn, config, transcript)
    started = conn.execute("SELECT started_at FROM sessions").fetchone()[0]
    assert started == "2026-01-01T00:00:00.000Z"
    assert stored(conn) == one_shot(tmp_path, root)


def test_a_bad_line_read_again_is_counted_once(conn, config: Config, tmp_path: Path) -> None:
    root = tmp_path / "projects"
    session = ClaudeSession(root / "-p" / f"{SID}.jsonl", SID)
    simple_turn(session, "a question", "an answer")
    session.write(session.prompt("the last prompt, whose turn stays provisional"))
    with session.path.open("ab") as handle:
        handle.write(b"this line is not json\n")  # inside the provisional turn: re-read by every append
    transcript = claude.classify(session.path)
    assert ingest_transcript(conn, config, transcript).bad_lines == 1
    for n in range(3):
        session.write(session.assistant(text(f"more of the answer, part {n}")))
        report = ingest_transcript(conn, config, transcript)
        assert report.status == "appended" and report.bad_lines == 0 and report.warnings == []
    assert conn.execute("SELECT bad_lines FROM sessions").fetchone()[0] == 1
    assert stored(conn) == one_shot(tmp_path, root)


def _write_in_two(path: Path, lines: list[bytes], cut: int, conn, config: Config) -> None:
    """Write the first `cut` bytes of `lines`, index, write the rest, index."""
    data = b"".join(lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data[:cut])
    index_transcripts(conn, config, discover({"claude": [path.parent]}))
    path.write_bytes(data)
    index_transcripts(conn, config, discover({"claude": [path.parent]}))


def test_the_session_id_of_a_file_does_not_depend_on_when_it_was_first_read(tmp_path: Path) -> None:
    """A file not named by its session id: its first line names the session, whether that line was complete
    when the file was first seen or not."""
    source = (MISC / "tiny-conversation.jsonl").read_bytes().splitlines(keepends=True)
    expected = json.loads(source[0])["sessionId"]
    for cut in (0, 40, len(source[0]), len(source[0]) + 40):  # nothing, half a line, one line, one and a bit
        root = tmp_path / f"cut{cut}"
        config, conn = fresh_store(tmp_path, f"store{cut}")
        _write_in_two(root / "tiny-conversation.jsonl", source, cut, conn, config)
        assert [r[0] for r in conn.execute("SELECT session_id FROM sessions")] == [expected], cut
        assert stored(conn) == one_shot(tmp_path / f"again{cut}", root)
        conn.close()


def test_a_first_line_without_session_id_names_the_session_by_the_file(tmp_path: Path) -> None:
    """short-conversation.jsonl starts with a summary line (no sessionId): the file's name is the session,
    however many of its lines existed when it was first read."""
    source = (MISC / "short-conversation.jsonl").read_bytes().splitlines(keepends=True)
    for lines_first in (1, 2, len(source)):
        root = tmp_path / f"first{lines_first}"
        config, conn = fresh_store(tmp_path, f"store{lines_first}")
        _write_in_two(root / "short-conversation.jsonl", source, len(b"".join(source[:lines_first])), conn, config)
        assert [r[0] for r in conn.execute("SELECT session_id FROM sessions")] == ["short-conversation"]
        conn.close()


def _times(conn) -> tuple:
    return tuple(conn.execute("SELECT started_at, ended_at FROM sessions").fetchone())


@pytest.mark.parametrize("order", ["main first", "subagent first", "interleaved", "undated main first"])
def test_start_and_end_do_not_depend_on_the_order_of_ingests(tmp_path: Path, order: str) -> None:
    """Appends to a main transcript and to its subagent, ingested in different orders and steps, give the
    start (the main transcript's earliest time) and end (anyone's latest) of one ingest of everything."""
    root = tmp_path / "projects"
    main = ClaudeSession(root / "-p" / f"{SID}.jsonl", SID)
    sub = ClaudeSession(root / "-p" / SID / "subagents" / "agent-a1.jsonl", SID, agent_id="a1")

    def dated(record: dict, when: str) -> dict:
        return {**record, "timestamp": f"2026-02-0{when}T00:00:00.000Z"}

    undated = {k: v for k, v in main.prompt("a first line without a time").items() if k != "timestamp"}
    steps = {
        "main": [
            [undated] if order == "undated main first" else [dated(main.prompt("first question"), "5")],
            [dated(main.assistant(text("an answer")), "6"), dated(main.prompt("second question"), "7")],
            [dated(main.snapshot("a.py"), "3"), dated(main.assistant(text("late but early")), "8")],
        ],
        "sub": [
            [dated(sub.prompt("explore"), "2")],
            [dated(sub.assistant(text("explored")), "9")],
        ],
    }
    plans = {
        "main first": ["main", "main", "main", "sub", "sub"],
        "subagent first": ["sub", "sub", "main", "main", "main"],
        "interleaved": ["main", "sub", "main", "sub", "main"],
        "undated main first": ["main", "sub", "sub", "main", "main"],
    }[order]
    config, conn = fresh_store(tmp_path, "steps")
    for stream in plans:
        session = main if stream == "main" else sub
        session.write(*steps[stream].pop(0))
        index_transcripts(conn, config, discover({"claude": [root]}))
    config_once, once = fresh_store(tmp_path, "once")
    index_transcripts(once, config_once, discover({"claude": [root]}))
    assert _times(conn) == _times(once)
    expected_start = "2026-02-03T00:00:00.000Z"  # the main transcript's earliest, written late
    assert _times(once) == (expected_start, "2026-02-09T00:00:00.000Z")
