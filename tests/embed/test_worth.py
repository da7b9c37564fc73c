"""Fewer model calls per useful vector: a text of filler gets no vector, a chunk whose text the turn's
own embedded text holds reads as the turn (it shares the turn's vector, computed once), a chunk's
vector reads only what no other vector of its turn reads, and of that only language, within a budget;
words still find all of it."""

from __future__ import annotations

import os
import re
from itertools import pairwise
from pathlib import Path

from memex.config import load_config
from memex.embed.texts import CHUNK_BUDGET, UNBOUNDED, chunk_unread_texts, embed_texts, turn_embed_text
from memex.embed.worker import drain, pending_count, worker_lock
from memex.embed.worth import has_meaning, is_language, language_lines
from memex.ingest.indexer import discover, index_transcripts
from memex.search.lexical import search_chunks
from memex.store.queries import Filters
from transcripts import ClaudeSession, simple_turn


def test_filler_has_no_meaning_and_any_content_word_has() -> None:
    for filler in ("ok", "OK!", "Thanks, you're welcome.", "Done.", "好的", "yes please, go ahead", "  "):
        assert not has_meaning(filler), filler
    for meaning in ("ok, merge PR 42", "Done: fixed the login redirect", "好的，把连接池调大", "thanks Caroline", "v2"):
        assert has_meaning(meaning), meaning


