"""Hybrid search: meaning finds what words miss, levels cascade by intent, one result per session, the
relevance floor, and the score parts in --json."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from memex.config import Config
from memex.errors import EmbedderUnavailable
from memex.search.hybrid import hybrid_search, is_coarse, level_order, names_only
from memex.store.db import connect
from memex.store.queries import Filters
from stores import copy_store, index_once
from transcripts import ClaudeSession, simple_turn

pytestmark = [pytest.mark.model]

POOL = "集成测试一直卡住，查了半天，原来是数据库连接池耗尽了。把连接池调大到 50 就好了。"


def _pool_corpus(root: Path) -> list[Path]:
    """Three sessions: a Chinese one about an exhausted connection pool, and two unrelated ones."""
    root = root / "projects" / "-home-dev-shop"
    pool = ClaudeSession(root / "pool.jsonl", "aaaa0000-pool", cwd="/home/dev/shop")
    simple_turn(pool, POOL, "已将连接池大小调整为 50，测试不再卡住。")
    simple_turn(pool, "好的，谢谢", "不客气。")
    css = ClaudeSession(root / "css.jsonl", "bbbb0000-css", cwd="/home/dev/shop")
    simple_turn(css, "The sidebar overlaps the footer on narrow screens", "Switched the layout to CSS grid.")
    simple_turn(css, "Also make the header sticky", "Added position: sticky to the header.")
    simple_turn(css, "And the footer links wrap badly", "Added flex-wrap to the footer links.")
    simple_turn(css, "ok", "Done.")
    recipes = ClaudeSession(root / "recipes.jsonl", "cccc0000-recipes", cwd="/home/dev/kitchen")
    simple_turn(recipes, "Write a parser for recipe ingredient lists", "Added parse_ingredients in recipes/parse.py.")
    simple_turn(recipes, "thanks", "You're welcome.")
    return [root.parent]


@pytest.fixture(scope="module")
def pool_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return index_once(tmp_path_factory.mktemp("pool"), _pool_corpus, embed=True)


@pytest.fixture
def store(pool_home: Path, home: Path, config: Config) -> Iterator[sqlite3.Connection]:
    """This test's copy of the pool corpus, indexed and embedded."""
    copy_store(pool_home, home)
    conn = connect(config.db_path)
    yield conn
    conn.close()


QUESTION = "integration tests hang because the database connection pool is exhausted"


def test_meaning_finds_a_paraphrase_in_another_language_that_words_miss(store, config) -> None:
    lexical = hybrid_search(store, config, QUESTION, Filters(), mode="lexical").results
    assert all(hit["session_id"] != "aaaa0000-pool" for hit in lexical)
    semantic = hybrid_search(store, config, QUESTION, Filters(), mode="semantic").results
    hybrid = hybrid_search(store, config, QUESTION, Filters()).results
    assert semantic[0]["session_id"] == "aaaa0000-pool" and hybrid[0]["session_id"] == "aaaa0000-pool"
    assert hybrid[0]["source"] == "turn" and "连接池" in hybrid[0]["full_text"]
    parts = hybrid[0]["explain"]
    assert {"chunk", "turn"} <= set(parts) and parts["chunk"]["cosine"] > 0.8 and "lexical" not in parts


def test_the_relevance_floor_keeps_unrelated_sessions_out(store, config) -> None:
    hits = hybrid_search(store, config, QUESTION, Filters(), mode="semantic").results
    assert "cccc0000-recipes" not in {h["session_id"] for h in hits}
    nothing = hybrid_search(store, config, "quarterly tax filing deadline for freelancers", Filters(), mode="semantic")
    assert nothing.results == []


def test_results_are_one_per_session_unless_asked(store, config) -> None:
    query = "footer header sidebar layout"
    one = hybrid_search(store, config, query, Filters(), limit=10).results
    assert len([h for h in one if h["session_id"] == "bbbb0000-css"]) == 1
    several = hybrid_search(store, config, query, Filters(), limit=10, per_session=3).results
    assert len([h for h in several if h["session_id"] == "bbbb0000-css"]) == 3


def test_filters_apply_to_vector_hits(store, config) -> None:
    everywhere = hybrid_search(store, config, "recipe ingredient parser", Filters(), mode="semantic").results
    assert everywhere[0]["session_id"] == "cccc0000-recipes"
    shop = hybrid_search(store, config, "recipe ingredient parser", Filters(project="shop"), mode="semantic").results
    assert all(h["project_dir"] == "/home/dev/shop" for h in shop)
    pool_only = hybrid_search(store, config, QUESTION, Filters(session="aaaa0000"), mode="semantic").results
    assert {h["session_id"] for h in pool_only} == {"aaaa0000-pool"}


