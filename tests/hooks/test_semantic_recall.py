"""Prompt-time recall by meaning: the warm server (model loaded) adds turns that say the same in other
words or another language; the cold path stays lexical; the asking session is never recalled."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from memex.api import Memex
from memex.config import load_config
from memex.embed.worker import drain, worker_lock
from memex.hooks import warm
from memex.ingest.indexer import discover, index_transcripts
from memex.store.db import connect, connect_existing
from transcripts import ClaudeSession, simple_turn

pytestmark = [pytest.mark.model]

POOL_SESSION = "aaaa0000-1111-2222-3333-444444444444"
PROMPT = "the integration tests hang again, is the database connection pool exhausted?"


@pytest.fixture
def config(home: Path, tmp_path: Path):
    root = tmp_path / "claude-projects" / "-home-dev-shop"
    pool = ClaudeSession(root / f"{POOL_SESSION}.jsonl", POOL_SESSION)
    simple_turn(
        pool, "集成测试一直卡住，查了半天，原来是数据库连接池耗尽了。", "已将连接池大小调整为 50，测试不再卡住。"
    )
    simple_turn(pool, "好的", "不客气。")
    css = ClaudeSession(root / "bbbb0000-1111-2222-3333-444444444444.jsonl", "bbbb0000-1111-2222-3333-444444444444")
    simple_turn(css, "The sidebar overlaps the footer on narrow screens", "Switched the layout to CSS grid.")
    simple_turn(css, "ok", "Done.")
    config = load_config()
    conn = connect(config.db_path)
    index_transcripts(conn, config, discover({"claude": [root.parent]}))
    with worker_lock(config.home):
        drain(conn, config)
    conn.close()
    return config


def _recall(config, request: dict, semantic: bool) -> tuple[str, int]:
    conn = connect_existing(config.db_path, 1000)
    assert conn is not None
    try:
        recalled = Memex(config, conn).recall(
            request["prompt"],
            session_id=request.get("session_id"),
            project_dir=request.get("project_dir"),
            semantic=semantic,
        )
        return recalled.text, recalled.hits
    finally:
        conn.close()


def test_meaning_recalls_a_turn_in_another_language_and_only_from_other_sessions(config) -> None:
    request = {"prompt": PROMPT, "session_id": "cccc0000-new", "project_dir": "/home/dev/shop"}
    assert _recall(config, request, semantic=False) == ("", 0)  # no shared word
    text, hits = _recall(config, request, semantic=True)
    assert hits == 1 and POOL_SESSION[:8] in text and "连接池" in text and "bbbb0000" not in text
    own = {**request, "session_id": POOL_SESSION}
    assert _recall(config, own, semantic=True) == ("", 0)
    unrelated = {**request, "prompt": "what is the capital of Australia and its population"}
    assert _recall(config, unrelated, semantic=True) == ("", 0)


def test_the_warm_server_recalls_by_meaning(config) -> None:
    server = warm.WarmServer(config, idle_seconds=60)
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 15
        while warm.ask(config, "ping", {}).answer is None and time.monotonic() < deadline:
            time.sleep(0.05)
        reply = warm.ask(config, "recall", {"prompt": PROMPT, "session_id": "x", "project_dir": "/home/dev/shop"})
        assert reply.answer is not None and reply.answer["hits"] == 1 and POOL_SESSION[:8] in reply.answer["text"]
    finally:
        server.stopping.set()
        thread.join(10)
