"""Helpers of the sync tests: "computers" (separate MEMEX_HOMEs and agent folders, distinct names, one
real Redis with a key prefix of the test's own, daemons driven in-process with a fake clock), a Redis
server of a test's own, polling."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis
from click.testing import CliRunner, Result

from agent_dirs import OTHER_AGENT_DIRS
from memex.cli.main import cli
from memex.config import Config, load_config
from memex.store.db import connect
from memex.sync.daemon import Daemon, PassReport

FIXTURES = Path(__file__).parent / "fixtures"
SLAY = FIXTURES / "claude" / "slay" / "-Users-chloe-c-slay" / "2969822b-3c7d-47bd-8814-4bc86f67056a.jsonl"
HILLVIEW = FIXTURES / "claude" / "hillview" / "-home-jenkins-Personal-AI-Infrastructure"
CODEX_SHORT = next((FIXTURES / "codex" / "sessions" / "2025" / "11" / "13").glob("rollout-*.jsonl"))
GEMINI_LEGACY = (
    FIXTURES
    / "gemini"
    / "tmp"
    / "616b7ef4d9a23f3c7c27f4058a52f106bc7c0e392e4a737efe77d5b9108d4f08"
    / "chats"
    / "session-2025-09-01T10-00-abcd1234.json"
)
REDIS_URL = os.environ.get("MEMEX_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
TOKEN = "test-token-" + "x" * 24


def wait_until(condition: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll `condition` until it is truthy (returned) or `timeout` passes (AssertionError)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RedisServer:
    """A redis-server of the test's own on a free port, to stop and restart at will."""

    def __init__(self, folder: Path, persistent: bool = False) -> None:
        self.folder = folder
        self.port = free_port()
        self.persistent = persistent
        self.process: subprocess.Popen[bytes] | None = None
        folder.mkdir(parents=True, exist_ok=True)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--dir"]
        self.process = subprocess.Popen(
            [*command, str(self.folder), *persistence],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port)
        wait_until(lambda: _pings(client), timeout=10)
        client.close()

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


def drop_prefix(url: str, prefix: str) -> None:
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    except redis.RedisError:
        pass
    finally:
        client.close()


class FakeClock:
    """A clock that moves only when told to (starts at the real time)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Computer:
    """One computer: its MEMEX_HOME, agent folders and configuration; its daemon runs in-process."""

    def __init__(self, root: Path, name: str, redis_url: str, prefix: str, **settings: Any) -> None:
        self.name = name
        self.root = root
        self.home = root / "memex-home"
        self.claude_dir = root / "claude-projects"
        self.codex_dir = root / "codex-sessions"
        self.gemini_dir = root / "gemini-tmp"
        self.env = {
            "MEMEX_HOME": str(self.home),
            "MEMEX_COMPUTER": name,
            "MEMEX_CLAUDE_DIR": str(self.claude_dir),
            "MEMEX_CODEX_DIR": str(self.codex_dir),
            "MEMEX_GEMINI_DIR": str(self.gemini_dir),
            **{f"MEMEX_{name.upper()}": str(root / folder) for name, folder in OTHER_AGENT_DIRS.items()},
            "MEMEX_REDIS_URL": redis_url,
            "MEMEX_REDIS_PREFIX": prefix,
            "MEMEX_API_ADDRESS": "127.0.0.1:0",
            "MEMEX_API_TOKEN": TOKEN,
            "MEMEX_INDEX_WORKERS": "1",
            "MEMEX_INDEX_WARM": "0",  # every `memex index` walks: no warm server left behind
            "MEMEX_DAEMON_SCAN_SECONDS": "0",
            "MEMEX_REDIS_RETRY_SECONDS": "5",
        }
        self.env.update({f"MEMEX_{key.upper()}": str(value) for key, value in settings.items()})
        self.clock = FakeClock()
        self.daemon: Daemon | None = None

    @property
    def config(self) -> Config:
        return load_config(self.env)

    def start(self, serve_api: bool = False, **kwargs: Any) -> Daemon:
        self.daemon = Daemon(self.config, clock=self.clock, serve_api=serve_api, **kwargs)
        self.daemon.start()
        return self.daemon

    def stop(self) -> None:
        if self.daemon is not None:
            self.daemon.close()
            self.daemon = None

    def step(self) -> PassReport:
        assert self.daemon is not None, f"{self.name}'s daemon is not running"
        return self.daemon.run_once()

    def add_claude(self, source: Path, project: str = "-home-dev-shop") -> Path:
        """Copy a real Claude Code transcript into this computer's projects folder."""
        target = self.claude_dir / project / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
        return target

    def cli(self, *args: str) -> Result:
        """Run the memex CLI as this computer."""
        return CliRunner().invoke(cli, list(args), env=self.env, catch_exceptions=False)

    def mirrors(self, computer: str | None = None) -> dict[str, dict[str, Any]]:
        """session id -> stored mirror row (of `computer`'s sessions, or all)."""
        conn = connect(self.config.db_path)
        try:
            rows = conn.execute(
                "SELECT * FROM mirrors" + (" WHERE computer = ?" if computer else ""), (computer,) if computer else ()
            ).fetchall()
            return {row["session_id"]: dict(row) for row in rows}
        finally:
            conn.close()


def settle(*computers: Computer, passes: int = 200) -> None:
    """Run every computer's daemon pass after pass until none has anything left to do."""
    for _ in range(passes):
        busy = False
        for computer in computers:
            report = computer.step()
            busy |= bool(report.ingested or report.queued or report.sent or report.received)
        if not busy:
            return
    raise AssertionError("the daemons never settled")


def slay_shared(computers: Callable[..., Computer], serve_api: bool = False) -> tuple[Computer, Computer]:
    """alpha holding the slay session (serving its API with `serve_api`), and beta, which received its
    mirror: the pair most tests across computers start from."""
    a, b = computers("alpha"), computers("beta")
    a.add_claude(SLAY, "-Users-chloe-c-slay")
    a.start(serve_api=serve_api)
    b.start()
    settle(a, b)
    return a, b