def test_cascade_order_follows_the_question() -> None:
    assert level_order("where is parse_ingredients defined") == ["chunk", "turn", "session"]
    assert level_order("give me an overview of the layout work") == ["session", "turn", "chunk"]
    assert level_order("总结一下这周的数据库问题") == ["session", "turn", "chunk"]
    assert level_order("anything", level="turn") == ["turn"]
    assert is_coarse("what's the trend in flaky tests over time") and not is_coarse("fix the flaky login test")


def test_a_coarse_question_puts_sessions_first(store, config) -> None:
    outcome = hybrid_search(store, config, "overview of the sidebar and footer layout work", Filters())
    assert outcome.levels[0] == "session"
    top = outcome.results[0]
    assert top["session_id"] == "bbbb0000-css" and top["explain"]["session"]["rank"] == 1
    chinese = hybrid_search(store, config, "总结一下集成测试卡住的问题", Filters()).results
    assert chinese[0]["session_id"] == "aaaa0000-pool" and chinese[0]["explain"]["session"]["rank"] == 1
    only_sessions = hybrid_search(store, config, "page layout fixes", Filters(), level="session").results
    assert only_sessions and all(set(h["explain"]) <= {"fused", "session", "mirror"} for h in only_sessions)


def test_cli_modes_and_json_explain(run, store) -> None:
    result = run("search", QUESTION, "--json")
    hits = json.loads(result.stdout)
    assert hits[0]["session_id"] == "aaaa0000-pool" and "explain" in hits[0]
    lexical = json.loads(run("search", QUESTION, "--mode", "lexical", "--json").stdout)
    assert "aaaa0000-pool" not in {h["session_id"] for h in lexical}
    bad = run("search", QUESTION, "--mode", "psychic")
    assert bad.exit_code == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_a_selective_filter_falls_back_to_searching_only_admitted_vectors(store, home, monkeypatch) -> None:
    import memex.search.hybrid as hybrid
    from memex.config import load_config
    from memex.embed.model import load_embedder

    monkeypatch.setattr(hybrid, "POST_FILTER_FACTOR", 1)
    monkeypatch.setattr(hybrid, "FIRST_FILTER_FACTOR", 1)
    narrow = load_config({**os.environ, "MEMEX_SEARCH_VECTOR_CANDIDATES": "1"})
    # The 3 nearest turns to a layout question are the CSS session's: none is in the kitchen project, so the
    # search lists the kitchen's turns and looks among them alone.
    hits = hybrid.hybrid_search(
        store, narrow, "sticky header layout", Filters(project="kitchen"), limit=1, mode="semantic", level="turn"
    )
    assert hits.results == [] or hits.results[0]["project_dir"] == "/home/dev/kitchen"
    lists = hybrid._semantic_lists(
        store,
        narrow,
        load_embedder(narrow),
        load_embedder(narrow).embed_queries(["sticky header"])[0],
        Filters(project="kitchen"),
        ["turn"],
        1,
        {},
    )
    owners = [n.owner_id for n in lists["turn"]]
    kitchen = {
        r[0]
        for r in store.execute(
            "SELECT t.id FROM turns t JOIN sessions s USING (session_id) WHERE s.project_dir = '/home/dev/kitchen'"
        )
    }
    assert owners and set(owners) <= kitchen


