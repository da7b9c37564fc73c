"""Fixtures of the sync tests: a real Redis, a key prefix per test, and computers sharing it."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from synctools import REDIS_URL, Computer, RedisServer, _pings, drop_prefix


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The machine's Redis (127.0.0.1:6379); without one, a redis-server started for the test session."""
    if _pings(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)):
        yield REDIS_URL
        return
    if shutil.which("redis-server") is None:
        pytest.skip("no Redis at 127.0.0.1:6379 and no redis-server to start")
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server.url
    server.stop()


@pytest.fixture
def prefix(redis_url: str) -> Iterator[str]:
    """A key prefix no other test uses; its keys are deleted at the end."""
    name = f"memex-test-{uuid.uuid4().hex[:12]}"
    yield name
    drop_prefix(redis_url, name)


@pytest.fixture
def computers(tmp_path: Path, redis_url: str, prefix: str) -> Iterator[Callable[..., Computer]]:
    """Make computers sharing this test's Redis prefix: `computers("alpha")`; their daemons are closed at
    the end."""
    made: list[Computer] = []

    def make(name: str, url: str | None = None, **settings: Any) -> Computer:
        computer = Computer(tmp_path / name, name, redis_url if url is None else url, prefix, **settings)
        made.append(computer)
        return computer

    yield make
    for computer in made:
        computer.stop()
