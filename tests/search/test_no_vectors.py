"""A search by meaning that could find nothing costs nothing: no model loaded, no query embedded, when the
store has no vectors or the filters admit none; and "no vectors yet" is said only when there are none."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from memex.config import Config
from memex.context.answers import recall_answer
from memex.embed import model
from memex.embed.worker import drain, worker_lock
from memex.ingest.indexer import discover, index_transcripts
from memex.search.hybrid import hybrid_search
from memex.store.queries import Filters
from transcripts import ClaudeSession, simple_turn

NO_VECTORS = "no vectors yet"


class CountingEmbedder:
    """The real model, counting the queries it embeds."""

    def __init__(self, inner: model.Embedder) -> None:
        self.inner, self.queries = inner, 0
        self.name, self.dimension, self.model_version = inner.name, inner.dimension, inner.model_version

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed_passages(texts)

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        self.queries += len(texts)
        return self.inner.embed_queries(texts)


@pytest.fixture
def fresh(config: Config) -> Config:
    """A configuration no test has loaded a model for yet (its own thread count is part of the cache key)."""
    return dataclasses.replace(config, embed_query_threads=7)


def _loaded(config: Config) -> bool:
    return any(key[3] == config.embed_query_threads for key in model._loaded)


def _write(root: Path, name: str, prompt: str, answer: str) -> None:
    session = ClaudeSession(root / f"{name}.jsonl", f"{name}0000-{name}", cwd="/home/dev/shop")
    simple_turn(session, prompt, answer)
    simple_turn(session, "thanks", "You're welcome.")


def test_a_store_without_vectors_neither_loads_the_model_nor_embeds(conn, fresh, tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-home-dev-shop"
    _write(root, "aaaa", "The sticky header covers the anchor links", "Added scroll-margin-top to the headings.")
    index_transcripts(conn, fresh, discover({"claude": [root.parent]}))
    outcome = hybrid_search(conn, fresh, "sticky header anchor", Filters())
    assert [h["session_id"] for h in outcome.results] == ["aaaa0000-aaaa"]
    assert outcome.mode == "lexical" and any(NO_VECTORS in note for note in outcome.notes)
    assert hybrid_search(conn, fresh, "sticky header anchor", Filters(), mode="semantic").results == []
    assert not _loaded(fresh)


def test_filters_that_exclude_every_vector_skip_the_query_and_say_nothing_of_missing_vectors(
    conn, config, fresh, tmp_path: Path
) -> None:
    root = tmp_path / "projects" / "-home-dev-shop"
    _write(root, "aaaa", "The sticky header covers the anchor links", "Added scroll-margin-top to the headings.")
    index_transcripts(conn, config, discover({"claude": [root.parent]}))
    with worker_lock(config.home):
        drain(conn, config)
    _write(root, "bbbb", "The sticky footer hides the cookie banner", "Raised the banner's z-index.")
    index_transcripts(conn, config, discover({"claude": [root.parent]}))  # not embedded yet
    counting = CountingEmbedder(model.load_embedder(config))

    only_new = hybrid_search(conn, fresh, "sticky footer", Filters(session="bbbb0000"), embedder=counting)
    assert [h["session_id"] for h in only_new.results] == ["bbbb0000-bbbb"]
    assert only_new.notes == [] and counting.queries == 0 and not _loaded(fresh)

    everywhere = hybrid_search(conn, fresh, "sticky header", Filters(), embedder=counting)
    assert counting.queries == 1 and everywhere.mode == "hybrid" and everywhere.notes == []


def test_the_cli_says_no_vectors_yet_only_when_there_are_none(run, conn, config, tmp_path: Path) -> None:
    root = tmp_path / "claude-projects" / "-home-dev-shop"
    _write(root, "aaaa", "The sticky header covers the anchor links", "Added scroll-margin-top to the headings.")
    assert run("index").exit_code == 0
    before = run("search", "sticky header")
    assert before.exit_code == 0 and NO_VECTORS in before.stderr and "aaaa0000" in before.stdout
    with worker_lock(config.home):
        drain(conn, config)
    _write(root, "bbbb", "The sticky footer hides the cookie banner", "Raised the banner's z-index.")
    assert run("index").exit_code == 0
    filtered = run("search", "sticky", "--session", "bbbb0000")
    assert filtered.exit_code == 0 and NO_VECTORS not in filtered.stderr and "bbbb0000" in filtered.stdout


def test_prompt_recall_skips_the_model_when_only_the_asking_session_has_vectors(
    conn, config, fresh, tmp_path: Path
) -> None:
    root = tmp_path / "projects" / "-home-dev-shop"
    _write(root, "aaaa", "The sticky header covers the anchor links", "Added scroll-margin-top to the headings.")
    index_transcripts(conn, config, discover({"claude": [root.parent]}))
    with worker_lock(config.home):
        drain(conn, config)
    prompt = "why do the headings hide under the top bar"
    assert recall_answer(conn, fresh, prompt, "aaaa0000-aaaa", semantic=True) == ("", 0)
    assert not _loaded(fresh)
