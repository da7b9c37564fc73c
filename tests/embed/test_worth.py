"""Fewer model calls per useful vector: a text of filler gets no vector, a chunk whose text the turn's
own embedded text holds reads as the turn (it shares the turn's vector, computed once), and a chunk's
vector reads only what no other vector of its turn reads."""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

from memex.embed.texts import embed_texts, turn_embed_text
from memex.embed.worker import drain, pending_count, worker_lock
from memex.embed.worth import has_meaning
from memex.ingest.indexer import discover, index_transcripts
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


def test_a_chunk_held_by_its_turns_text_reads_as_the_turn(conn, config, tmp_path: Path) -> None:
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


def test_a_chunk_vector_reads_only_what_no_other_vector_of_its_turn_reads(conn, config, tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-home-dev-shop"
    session = ClaudeSession(root / "cccc0000-1111-2222-3333-444444444444.jsonl", "cccc0000-1111-2222-3333-444444444444")
    body = " ".join(f"Step {i} moves widget{i} to the staging shelf." for i in range(200))
    simple_turn(session, "Describe the migration plan", body)
    index_transcripts(conn, config, discover({"claude": [root.parent]}))
    turn_id, full_text, tool_summary = conn.execute("SELECT id, full_text, tool_summary FROM turns").fetchone()
    chunks = conn.execute(
        "SELECT id, content FROM chunks WHERE turn_id = ? ORDER BY chunk_index", (turn_id,)
    ).fetchall()
    assert len(chunks) > 3
    turn_text = turn_embed_text(full_text, tool_summary, config)
    texts = embed_texts(conn, "chunk", [c[0] for c in chunks], config)
    own = [texts[c[0]] for c in chunks if texts[c[0]] != turn_text]
    assert len(own) >= len(chunks) - 2  # the middle of a long turn has vectors of its own
    # Neither the start nor the end of the turn (its vector reads them) nor a chunk's overlap with the one
    # before it is read twice.
    assert not any("Step 0 moves" in text or "Step 199 moves" in text for text in own)
    for before, after in pairwise(own):
        assert before[-40:] not in after
    # Every step is read by some vector of the turn.
    read = turn_text + " ".join(own)
    assert all(re.search(rf"widget{i}\b", read) for i in range(200))
