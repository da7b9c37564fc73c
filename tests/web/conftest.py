"""A real corpus indexed into a test MEMEX_HOME, a received mirror with a hostile title, and the viewer
served over a real socket on 127.0.0.1."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from corpus import CODEX_SHORT, HILLVIEW, LIVE_CLAUDE
from memex.config import Config
from memex.mirrors.build import build_mirror, store_mirror
from memex.store.db import connect
from memex.web.server import WebServer
from stores import copy_store, index_once
from transcripts import ClaudeSession, simple_turn
from webtools import (
    HOSTILE,
    LONG_ANSWER,
    LONG_SESSION,
    MARKDOWN_ANSWER,
    MARKDOWN_SESSION,
    MIRRORED,
    SUBAGENT_SESSION,
    Browser,
)


def _write_corpus(root: Path) -> list[Path]:
    projects = root / "claude-projects"
    shutil.copytree(HILLVIEW, projects / HILLVIEW.name)
    shutil.copytree(LIVE_CLAUDE / "-home-dev-proj", projects / "-home-dev-proj")
    codex = root / "codex-sessions" / "2025" / "11" / "13"
    codex.mkdir(parents=True)
    shutil.copy(CODEX_SHORT, codex / CODEX_SHORT.name)
    simple_turn(
        ClaudeSession(projects / "-home-dev-shop" / f"{LONG_SESSION}.jsonl", LONG_SESSION), "show the log", LONG_ANSWER
    )
    simple_turn(
        ClaudeSession(projects / "-home-dev-shop" / f"{MARKDOWN_SESSION}.jsonl", MARKDOWN_SESSION),
        "plan the quokka key rotation",
        MARKDOWN_ANSWER,
    )
    return [projects, root / "codex-sessions"]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus, indexed once for the module."""
    return index_once(tmp_path_factory.mktemp("web-corpus"), _write_corpus)


@pytest.fixture
def corpus(indexed: Path, home: Path, config: Config) -> Config:
    """HillviewCap's sessions, a live Claude Code session with subagents, a Codex rollout, an answer in
    Markdown, indexed (a copy of the module's store, this test's own); and a mirror received from the
    computer `laptop` whose title is hostile HTML."""
    copy_store(indexed, home)
    conn = connect(config.db_path)
    try:
        mirror = build_mirror(conn, SUBAGENT_SESSION)
        assert mirror is not None
        received = mirror.replace(session_id=MIRRORED, computer="laptop", title=HOSTILE)
        store_mirror(conn, received)
        conn.commit()
    finally:
        conn.close()
    return config


@pytest.fixture
def web(corpus: Config) -> Iterator[Browser]:
    server = WebServer(corpus)
    server.start()
    try:
        yield Browser(server)
    finally:
        server.stop()