def test_a_turn_of_filler_gets_no_vector_and_leaves_no_job(conn, config, tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-home-dev-shop"
    session = ClaudeSession(root / "aaaa0000-1111-2222-3333-444444444444.jsonl", "aaaa0000-1111-2222-3333-444444444444")
    simple_turn(session, "The login redirect loops after the token refresh", "Fixed the refresh guard in auth.py.")
    simple_turn(session, "ok", "Done.")
    simple_turn(session, "thanks", "You're welcome.")
    index_transcripts(conn, config, discover({"claude": [root.parent]}))
    with worker_lock(config.home):
        drain(conn, config)
    assert pending_count(conn) == 0
    embedded = {
        r[0]
        for r in conn.execute(
            "SELECT t.prompt_text FROM vectors v JOIN turns t ON t.id = v.owner_id WHERE v.level = 'turn'"
        )
    }
    assert any("login redirect" in (prompt or "") for prompt in embedded)
    assert not {"ok", "thanks"} & {(prompt or "").strip() for prompt in embedded}


def test_a_chunk_held_by_its_turns_text_reads_as_the_turn(conn, tmp_path: Path) -> None:
    config = load_config({**os.environ, "MEMEX_EMBED_TURN_MAX_CHARS": "1200"})  # a turn that holds 3 chunks
    root = tmp_path / "projects" / "-home-dev-shop"
    session = ClaudeSession(root / "bbbb0000-1111-2222-3333-444444444444.jsonl", "bbbb0000-1111-2222-3333-444444444444")
    # Many short tokens (punctuation counts): several chunks, yet a text short enough for the turn to hold.
    body = " ".join(f"a.b({i})" for i in range(120))
    simple_turn(session, "Trace these calls", body)
    index_transcripts(conn, config, discover({"claude": [root.parent]}))
    turn_id, full_text, tool_summary = conn.execute("SELECT id, full_text, tool_summary FROM turns").fetchone()
    chunk_ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE turn_id = ?", (turn_id,))]
    assert len(chunk_ids) > 1 and len(full_text) <= config.embed_turn_max_chars
    texts = embed_texts(conn, "chunk", chunk_ids, config)
    assert set(texts.values()) == {turn_embed_text(full_text, tool_summary, config)}
    with worker_lock(config.home):
        report = drain(conn, config)
    assert report.by_level.get("chunk", 0) == 0 and report.reused >= len(chunk_ids)
    vectors = {r[0] for r in conn.execute("SELECT embedding FROM vectors WHERE level IN ('turn', 'chunk')")}
    assert len(vectors) == 1  # one vector, computed once, shared


def _one_turn(conn, config, tmp_path: Path, session_id: str, body: str) -> tuple[int, str, str, list]:
    """Index one turn whose answer is `body`: (turn id, its text, its tool summary, its chunks' ids and contents)."""
    root = tmp_path / "projects" / "-home-dev-shop"
    simple_turn(ClaudeSession(root / f"{session_id}.jsonl", session_id), "Describe the migration plan", body)
    index_transcripts(conn, config, discover({"claude": [root.parent]}))
    turn_id, full_text, tool_summary = conn.execute("SELECT id, full_text, tool_summary FROM turns").fetchone()
    chunks = conn.execute("SELECT id, content FROM chunks WHERE turn_id = ? ORDER BY chunk_index", (turn_id,))
    return turn_id, full_text, tool_summary, chunks.fetchall()


def test_lines_of_language_are_told_from_code_logs_and_data() -> None:
    for line in (
        "Fixed the login redirect loop after the token refresh.",
        "- [ ] Written for non-technical stakeholders",
        "+ // Clear all mocks between tests",
        "## Phase Structure",
        "好的，把连接池调大一点",
    ):
        assert is_language(line), line
    for line in (
        "+ } else if (cmd.includes('diff --name-status')) {",
        "expect(result.markdown).toContain('commit 1 title');",
        '{"retries": 3, "timeoutMs": 2500, "endpoint": "/api/v2/orders"}',
        "src/memex/embed/texts.py src/memex/embed/worth.py tests/embed/test_worth.py",
        "2026-03-01T10:22:03Z ERROR pool.acquire timeout=30s conn_id=0x7f3a",
        "```",
        "  5 5 │ import type { Route } from './+types/auth.debug';",
    ):
        assert not is_language(line), line


def test_a_chunk_of_code_gets_no_vector_of_its_own_yet_its_words_find_it(conn, config, tmp_path: Path) -> None:
    code = "\n".join(f"    retryBackoff{i} = computeJitter(attempt_{i}, base_ms={i * 50});" for i in range(400))
    body = f"Here is the new retry module.\n```python\n{code}\n```\nThat is the whole change."
    session_id = "dddd0000-1111-2222-3333-444444444444"
    turn_id, full_text, tool_summary, chunks = _one_turn(conn, config, tmp_path, session_id, body)
    assert len(chunks) > 3
    turn_text = turn_embed_text(full_text, tool_summary, config)
    texts = embed_texts(conn, "chunk", [c[0] for c in chunks], config)
    assert set(texts.values()) == {turn_text}  # every chunk shares the turn's vector
    with worker_lock(config.home):
        report = drain(conn, config)
    assert report.by_level.get("chunk", 0) == 0
    middle = "retryBackoff200"
    assert middle not in turn_text
    hits = search_chunks(conn, middle, Filters(), limit=5)
    assert [hit.turn_id for hit in hits] == [turn_id]


def test_a_long_turn_has_a_bounded_number_of_chunk_vectors_reading_its_language(conn, config, tmp_path: Path) -> None:
    paragraphs = [
        f"Step {i} moves the {noun} records to the staging shelf before the nightly export runs.\n"
        f"    shelf.move(batch_{i}, target='staging', retries={i})"
        for i, noun in zip(range(200), ["invoice", "customer", "order", "refund"] * 50, strict=False)
    ]
    _, full_text, tool_summary, chunks = _one_turn(
        conn, config, tmp_path, "eeee0000-1111-2222-3333-444444444444", "\n".join(paragraphs)
    )
    assert len(chunks) > CHUNK_BUDGET.per_turn + 2
    turn_text = turn_embed_text(full_text, tool_summary, config)
    texts = embed_texts(conn, "chunk", [c[0] for c in chunks], config)
    own = [text for text in texts.values() if text != turn_text]
    assert len(own) == CHUNK_BUDGET.per_turn
    for text in own:
        assert len(text) <= CHUNK_BUDGET.read_chars
        assert "shelf.move(" not in text and "staging shelf" in text  # the prose of the middle, not the code
        assert "Step 0 moves" not in text and "Step 199 moves" not in text  # the turn's vector reads those
    # Unbounded (the rule before the budget), every chunk of the middle reads its whole new text.
    unbounded = chunk_unread_texts([c[1] for c in chunks], full_text, tool_summary, config, UNBOUNDED)
    assert sum(text is not None for text in unbounded) >= len(chunks) - 2
    assert any("shelf.move(" in (text or "") for text in unbounded)
    assert language_lines("a = 1\nThe export runs nightly at two.\n}") == "The export runs nightly at two."


def test_a_chunk_vector_reads_only_what_no_other_vector_of_its_turn_reads(conn, tmp_path: Path) -> None:
    config = load_config({**os.environ, "MEMEX_EMBED_TURN_MAX_CHARS": "1200"})  # its ends cut between words
    body = " ".join(f"Step {i} moves widget{i} to the staging shelf." for i in range(200))
    session_id = "cccc0000-1111-2222-3333-444444444444"
    _, full_text, tool_summary, chunks = _one_turn(conn, config, tmp_path, session_id, body)
    assert len(chunks) > 3
    turn_text = turn_embed_text(full_text, tool_summary, config)
    unread = chunk_unread_texts([c[1] for c in chunks], full_text, tool_summary, config, UNBOUNDED)
    own = [text for text in unread if text]
    assert len(own) >= len(chunks) - 2  # the middle of a long turn has vectors of its own
    # Neither the start nor the end of the turn (its vector reads them) nor a chunk's overlap with the one
    # before it is read twice.
    assert not any("Step 0 moves" in text or "Step 199 moves" in text for text in own)
    for before, after in pairwise(own):
        assert before[-40:] not in after
    # Every step is read by some vector of the turn.
    read = turn_text + " ".join(own)
    assert all(re.search(rf"widget{i}\b", read) for i in range(200))


def test_a_chunk_the_turn_vector_mostly_reads_shares_it(conn, config, tmp_path: Path) -> None:
    body = " ".join(f"Step {i} moves the invoice records to the staging shelf tonight." for i in range(41))
    _, full_text, tool_summary, chunks = _one_turn(conn, config, tmp_path, "ffff0000-1111-2222-3333-444444444444", body)
    assert len(chunks) == 2
    contents = [c[1] for c in chunks]
    # Under the rule before the budget (a quarter of its own text), the last chunk had a vector of its own,
    # though the turn's vector and the chunk before read most of it.
    unbounded = chunk_unread_texts(contents, full_text, tool_summary, config, UNBOUNDED)
    assert unbounded[1] and UNBOUNDED.min_share * len(contents[1]) <= len(unbounded[1]) < len(contents[1]) / 2
    # Now, with less than half of its text its own, it shares the turn's vector; the first chunk keeps its own.
    unread = chunk_unread_texts(contents, full_text, tool_summary, config)
    assert CHUNK_BUDGET.min_share == 0.5
    assert unread[0] and unread[1] is None
    turn_text = turn_embed_text(full_text, tool_summary, config)
    assert embed_texts(conn, "chunk", [chunks[1][0]], config) == {chunks[1][0]: turn_text}
