from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

from agent_dirs import OTHER_AGENT_DIRS
from corpus import HILLVIEW
from memex.cli.main import cli
from memex.config import Config, load_config
from memex.store.db import connect

# Property tests (Hypothesis): a modest number of examples keeps the suite fast; on CI (CI=true) the
# examples are derived from each test's name (the same every run) and no example database is written.
# MEMEX_HYPOTHESIS_PROFILE=thorough runs fifty times more, to hunt for new failures.
settings.register_profile(
    "memex", max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.register_profile("ci", parent=settings.get_profile("memex"), derandomize=True, database=None)
settings.register_profile("thorough", parent=settings.get_profile("memex"), max_examples=2_000)
_ON_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
settings.load_profile(os.environ.get("MEMEX_HYPOTHESIS_PROFILE") or ("ci" if _ON_CI else "memex"))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty MEMEX_HOME, with the agents' default folders pointed inside the test folder."""
    memex_home = tmp_path / "memex-home"
    monkeypatch.setenv("MEMEX_HOME", str(memex_home))
    monkeypatch.setenv("MEMEX_COMPUTER", "testbox")
    monkeypatch.setenv("MEMEX_INDEX_EMBEDS", "0")  # tests of embeddings drain the queue themselves
    # `memex index` runs over the warm server only in the tests of that (tests/ingest/test_live_index.py):
    # the others test the walk, and leave no server behind.
    monkeypatch.setenv("MEMEX_INDEX_WARM", "0")
    # A warm server on a loaded CPU may take longer than production's 2.5 s to answer its first request;
    # a test asserts what the answer is, not how fast it came (bench/hooks.py measures that).
    monkeypatch.setenv("MEMEX_WARM_READ_TIMEOUT_MS", "60000")
    monkeypatch.setenv("MEMEX_CLAUDE_DIR", str(tmp_path / "claude-projects"))
    monkeypatch.setenv("MEMEX_CODEX_DIR", str(tmp_path / "codex-sessions"))
    monkeypatch.setenv("MEMEX_GEMINI_DIR", str(tmp_path / "gemini-tmp"))
    for agent, folder in OTHER_AGENT_DIRS.items():  # never the real HOME's sessions
        monkeypatch.setenv(f"MEMEX_{agent.upper()}", str(tmp_path / folder))
    return memex_home


@pytest.fixture
def config(home: Path) -> Config:
    return load_config()


@pytest.fixture
def conn(config: Config):
    connection = connect(config.db_path)
    yield connection
    connection.close()


@pytest.fixture
def run(home: Path):
    """Run the memex CLI in-process; returns click's Result (stdout and stderr apart)."""
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(cli, list(args), input=input, catch_exceptions=False)

    return invoke


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    """A copy of the real HillviewCap projects folder (sessions and old-style sidechains)."""
    target = tmp_path / "projects" / HILLVIEW.name
    shutil.copytree(HILLVIEW, target)
    return target.parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that needs Redis (through the sync tests' `redis_url` fixture) `redis`."""
    for item in items:
        if "redis_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.redis)
