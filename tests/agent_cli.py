"""End to end through the CLI for one agent's real files: `memex index PATH`, then what `sessions list`,
`show --turns`, `search` and `stats` say (the shared checks of every agent's tests)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def index_json(run: Callable[..., Any], *paths: Path | str) -> dict[str, Any]:
    """`memex index PATH… --json` (or `--all`), which must succeed."""
    result = run("index", *map(str, paths), "--json")
    assert result.exit_code == 0, result.output + result.stderr
    return json.loads(result.stdout)


def sessions(run: Callable[..., Any], agent: str) -> dict[str, dict[str, Any]]:
    """`memex sessions list --agent AGENT --json`, by session id."""
    result = run("sessions", "list", "--agent", agent, "--json", "--limit", "100")
    assert result.exit_code == 0, result.output
    return {row["session_id"]: row for row in json.loads(result.stdout)}


def turns(run: Callable[..., Any], session_id: str) -> list[dict[str, Any]]:
    """`memex show SESSION --turns --json`: the session's turns (its subagents' too)."""
    result = run("show", session_id, "--turns", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["turns"]


def mirror(run: Callable[..., Any], session_id: str) -> str:
    """`memex show SESSION` (plain): the session's mirror, its conversation only."""
    result = run("show", session_id)
    assert result.exit_code == 0, result.output
    return result.stdout


def search_sessions(run: Callable[..., Any], query: str, agent: str) -> list[str]:
    """The sessions `memex search QUERY --agent AGENT --json` finds, best first."""
    result = run("search", query, "--agent", agent, "--json")
    assert result.exit_code == 0, result.output
    return list(dict.fromkeys(hit["session_id"] for hit in json.loads(result.stdout)))


def sessions_by_agent(run: Callable[..., Any]) -> dict[str, int]:
    """`memex stats --json`: sessions per agent."""
    result = run("stats", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["sessions_by_agent"]