def test_a_lenient_filter_is_answered_from_twice_the_wanted_nearest_with_the_same_neighbours(
    store, config, monkeypatch
) -> None:
    """Prompt recall leaves out one session: its neighbours are among the first twice as many nearest, and
    they are the ones a search of POST_FILTER_FACTOR times as many finds; when too few of those pass, the
    longer search follows; a project (which may admit few) goes to the longer search at once."""
    import memex.search.hybrid as hybrid
    from memex.embed.model import load_embedder
    from memex.search.vector import VectorIndex, vector_index

    embedder = load_embedder(config)
    index = vector_index(config, "turn", embedder.dimension)
    asked: list[int] = []
    search = VectorIndex.search

    def counted(self, conn, query, k, *args, **kwargs):  # the real search, its `k` noted
        asked.append(k)
        return search(self, conn, query, k, *args, **kwargs)

    monkeypatch.setattr(VectorIndex, "search", counted)
    query = embedder.embed_queries(["the header should stay visible while scrolling"])[0]
    lenient, narrow = Filters(exclude_session="aaaa0000-pool"), Filters(project="kitchen")
    found = {f: hybrid.filtered_search(store, index, query, "turn", f, 2, 2) for f in (lenient, narrow)}
    assert len(found[lenient]) == 2 and asked[0] == 4  # 2 wanted: the 4 nearest, never 2 × POST_FILTER_FACTOR
    assert asked[1:] == [2 * hybrid.POST_FILTER_FACTOR]  # a project may admit few: the longer search at once
    other = Filters(exclude_session="bbbb0000-css")  # leaves out the nearest: the 8 hold fewer than 4 others
    assert (
        hybrid.filtered_search(store, index, query, "turn", other, 4, 4)
        == [n for n in index.search(store, query, 8) if n.owner_id not in _turn_ids(store, "bbbb0000-css")][:4]
    )
    assert asked[2:] == [8, 4 * hybrid.POST_FILTER_FACTOR, 8]
    monkeypatch.setattr(hybrid, "FIRST_FILTER_FACTOR", hybrid.POST_FILTER_FACTOR)  # as before: one long search
    for f in (lenient, narrow):
        assert hybrid.filtered_search(store, index, query, "turn", f, 2, 2) == found[f]


def _turn_ids(conn: sqlite3.Connection, session_id: str) -> set[int]:
    return {r[0] for r in conn.execute("SELECT id FROM turns WHERE session_id = ?", (session_id,))}


def _config_corpus(root: Path) -> list[Path]:
    """A session about a config parser, one about recipes and settings, one about page layout."""
    root = root / "projects" / "-home-dev-shop"
    cfg = ClaudeSession(root / "cfg.jsonl", "dddd0000-config", cwd="/home/dev/shop")
    simple_turn(
        cfg,
        "the parse_config_file helper crashes on an empty config",
        "Fixed parse_config_file: it now handles empty files.",
    )
    simple_turn(cfg, "and the toml loader?", "The TOML loader now reports the line of a syntax error.")
    recipes = ClaudeSession(root / "recipes.jsonl", "cccc0000-recipes", cwd="/home/dev/kitchen")
    simple_turn(recipes, "Write a parser for recipe ingredient lists", "Added parse_ingredients in recipes/parse.py.")
    simple_turn(recipes, "Read the settings file at startup", "Settings are now loaded from settings.json at start.")
    css = ClaudeSession(root / "css.jsonl", "bbbb0000-css", cwd="/home/dev/shop")
    simple_turn(css, "The sidebar overlaps the footer on narrow screens", "Switched the layout to CSS grid.")
    simple_turn(css, "ok", "Done.")
    return [root.parent]


@pytest.fixture(scope="module")
def config_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return index_once(tmp_path_factory.mktemp("config"), _config_corpus, embed=True)


@pytest.fixture
def config_store(config_home: Path, home: Path, config: Config) -> Iterator[sqlite3.Connection]:
    """This test's copy of the config-parser corpus, indexed and embedded."""
    copy_store(config_home, home)
    conn = connect(config.db_path)
    yield conn
    conn.close()


def test_a_hit_found_by_meaning_alone_far_below_the_best_is_dropped(config_store, config) -> None:
    question = "why does the config parser crash on empty input"
    semantic = hybrid_search(config_store, config, question, Filters(), mode="semantic").results
    assert semantic[0]["session_id"] == "dddd0000-config"
    hits = hybrid_search(config_store, config, question, Filters()).results
    # The layout session shares no word with the question and sits far below its best match; the recipes
    # turn shares one (`parser`), too little of the question to vouch for it, and is as far below.
    assert [h["session_id"] for h in hits] == ["dddd0000-config"]
    lexical = hybrid_search(config_store, config, question, Filters(), mode="lexical").results
    assert "cccc0000-recipes" in {h["session_id"] for h in lexical}  # words alone still list it
    only = hybrid_search(config_store, config, "parse_config_file", Filters()).results
    assert [h["session_id"] for h in only] == ["dddd0000-config"]


def test_words_find_their_other_english_forms(config_store, config) -> None:
    # `crashing` finds `crashes`, `loading` finds `loaded` (lexically: no vector is consulted).
    hits = hybrid_search(config_store, config, "crashing helper", Filters(), mode="lexical").results
    assert hits and hits[0]["session_id"] == "dddd0000-config"
    loading = hybrid_search(config_store, config, "settings loading", Filters(), mode="lexical").results
    assert loading and loading[0]["session_id"] == "cccc0000-recipes"


