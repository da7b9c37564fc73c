"""Every agent's real files side by side: each file is one agent's alone, and `memex index FOLDER` tells the
agents apart (sessions per agent in `memex stats`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent_cli import index_json, sessions_by_agent
from corpus import LIVE, SPECSTORY
from memex.config import load_config
from memex.ingest.indexer import default_roots
from memex.sources import ADAPTERS

# Sessions (subagents apart) each agent's live fixtures hold.
EXPECTED = {
    "claude": 3,  # 2.1.330 (two) and 2.1.197 (an answer written before its prompt)
    "codex": 3,
    "gemini": 5,
    "copilot": 3,
    "qwen": 3,
    "pi": 2,
    "kimi": 5,
    "cline": 3,
    "aider": 1,
    "opencode": 3,
    "cursor": 1,
}


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def test_each_file_is_one_agents_at_most() -> None:
    claims: dict[Path, list[str]] = {}
    for path in _files(LIVE):
        for name, adapter in ADAPTERS.items():
            if adapter.discover([path]):
                claims.setdefault(path, []).append(name)
    shared = {str(p.relative_to(LIVE)): agents for p, agents in claims.items() if len(agents) > 1}
    assert shared == {}
    assert {agents[0] for agents in claims.values()} == set(EXPECTED) - {"cursor"}


def test_agents_indexes_and_logs_are_no_ones_transcripts() -> None:
    """Files beside the transcripts that name sessions on every line (Kimi Code's session index, Qwen
    Code's usage log) are claimed by no agent: a `sessionId` made them Claude sessions of unknown records."""
    for path in (LIVE / "kimi-code-2.1.0" / "session_index.jsonl", LIVE / "qwen-code-0.24.4" / "usage_record.jsonl"):
        assert '"sessionId"' in path.read_text()
        assert [name for name, adapter in ADAPTERS.items() if adapter.discover([path])] == []


def test_index_one_folder_of_every_agent(run, tmp_path: Path) -> None:
    shutil.copytree(LIVE, tmp_path / "live")
    shutil.copytree(SPECSTORY, tmp_path / "live" / "specstory")
    report = index_json(run, tmp_path / "live")
    assert report["bad_lines"] == 0 and report["refused"] == [] and report["failed"] == []
    by_agent = sessions_by_agent(run)
    assert {agent: by_agent.get(agent, 0) for agent in EXPECTED} == EXPECTED


def test_claude_codex_and_gemini_homes_moved_by_their_own_variables_are_indexed(
    run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code keeps its transcripts in `$CLAUDE_CONFIG_DIR/projects`, Codex in `$CODEX_HOME/sessions`
    (and `archived_sessions`), Gemini CLI in `$GEMINI_CLI_HOME/.gemini/tmp`: `memex index` looked only in
    the default folders, found nothing and said nothing, while the hooks were installed into
    `$CLAUDE_CONFIG_DIR/settings.json`."""
    claude, codex, gemini = tmp_path / "claude-config", tmp_path / "codex-home", tmp_path / "gemini-home"
    shutil.copytree(LIVE / "gemini-0.61.0" / "tmp", gemini / ".gemini" / "tmp")
    monkeypatch.delenv("MEMEX_GEMINI_DIR")
    monkeypatch.setenv("GEMINI_CLI_HOME", str(gemini))
    for version in ("claude-2.1.330", "claude-2.1.197"):
        shutil.copytree(LIVE / version / "projects", claude / "projects", dirs_exist_ok=True)
    shutil.copytree(LIVE / "codex-0.169.0" / "sessions", codex / "sessions")
    monkeypatch.delenv("MEMEX_CLAUDE_DIR")
    monkeypatch.delenv("MEMEX_CODEX_DIR")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(codex))
    assert index_json(run, "--all")["failed"] == []
    by_agent = sessions_by_agent(run)
    assert {agent: by_agent.get(agent) for agent in ("claude", "codex", "gemini")} == {
        agent: EXPECTED[agent] for agent in ("claude", "codex", "gemini")
    }
    monkeypatch.setenv("MEMEX_CLAUDE_DIR", str(tmp_path / "elsewhere"))  # a setting given wins
    config = load_config()
    assert default_roots(config, ["claude"])["claude"] == [tmp_path / "elsewhere"]
