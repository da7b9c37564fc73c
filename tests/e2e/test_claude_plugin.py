"""End to end with the real Claude Code and memex's plugin (`claude --plugin-dir plugin`), no hooks installed
in any settings file: the plugin alone brings the hooks (Stop and SessionEnd index: `claude -p` 2.1 writes
its transcript just after Stop starts; the prompt hook recalls), the skills and the MCP server's six tools.

Like test_claude_code.py (skipped without the `claude` CLI, which `.ci/run` installs; same offline mock
model). The plugin calls `memex` from PATH: this virtualenv's. MCP_CONNECTION_NONBLOCKING=false makes
`claude -p` wait for the MCP server before its first request, so the tools are in that request (by default
a slow start leaves them "still connecting" for a short run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_claude_code import CLAUDE, FIRST, SECOND, _requests, mock_model, pytestmark  # noqa: F401

PLUGIN = Path(__file__).resolve().parents[2] / "plugin"
TOOLS = ("search", "show_session", "list_sessions", "find_related", "recall", "stats")


def test_the_plugin_brings_hooks_skills_and_the_mcp_server(tmp_path: Path, mock_model) -> None:  # noqa: F811
    port, log = mock_model
    home, project, memex_home = tmp_path / "home", tmp_path / "proj", tmp_path / "memex-home"
    home.mkdir()
    project.mkdir()
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",  # this memex first
        "HOME": str(home),
        "MEMEX_HOME": str(memex_home),
        "MEMEX_COMPUTER": "e2e",
        "MEMEX_INDEX_EMBEDS": "0",
        "MEMEX_WARM_IDLE_SECONDS": "0",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}",
        "ANTHROPIC_API_KEY": "dummy-key-for-the-mock",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "MCP_CONNECTION_NONBLOCKING": "false",
    }

    def claude(*args: str) -> str:
        done = subprocess.run(
            [CLAUDE, "--plugin-dir", str(PLUGIN), *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=True,
        )
        return done.stdout

    assert "Mock answer" in claude("-p", FIRST)
    first = _requests(log)
    sent = json.dumps(first[0]["body"])
    for tool in TOOLS:  # offered to the model (listed for ToolSearch: Claude Code defers MCP tools' schemas)
        assert f"mcp__plugin_memex_memex__{tool}" in sent, f"the MCP tool {tool} was not offered"
    for skill in ("memex:recall", "memex:sessions", "memex:find-related"):
        assert skill in sent, f"skill {skill} not loaded"

    # The plugin's Stop (or SessionEnd) hook indexed the session (no settings file holds memex's hooks).
    assert (
        not (home / ".claude" / "settings.json").exists()
        or "memex hook" not in (home / ".claude" / "settings.json").read_text()
    )
    listed = subprocess.run(
        [sys.executable, "-m", "memex", "sessions", "list", "--json"], env=env, capture_output=True, text=True
    )
    sessions = json.loads(listed.stdout)
    assert [s["title"] for s in sessions] == [FIRST]

    # Its prompt hook recalls that session into the next one.
    claude("-p", SECOND)
    second = [r for r in _requests(log)[len(first) :] if SECOND in json.dumps(r["body"])]
    assert second and "memex recall" in json.dumps(second[0]["body"])
    assert f"session {sessions[0]['session_id'][:8]}" in json.dumps(second[0]["body"])

    # Claude Code reaches the server and completes the MCP handshake.
    assert "plugin:memex:memex: memex mcp - ✔ Connected" in claude("mcp", "list")