def test_a_query_of_code_names_is_answered_by_the_turns_that_hold_them(config_store, config) -> None:
    assert names_only("parse_config_file") and names_only("retryFetchOnFailure src/a.py")
    assert not names_only("why does the config parser crash") and not names_only("follow-up")
    # No turn holds it: meaning alone (any code discussion sits near any identifier) answers nothing, even
    # where meaning finds a close neighbour (`parse_ingredients`).
    near = hybrid_search(config_store, config, "parse_ingredients_list", Filters(), mode="semantic").results
    assert near and near[0]["session_id"] == "cccc0000-recipes"
    assert hybrid_search(config_store, config, "parse_ingredients_list", Filters()).results == []
    assert [h["session_id"] for h in hybrid_search(config_store, config, "parse_ingredients", Filters()).results] == [
        "cccc0000-recipes"
    ]


class _FailingEmbedder:
    """An embedder whose engine fails on the query (as a model that cannot run here would)."""

    name, dimension, model_version = "e5-small-q4", 384, "test"

    def embed_passages(self, texts):
        raise EmbedderUnavailable("the engine failed")

    def embed_queries(self, texts):
        raise EmbedderUnavailable("the engine failed")


def test_a_query_the_model_cannot_embed_is_answered_by_words(store, config) -> None:
    """The query is embedded while the words are searched: when that fails, hybrid search answers by
    words with a note, as when the model cannot load; a search by meaning alone too."""
    found = hybrid_search(store, config, "sidebar footer", Filters(), embedder=_FailingEmbedder())
    assert found.mode == "lexical" and found.results[0]["session_id"] == "bbbb0000-css"
    assert any("semantic search unavailable (the engine failed)" in note for note in found.notes)
    semantic = hybrid_search(store, config, "sidebar footer", Filters(), mode="semantic", embedder=_FailingEmbedder())
    assert semantic.mode == "lexical" and semantic.results[0]["session_id"] == "bbbb0000-css"


def test_a_warm_search_scans_the_vectors_while_the_words_are_searched(store, config) -> None:
    """A process that searched by meaning before scans the matrices as soon as the query is embedded
    (beside the search by words): the same results as a search that scans when it gets there, and the
    scan is used only for the query it was made for."""
    from memex.embed.model import load_embedder
    from memex.search.hybrid import _searched_indexes
    from memex.search.vector import searched_index, vector_index

    query = "sticky header on narrow screens"
    first = hybrid_search(store, config, query, Filters())  # maps the indexes
    indexes = _searched_indexes(store, config, ["chunk", "turn"])
    assert set(indexes) == {"chunk", "turn"} and searched_index(config, "turn") is indexes["turn"]
    again = hybrid_search(store, config, query, Filters())
    assert again.results == first.results
    embedder = load_embedder(config)
    vector, other = embedder.embed_queries([query, "recipe ingredient parser"])
    index = vector_index(config, "turn", embedder.dimension)
    scanned = index.scanned(vector)
    assert index.search(store, vector, 3, scanned=scanned) == index.search(store, vector, 3)
    assert index.search(store, other, 3, scanned=scanned) == index.search(store, other, 3)  # not its scan


def test_filtered_neighbours_are_checked_best_first_until_enough_pass(conn) -> None:
    """The neighbours the filters admit, in order, the first `wanted` of them: found also when the best
    hundreds are left out (checked batch after batch), all of them when fewer pass."""
    from memex.search.hybrid import _admitted
    from memex.search.vector import Neighbour

    for session in ("mine", "other"):
        conn.execute(
            "INSERT INTO sessions (session_id, agent, computer, project_dir, started_at, updated_at) "
            "VALUES (?, 'claude', 'here', ?, '2026-01-01', '2026-01-01')",
            (session, f"/home/dev/{session}"),
        )
    turns = {
        conn.execute(
            "INSERT INTO turns (session_id, line_index, end_line_index, kind, full_text) "
            "VALUES (?, ?, ?, 'prompt', 'x')",
            (session, line, line),
        ).lastrowid: session
        for line, session in enumerate(["mine"] * 300 + ["other"] * 30 + ["mine"] * 10 + ["other"] * 30)
    }
    neighbours = [Neighbour(turn_id, 1 - i / 1000) for i, turn_id in enumerate(turns)]
    others = [n for n in neighbours if turns[n.owner_id] == "other"]
    for wanted in (1, 5, 45, 60, 100):
        found = _admitted(conn, "turn", Filters(exclude_session="mine"), neighbours, wanted)
        assert found == others[:wanted]
