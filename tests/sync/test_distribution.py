"""Mirrors travel between computers through one Redis: searchable elsewhere, replaced not duplicated,
caught up by a computer that was away or joins late, idempotent under repeated delivery."""

from __future__ import annotations

import json
from pathlib import Path

import redis

from memex.store.db import connect, transaction
from memex.sync.inbox import apply_payloads
from memex.sync.keys import Keys
from synctools import CODEX_SHORT, GEMINI_LEGACY, HILLVIEW, SLAY, settle, slay_shared
from transcripts import ClaudeSession, simple_turn

SLAY_ID = SLAY.stem


def search(computer, *words: str) -> list[dict]:
    result = computer.cli("search", *words, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_session_ingested_on_a_is_searchable_on_b(computers) -> None:
    _, b = slay_shared(computers)
    hits = search(b, "slay")
    mine = [h for h in hits if h["session_id"] == SLAY_ID]
    assert mine and mine[0]["source"] == "mirror" and mine[0]["computer"] == "alpha"
    shown = b.cli("show", SLAY_ID[:8])
    assert shown.exit_code == 0 and "on alpha" in shown.stdout
    # B's own sessions are B's; nothing of A's is stored as B's.
    assert set(b.mirrors("beta")) == set()


def test_three_computers_each_see_the_others(computers) -> None:
    a, b, c = computers("alpha"), computers("beta"), computers("gamma")
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    b.add_claude(HILLVIEW / "155715ec-f4e9-47ea-859c-2e4cfcceab6f.jsonl")
    target = c.codex_dir / "2025/11/13" / CODEX_SHORT.name
    target.parent.mkdir(parents=True)
    target.write_bytes(CODEX_SHORT.read_bytes())
    gemini = c.gemini_dir / GEMINI_LEGACY.parent.parent.name / "chats" / GEMINI_LEGACY.name
    gemini.parent.mkdir(parents=True)
    gemini.write_bytes(GEMINI_LEGACY.read_bytes())
    for computer in (a, b, c):
        computer.start()
    settle(a, b, c)
    owners = {
        name: {m["computer"] for m in computer.mirrors().values()}
        for name, computer in (("alpha", a), ("beta", b), ("gamma", c))
    }
    assert owners == {name: {"alpha", "beta", "gamma"} for name in owners}
    agents = {m["agent"] for m in a.mirrors("gamma").values()}
    assert agents == {"codex", "gemini"}
    codex_hits = search(a, "--agent", "codex", "the")
    assert codex_hits and {h["agent"] for h in codex_hits} == {"codex"}


def test_an_update_on_a_replaces_the_mirror_on_b(computers) -> None:
    a, b = computers("alpha", mirror_idle_seconds=300), computers("beta")
    path = a.claude_dir / "-home-dev-shop" / "aaaaaaaa-1111-2222-3333-444444444444.jsonl"
    session = ClaudeSession(path, path.stem)
    simple_turn(session, "how do I rotate the nginx logs", "use logrotate with copytruncate")
    a.start()
    b.start()
    settle(a, b)
    assert "logrotate" in b.mirrors("alpha")[path.stem]["conversation_text"]
    first_update = b.mirrors("alpha")[path.stem]["updated_at"]

    simple_turn(session, "and the zebrafish retention policy", "keep fourteen rotated files")
    a.clock.advance(1)
    a.step()  # the scan sees the change; the debounce holds it
    a.clock.advance(a.config.daemon_debounce_seconds)
    assert a.step().ingested == 1
    settle(a, b)
    assert "zebrafish" not in b.mirrors("alpha")[path.stem]["conversation_text"]  # the session is still active
    a.clock.advance(a.config.mirror_idle_seconds)
    settle(a, b)
    mirrors = b.mirrors("alpha")
    assert len(mirrors) == 1
    assert "zebrafish" in mirrors[path.stem]["conversation_text"] and mirrors[path.stem]["updated_at"] > first_update
    hits = [h for h in search(b, "zebrafish") if h["session_id"] == path.stem]
    assert len(hits) == 1


def _many_sessions(root: Path, count: int) -> None:
    for n in range(count):
        session_id = f"{n:08d}-aaaa-bbbb-cccc-dddddddddddd"
        session = ClaudeSession(root / "-home-dev-bulk" / f"{session_id}.jsonl", session_id, cwd="/home/dev/bulk")
        simple_turn(session, f"question number {n} about the quokka pipeline", f"answer {n}: restart the worker")


def test_b_offline_while_a_publishes_500_then_catches_up(computers) -> None:
    a, b = computers("alpha"), computers("beta")
    b.start()
    b.step()  # B has joined: its consumer group exists
    b.stop()
    _many_sessions(a.claude_dir, 500)
    a.start()
    settle(a)
    assert len(a.mirrors("alpha")) == 500
    b.start()
    settle(b)
    assert len(b.mirrors("alpha")) == 500
    assert b.daemon is not None and b.daemon.consumer.caught_up == 0  # all of it came through the stream


def test_a_late_joiner_catches_up_after_the_stream_was_trimmed(computers, redis_url: str, prefix: str) -> None:
    a = computers("alpha", stream_max_entries=50)
    _many_sessions(a.claude_dir, 500)
    a.start()
    settle(a)
    client = redis.Redis.from_url(redis_url)
    assert client.xlen(Keys(prefix).stream) < 500  # trimmed
    b = computers("beta")
    b.start()
    settle(b)
    assert len(b.mirrors("alpha")) == 500
    assert b.daemon is not None and b.daemon.consumer.caught_up == 500


def test_a_computer_away_longer_than_the_stream_keeps_catches_up(computers, redis_url: str, prefix: str) -> None:
    a, b = computers("alpha", stream_max_entries=50), computers("beta")
    b.start()
    b.step()
    b.stop()
    _many_sessions(a.claude_dir, 500)
    a.start()
    settle(a)
    b.start()
    settle(b)
    assert len(b.mirrors("alpha")) == 500


def test_duplicate_deliveries_are_idempotent(computers, redis_url: str, prefix: str) -> None:
    _, b = slay_shared(computers)
    before = b.mirrors()
    keys = Keys(prefix)
    client = redis.Redis.from_url(redis_url)
    payload = client.hget(keys.latest("alpha"), SLAY_ID)
    # The same entry published again (a sender that crashed before its commit), several times.
    for _ in range(3):
        client.xadd(keys.stream, {"computer": "alpha", "session_id": SLAY_ID, "mirror": payload})
    settle(b)
    assert b.mirrors() == before
    # Applied directly, repeatedly: nothing written.
    conn = connect(b.config.db_path)
    assert apply_payloads(conn, [payload, payload], "beta") == 0
    count = conn.execute("SELECT count(*) FROM mirrors_fts WHERE mirrors_fts MATCH 'slay'").fetchone()[0]
    assert count == 1
    conn.close()


def test_an_older_version_never_replaces_a_newer_one(computers, redis_url: str, prefix: str) -> None:
    a, b = computers("alpha"), computers("beta")
    path = a.claude_dir / "-home-dev-shop" / "bbbbbbbb-1111-2222-3333-444444444444.jsonl"
    session = ClaudeSession(path, path.stem)
    simple_turn(session, "first question about the walrus cache", "first answer")
    a.start()
    b.start()
    settle(a, b)
    client = redis.Redis.from_url(redis_url)
    old_payload = client.hget(Keys(prefix).latest("alpha"), path.stem)
    simple_turn(session, "second question about the narwhal queue", "second answer")
    a.stop()
    a.start()  # a restart: the changed session is indexed and published at once
    settle(a, b)
    assert "narwhal" in b.mirrors("alpha")[path.stem]["conversation_text"]
    # The old version arrives late (a slow path, a replay): the newer one stays.
    client.xadd(Keys(prefix).stream, {"computer": "alpha", "session_id": path.stem, "mirror": old_payload})
    settle(b)
    assert "narwhal" in b.mirrors("alpha")[path.stem]["conversation_text"]


def test_unreadable_entries_are_skipped_and_acknowledged(computers, redis_url: str, prefix: str) -> None:
    b = computers("beta")
    b.start()
    b.step()
    client = redis.Redis.from_url(redis_url)
    keys = Keys(prefix)
    client.xadd(keys.stream, {"computer": "mallory", "session_id": "x", "mirror": b"not zlib"})
    client.xadd(keys.stream, {"computer": "mallory"})
    settle(b)
    assert b.mirrors() == {}
    group = next(g for g in client.xinfo_groups(keys.stream) if g["name"] == b"beta")
    assert group["pending"] == 0


def test_stored_mirrors_survive_a_local_rebuild_of_the_row(computers) -> None:
    """A received mirror is a row like any other: a transaction on B's store sees it whole."""
    _, b = slay_shared(computers)
    conn = connect(b.config.db_path)
    with transaction(conn):
        row = conn.execute("SELECT metadata FROM mirrors WHERE computer = 'alpha'").fetchone()
    assert json.loads(row["metadata"])["messages"]
    conn.close()


def test_a_stream_trimmed_to_nothing_loses_nothing(computers, redis_url: str, prefix: str) -> None:
    a, b = computers("alpha"), computers("beta")
    b.start()
    b.step()
    b.stop()
    _many_sessions(a.claude_dir, 30)
    a.start()
    settle(a)
    client = redis.Redis.from_url(redis_url)
    client.xtrim(Keys(prefix).stream, maxlen=0, approximate=False)
    assert client.xlen(Keys(prefix).stream) == 0
    b.start()
    settle(b)
    assert len(b.mirrors("alpha")) == 30
