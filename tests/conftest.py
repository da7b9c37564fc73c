from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from memex.cli.main import cli
from memex.config import Config, load_config
from memex.store.db import connect

FIXTURES = Path(__file__).parent / "fixtures"
HILLVIEW = FIXTURES / "claude" / "hillview" / "-home-jenkins-Personal-AI-Infrastructure"
SLAY = FIXTURES / "claude" / "slay" / "-Users-chloe-c-slay" / "2969822b-3c7d-47bd-8814-4bc86f67056a.jsonl"
MISC = FIXTURES / "claude" / "misc"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty MEMEX_HOME, with the agents' default folders pointed inside the test folder."""
    memex_home = tmp_path / "memex-home"
    monkeypatch.setenv("MEMEX_HOME", str(memex_home))
    monkeypatch.setenv("MEMEX_COMPUTER", "testbox")
    monkeypatch.setenv("MEMEX_CLAUDE_DIR", str(tmp_path / "claude-projects"))
    monkeypatch.setenv("MEMEX_CODEX_DIR", str(tmp_path / "codex-sessions"))
    monkeypatch.setenv("MEMEX_GEMINI_DIR", str(tmp_path / "gemini-tmp"))
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


def db_content(connection) -> dict[str, list[tuple]]:
    """What the store holds, without ids and clocks: two ingests that did the same work compare equal."""
    queries = {
        "sessions": "SELECT session_id, agent, project_dir, title, started_at, ended_at, last_line_index, "
        "last_offset, resume_line_index, provisional_turn_start, last_compact_line_index FROM sessions",
        "subagents": "SELECT session_id, agent_id, last_line_index, last_offset, resume_line_index "
        "FROM subagent_sessions",
        "entries": "SELECT session_id, agent_id, line_index, entry_type, kind, timestamp, text FROM entries",
        "turns": "SELECT session_id, agent_id, line_index, end_line_index, kind, provisional, full_text, "
        "tool_summary, started_at FROM turns",
        "chunks": "SELECT t.session_id, t.agent_id, t.line_index, c.chunk_index, c.content FROM chunks c "
        "JOIN turns t ON t.id = c.turn_id",
        "mentions": "SELECT t.session_id, t.line_index, m.file_path, m.tool_name FROM file_mentions m "
        "JOIN turns t ON t.id = m.turn_id",
        "pr_links": "SELECT * FROM pr_links",
        "fts": "SELECT count(*) FROM chunks_fts",
    }
    return {name: sorted(tuple(row) for row in connection.execute(sql)) for name, sql in queries.items()}
