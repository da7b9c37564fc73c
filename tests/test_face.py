"""The `Memex` face, called as a library: one store indexed once for the module (three synthetic sessions
about one bug, and the real HillviewCap folder), then every read method, and what each answers as JSON."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from corpus import HILLVIEW
from hooktools import BLOG, CURRENT, OTHER, PAST, SHOP, build_corpus
from memex import Filters, Memex
from memex.config import load_config
from memex.errors import UserError
from memex.store.db import transaction
from memex.store.mirrors import delete_record
from mirrortools import store_received_mirror


@pytest.fixture(scope="module")
def memex(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Memex]:
    """The face over a store indexed once for the module (no embeddings: these are the lexical paths)."""
    root = tmp_path_factory.mktemp("face")
    projects = root / "projects"
    build_corpus(projects)
    shutil.copytree(HILLVIEW, projects / HILLVIEW.name)
    config = load_config({"MEMEX_HOME": str(root / "home"), "MEMEX_COMPUTER": "testbox", "MEMEX_INDEX_EMBEDS": "0"})
    with Memex.open(config) as face:
        report = face.index(face.discover([projects]))
        assert report.failed == []
        yield face


def test_index_reports_what_it_stored_and_a_second_run_changes_nothing(memex: Memex) -> None:
    stats = memex.stats()
    assert stats.sessions >= 11  # 3 synthetic + 8 HillviewCap main sessions
    found = memex.discover([Path(memex.config.home).parent / "projects"])
    again = memex.index(found)
    assert again.files_changed == 0
    # The run's time includes finding the files, which is all of it when nothing changed.
    assert again.seconds >= found.seconds > 0
    assert memex.stats().turns == stats.turns


def test_search_finds_the_fix_in_both_projects_and_filters_by_project(memex: Memex) -> None:
    found = memex.search("parse_config_file empty", Filters(), limit=10, mode="lexical")
    sessions = {hit.session_id for hit in found.hits}
    assert {PAST, OTHER, CURRENT} <= sessions
    only_blog = memex.search("parse_config_file empty", Filters.parse({"project": BLOG}), limit=10, mode="lexical")
    assert {hit.session_id for hit in only_blog.hits} == {OTHER}
    as_json = json.loads(json.dumps(found.to_json()))  # the --json / HTTP contract is plain JSON
    assert [row["session_id"] for row in as_json] == [hit.session_id for hit in found.hits]


def test_a_query_of_a_pasted_page_is_searched_not_refused(memex: Memex) -> None:
    """Past 500 words SQLite refused the mirrors' lookup ("too many terms in compound SELECT")."""
    pasted = "parse_config_file empty " + " ".join(f"logline{i}" for i in range(700))
    found = memex.search(pasted, Filters(), limit=10, mode="lexical")
    assert {PAST, OTHER, CURRENT} <= {hit.session_id for hit in found.hits}
    memex.search(pasted, Filters(), limit=10, mode="lexical", scope="tools")  # tool output: not refused either
    everything = memex.search(pasted, Filters(), limit=30, mode="lexical", scope="all")
    assert {PAST, OTHER, CURRENT} <= {hit.session_id for hit in everything.hits}


@pytest.mark.parametrize(
    "query", ["parse_config_file\x00empty", 'parse_config_file NEAR( "empty', "parse_config_file AND OR NOT empty*"]
)
def test_a_query_with_nul_or_fts_syntax_is_searched_as_words(memex: Memex, query: str) -> None:
    """A NUL ended FTS5's quoted phrase ("unterminated string"); FTS5's own syntax is inert."""
    for mode in ("lexical", "hybrid"):
        found = memex.search(query, Filters(), limit=10, mode=mode)
        assert {PAST, OTHER, CURRENT} <= {hit.session_id for hit in found.hits}


def test_sessions_show_and_resolve(memex: Memex) -> None:
    listed = memex.sessions(Filters.parse({"project": SHOP}))
    assert {s.session_id for s in listed} == {PAST, CURRENT}
    assert memex.resolve_session(PAST[:12]) == PAST
    with pytest.raises(UserError):
        memex.resolve_session("ffffffff-nothing")
    view = memex.show(PAST)
    said = " ".join(m["text"] for m in view.messages)
    assert "make clean-worktrees" in said
    assert view.to_json()["session"]["title"] == "Empty config crash"


def test_recall_gives_other_sessions_turns_never_the_asking_one(memex: Memex) -> None:
    recalled = memex.recall("why does parse_config_file crash on an empty config file", session_id=CURRENT)
    assert recalled.hits >= 1
    assert PAST[:8] in recalled.text
    assert CURRENT[:8] not in recalled.text
    assert recalled.to_json() == {"text": recalled.text, "hits": recalled.hits}


def test_file_context_names_the_sessions_that_edited_the_file(memex: Memex) -> None:
    context = memex.file_context(f"{SHOP}/src/config_loader.py", session_id=CURRENT, cwd=SHOP)
    assert context.items == 1  # the shop's past session; the blog's file is another file
    assert "src/config_loader.py" in context.text
    assert PAST[:8] in context.text and CURRENT[:8] not in context.text
    nothing = memex.file_context(f"{SHOP}/README.md", session_id=CURRENT)
    assert nothing.to_json() == {"text": "", "items": 0}


def test_session_contexts_need_an_indexed_session(memex: Memex) -> None:
    assert memex.recent_files_context("no-such-session") is None
    assert memex.compaction_context("no-such-session") is None
    recent = memex.recent_files_context(PAST)
    assert recent is not None and recent.items == 1 and "src/config_loader.py" in recent.text
    never_compacted = memex.compaction_context(PAST)
    assert never_compacted is not None and never_compacted.text == ""


def test_computer_search_answers_with_this_computers_sessions_only(memex: Memex) -> None:
    """What another computer's `search --computer` gets: this computer's turns, never a mirror this
    computer received from a third one, and no more than the limit."""
    mirror_id = store_received_mirror(
        memex.conn,
        "remote-parse-0001",
        "laptop",
        "/home/ana/shop",
        "parse_config_file on an empty file",
        "parse_config_file crashes on an empty file",
        "It returns {} now.",
    )
    try:
        everywhere = memex.search("parse_config_file empty", Filters(), limit=10, mode="lexical")
        assert "remote-parse-0001" in {hit.session_id for hit in everywhere.hits}
        answered = memex.computer_search("parse_config_file empty", Filters(), 2)
        assert answered.computer == "testbox" and len(answered.hits) == 2
        assert {hit.computer for hit in answered.hits} == {"testbox"}
        assert {hit.session_id for hit in answered.hits} <= {PAST, OTHER, CURRENT}
    finally:
        with transaction(memex.conn):
            delete_record(memex.conn, mirror_id)
