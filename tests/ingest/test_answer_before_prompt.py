"""An answer written before its prompt (Claude Code 2.1.197: its transcript writes are queued) still makes
one turn with that prompt, read whole or line by line as the Stop hook reads a growing file."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from corpus import FIXTURES
from memex.ingest.order import WINDOW, ParentOrder
from memex.sources.model import Entry

# Lines 0-3 meta records, 4 the answer (parentUuid: line 8), 5 a snapshot, 6 the prompt, 7-8 its attachments.
LATE = FIXTURES / "live" / "claude-2.1.197" / "projects" / "-tmp-proj" / "df67630b-4fd8-4528-a4f7-8f7a81330a49.jsonl"
PROMPT = "Which walrus colony did the zebrafish survey count twice?"


def _turns(conn: sqlite3.Connection) -> list[tuple[str | None, str, int, int]]:
    rows = conn.execute("SELECT prompt_text, full_text, line_index, end_line_index FROM turns ORDER BY line_index")
    return list(rows)


def _only_turn_is_the_exchange(conn: sqlite3.Connection) -> None:
    turns = _turns(conn)
    assert len(turns) == 1, turns
    prompt, text, first, last = turns[0]
    assert prompt == PROMPT and text.startswith(f"User: {PROMPT}\n\nAssistant: Mock answer (anthropic)")
    assert first <= 4 and last >= 6  # the turn spans the answer's line and the prompt's


def test_an_answer_written_before_its_prompt_joins_that_prompt(run, conn, tmp_path: Path) -> None:
    projects = tmp_path / "projects" / "-tmp-proj"
    projects.mkdir(parents=True)
    (projects / LATE.name).write_bytes(LATE.read_bytes())
    assert run("index", "--no-embed", str(projects)).exit_code == 0
    _only_turn_is_the_exchange(conn)


@pytest.mark.parametrize("first_lines", [5, 6, 7, 8])
def test_read_while_it_is_written_the_exchange_is_one_turn_in_the_end(
    run, conn, tmp_path: Path, first_lines: int
) -> None:
    """The Stop hook may read the file after the answer's line and before its prompt's: the next read
    starts again at that answer (the turn's first line), so the exchange comes together."""
    projects = tmp_path / "projects" / "-tmp-proj"
    projects.mkdir(parents=True)
    lines = LATE.read_bytes().splitlines(keepends=True)
    growing = projects / LATE.name
    growing.write_bytes(b"".join(lines[:first_lines]))
    assert run("index", "--no-embed", str(growing)).exit_code == 0
    growing.write_bytes(b"".join(lines))
    assert run("index", "--no-embed", str(growing)).exit_code == 0
    _only_turn_is_the_exchange(conn)


def _entry(line: int, uuid: str | None, parent: str | None, kind: str = "meta") -> Entry:
    return Entry(line_index=line, entry_type=kind, kind=kind, uuid=uuid, parent_uuid=parent)  # type: ignore[arg-type]


def test_an_answer_whose_parent_never_comes_keeps_its_place() -> None:
    """A parent read before this batch (or lost): the answer and what followed it go in file order."""
    order = ParentOrder()
    entries = [_entry(0, "a", "earlier", "assistant"), *(_entry(n, f"x{n}", None) for n in range(1, WINDOW + 3))]
    given = [taken for entry in entries for taken in order.add(entry)] + order.flush()
    assert [e.line_index for e in given] == list(range(WINDOW + 3))


def test_the_prompt_and_its_attachments_go_before_the_answer_that_descends_from_them() -> None:
    order = ParentOrder()
    lines = [
        _entry(0, "answer", "attachment-2", "assistant"),
        _entry(1, None, None),  # a file-history snapshot
        _entry(2, "prompt", None, "prompt"),
        _entry(3, "attachment-1", "prompt"),
        _entry(4, "attachment-2", "attachment-1"),
        _entry(5, "summary", "answer"),
    ]
    given = [taken for entry in lines for taken in order.add(entry)] + order.flush()
    assert [e.line_index for e in given] == [1, 2, 3, 4, 0, 5]
