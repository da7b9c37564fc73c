"""Redis unreachable, killed, restarted (with and without its data): nothing is lost, nothing crashes,
and the outage is logged once."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import redis

from memex.sync.keys import Keys
from synctools import RedisServer, free_port, settle
from transcripts import ClaudeSession, simple_turn


def write_sessions(root: Path, first: int, count: int, word: str = "capybara") -> list[str]:
    ids = []
    for n in range(first, first + count):
        session_id = f"{n:08d}-1111-2222-3333-444444444444"
        session = ClaudeSession(root / "-home-dev-ops" / f"{session_id}.jsonl", session_id, cwd="/home/dev/ops")
        simple_turn(session, f"{word} question {n}: why does the deploy hang", f"answer {n}: the lock file")
        ids.append(session_id)
    return ids


def outbox_size(computer) -> int:
    assert computer.daemon is not None
    return computer.daemon.conn.execute("SELECT count(*) FROM outbox").fetchone()[0]


def pass_until_idle(computer, seconds: float) -> None:
    """Passes while the fake clock moves `seconds` forward, one second at a time."""
    for _ in range(int(seconds)):
        computer.clock.advance(1)
        computer.step()


@pytest.fixture
def private_redis(tmp_path: Path):
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server
    server.stop()


def test_outbox_holds_mirrors_while_redis_is_down_and_a_restart_loses_nothing(
    computers, private_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Redis killed mid-stream and restarted empty (no persistence): the outbox keeps what could not be
    sent, and the new data generation makes every computer publish everything again."""
    caplog.set_level(logging.INFO, logger="memex")
    a = computers("alpha", url=private_redis.url)
    b = computers("beta", url=private_redis.url)
    before = write_sessions(a.claude_dir, 0, 30)
    a.start()
    b.start()
    settle(a, b)
    assert set(b.mirrors("alpha")) == set(before)

    private_redis.stop()
    during = write_sessions(a.claude_dir, 100, 20, word="okapi")
    pass_until_idle(a, a.config.daemon_debounce_seconds + 2)
    pass_until_idle(a, a.config.mirror_idle_seconds + 30)  # the sessions close while Redis is away
    pass_until_idle(b, 30)
    assert outbox_size(a) == 20
    assert a.step().waiting == 20

    private_redis.start()  # the same address, but empty
    a.clock.advance(a.config.redis_retry_seconds)
    b.clock.advance(b.config.redis_retry_seconds)
    settle(a, b)
    assert outbox_size(a) == 0
    assert set(b.mirrors("alpha")) == set(before) | set(during)
    assert len(b.mirrors("alpha")) == 50

    unreachable = [r for r in caplog.records if "unreachable" in r.getMessage()]
    back = [r for r in caplog.records if "reachable again" in r.getMessage()]
    assert len(unreachable) == 2  # once per computer, not once per pass
    assert len(back) == 2
    assert any("lost its data" in r.getMessage() for r in caplog.records)


def test_a_restart_that_keeps_the_data_resumes_pending_entries(computers, tmp_path: Path) -> None:
    """B read entries and died before committing them; Redis itself restarts (with its data). B's next
    start reads its pending entries again: every mirror arrives, none twice."""
    server = RedisServer(tmp_path / "redis-aof", persistent=True)
    server.start()
    try:
        a = computers("alpha", url=server.url)
        b = computers("beta", url=server.url)
        b.start()
        b.step()  # B's group exists
        ids = write_sessions(a.claude_dir, 0, 60)
        a.start()
        settle(a)
        keys = Keys(a.config.redis_prefix)
        client = redis.Redis.from_url(server.url)
        # What a B killed between its read and its commit leaves: entries delivered, never acknowledged.
        delivered = client.xreadgroup("beta", "beta", {keys.stream: ">"}, count=25)
        assert len(delivered[0][1]) == 25
        b.stop()
        group = next(g for g in client.xinfo_groups(keys.stream) if g["name"] == b"beta")
        assert group["pending"] == 25
        client.close()

        server.stop()
        server.start()  # the append-only file brings the stream, the group and its pending entries back
        b.start()
        settle(b)
        assert set(b.mirrors("alpha")) == set(ids)
        client = redis.Redis.from_url(server.url)
        group = next(g for g in client.xinfo_groups(keys.stream) if g["name"] == b"beta")
        assert group["pending"] == 0
        assert b.daemon is not None and b.daemon.consumer.caught_up == 0
        client.close()
    finally:
        server.stop()


def test_redis_killed_between_batches(computers, tmp_path: Path) -> None:
    """A sends its outbox in batches; Redis dies after the first: the rest waits, and goes once it is back."""
    server = RedisServer(tmp_path / "redis-aof", persistent=True)
    server.start()
    try:
        a = computers("alpha", url=server.url, sync_batch=20)
        b = computers("beta", url=server.url, sync_batch=20)
        b.start()
        b.step()
        ids = write_sessions(a.claude_dir, 0, 70)
        a.start()
        assert a.daemon is not None
        original = a.daemon._send
        calls = 0

        def send_then_die() -> int:
            nonlocal calls
            calls += 1
            from memex.sync import outbox

            link = a.daemon.link
            sent = outbox.send_batch(a.daemon.conn, link.redis, a.daemon.keys, "alpha", link.epoch, 20, 10_000)
            server.stop()
            return sent

        a.daemon._send = send_then_die  # type: ignore[method-assign]
        a.step()
        a.daemon._send = original  # type: ignore[method-assign]
        assert calls == 1 and outbox_size(a) == 50
        pass_until_idle(a, 10)
        assert outbox_size(a) == 50
        server.start()
        a.clock.advance(a.config.redis_retry_seconds)
        b.clock.advance(b.config.redis_retry_seconds)
        settle(a, b)
        assert set(b.mirrors("alpha")) == set(ids) and outbox_size(a) == 0
    finally:
        server.stop()


def test_the_daemon_runs_without_redis(computers, caplog: pytest.LogCaptureFixture) -> None:
    """Redis never there: the daemon indexes, serves local search, fills its outbox, logs the outage once."""
    caplog.set_level(logging.INFO, logger="memex")
    a = computers("alpha", url=f"redis://127.0.0.1:{free_port()}/0")
    write_sessions(a.claude_dir, 0, 3)
    a.start()
    pass_until_idle(a, 60)
    assert outbox_size(a) == 3
    hits = a.cli("search", "capybara", "--json")
    assert hits.exit_code == 0 and len(hits.stdout) > 10
    assert len([r for r in caplog.records if "unreachable" in r.getMessage()]) == 1


def test_without_redis_url_nothing_is_queued(computers) -> None:
    a = computers("alpha", url="")
    write_sessions(a.claude_dir, 0, 2)
    a.start()
    pass_until_idle(a, 10)
    assert outbox_size(a) == 0 and len(a.mirrors("alpha")) == 2


def test_a_redis_password_never_reaches_the_log(computers, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="memex")
    a = computers("alpha", url=f"redis://:hunter2hunter2@127.0.0.1:{free_port()}/0")
    a.start()
    a.step()
    assert "hunter2" not in caplog.text and "redis://:***@127.0.0.1" in caplog.text
    listing = a.cli("computers", "--json")
    assert "hunter2" not in listing.output
