"""`memex forget` travels: the other computers drop their mirrors, a late joiner never gets them, and the
computer a session ran on forgets it when another computer asks."""

from __future__ import annotations

import json

from click.testing import CliRunner

from memex.cli.main import cli
from memex.store.db import connect
from synctools import SLAY, RedisServer, free_port, settle, slay_shared

SLAY_ID = SLAY.stem
HILLVIEW = SLAY.parents[2] / "hillview" / "-home-jenkins-Personal-AI-Infrastructure"
OTHER = HILLVIEW / "98098c74-435a-42ec-ad08-ae58c7559232.jsonl"


def _forget(computer, *args: str, **env: str) -> dict:
    result = CliRunner().invoke(
        cli, ["forget", *args, "--yes", "--json"], env={**computer.env, **env}, catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _sessions(computer) -> set[str]:
    conn = connect(computer.config.db_path)
    try:
        return {r[0] for r in conn.execute("SELECT session_id FROM sessions")}
    finally:
        conn.close()


def test_the_other_computers_drop_their_mirrors_and_a_late_joiner_never_gets_them(computers) -> None:
    a, b = slay_shared(computers)
    assert SLAY_ID in b.mirrors("alpha")
    report = _forget(a, SLAY_ID[:8])
    assert report["sessions"] == 1 and report["published"] == 1 and report["note"] is None
    settle(a, b)
    assert SLAY_ID not in b.mirrors() and SLAY_ID not in a.mirrors()
    hits = json.loads(b.cli("search", "slay", "--json").stdout)
    assert all(hit["session_id"] != SLAY_ID for hit in hits)
    c = computers("gamma")  # joins later: catches up from the latest mirrors, which no longer hold it
    c.start()
    settle(a, b, c)
    assert SLAY_ID not in c.mirrors()


def test_a_computer_that_was_away_learns_of_it_after_the_stream_entry_is_gone(computers, redis_url, prefix) -> None:
    a, b = computers("alpha"), computers("beta", stream_max_entries=1)
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    a.start()
    b.start()
    settle(a, b)
    b.stop()  # away
    _forget(a, SLAY_ID[:8])
    import redis

    client = redis.Redis.from_url(redis_url)
    client.xtrim(f"{prefix}:mirrors", maxlen=0, approximate=False)  # the forgetting's entry trimmed while beta was away
    client.close()
    assert SLAY_ID in b.mirrors()
    b.start()
    settle(a, b)
    assert SLAY_ID not in b.mirrors()


def test_forgetting_another_computers_session_makes_it_forget_it(computers) -> None:
    a, b = slay_shared(computers)
    report = _forget(b, SLAY_ID[:8])  # asked on beta, which only holds alpha's mirror
    assert report["forgotten"][0]["computer"] == "alpha" and not report["forgotten"][0]["local"]
    assert SLAY_ID not in b.mirrors()
    settle(a, b)
    assert SLAY_ID not in _sessions(a) and SLAY_ID not in a.mirrors()
    assert not (a.home / "archive" / "claude" / SLAY_ID).exists()
    assert json.loads(a.cli("index", "--json").stdout)["sessions"] == 0  # the transcript is still there: skipped
    assert SLAY_ID not in _sessions(a)


def test_redis_away_the_daemon_tells_the_others_later(computers) -> None:
    a, b = slay_shared(computers)
    report = _forget(a, SLAY_ID[:8], MEMEX_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0")
    assert report["published"] == 0 and "unreachable" in report["note"]
    assert SLAY_ID in b.mirrors()
    settle(a, b)  # alpha's daemon reaches Redis: it publishes what the command could not
    assert SLAY_ID not in b.mirrors()


def _stream_mirrors(redis_url: str, prefix: str) -> list[tuple[str, str]]:
    """The (computer, session) of every mirror the stream still carries, read raw from Redis."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        entries = client.xrange(f"{prefix}:mirrors")
    finally:
        client.close()
    return [(f[b"computer"].decode(), f[b"session_id"].decode()) for _, f in entries if b"mirror" in f]


def test_the_forgotten_conversation_leaves_the_stream_too(computers, redis_url, prefix) -> None:
    """The stream's entries carried the whole conversation (all of it a reader of the stream could get
    until `stream_max_entries` newer entries pushed them out): forgetting deletes them, as it deletes the
    latest-mirror hash's field, and leaves every other session's."""
    a, b = computers("alpha"), computers("beta")
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    a.add_claude(OTHER, "-home-jenkins-Personal-AI-Infrastructure")
    a.start()
    b.start()
    settle(a, b)
    before = _stream_mirrors(redis_url, prefix)
    assert ("alpha", SLAY_ID) in before
    _forget(b, SLAY_ID[:8])  # asked on beta, which only holds alpha's mirror
    settle(a, b)
    after = _stream_mirrors(redis_url, prefix)
    assert all(session != SLAY_ID for _, session in after)
    assert [m for m in before if m[1] != SLAY_ID] == after


def test_one_publication_drops_the_mirrors_of_every_forgetting_it_carries(tmp_path) -> None:
    """Forgettings published together (sessions of two computers and one whole computer) delete exactly
    the stream entries of their mirrors, and no other computer's or session's, in one pass over the stream
    (a Redis of the test's own counts the reads: before, each forgetting read the whole stream)."""
    import redis

    from memex.store.forget import add_tombstone, unpublished_tombstones
    from memex.sync.forgets import publish
    from memex.sync.keys import Keys

    server = RedisServer(tmp_path / "redis")
    server.start()
    keys = Keys("memex")
    client = redis.Redis.from_url(server.url)
    stream = [(computer, f"s{n}") for computer in ("alpha", "beta", "gamma", "delta") for n in range(3)]
    for computer, session in stream * 2:  # each mirror published twice: both entries go
        client.xadd(keys.stream, {"mirror": "{}", "computer": computer, "session_id": session})
    client.xadd(keys.stream, {"computer": "alpha", "kind": "heartbeat", "session_id": "s0"})  # not a mirror
    conn = connect(tmp_path / "memex.db")
    for session, owner in (("s0", "alpha"), ("s2", "alpha"), ("s1", "beta"), ("*", "gamma")):
        add_tombstone(conn, session, owner, "here", "2026-11-24T00:00:00Z", published=False)
    conn.commit()
    try:
        client.config_resetstat()
        assert publish(conn, client, keys, "here", max_len=10_000) == 4
        assert client.info("commandstats")["cmdstat_xrange"]["calls"] == 1
        left = [
            (f[b"computer"].decode(), f[b"session_id"].decode())
            for _, f in client.xrange(keys.stream)
            if b"mirror" in f
        ]
        kept = [("alpha", "s1"), ("beta", "s0"), ("beta", "s2"), ("delta", "s0"), ("delta", "s1"), ("delta", "s2")]
        assert sorted(left) == sorted(kept * 2)
        assert any(b"kind" in f and f[b"kind"] == b"heartbeat" for _, f in client.xrange(keys.stream))
        assert unpublished_tombstones(conn) == []
    finally:
        conn.close()
        client.close()
        server.stop()
