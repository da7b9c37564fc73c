"""The README's per-client blocks register `memex mcp` in each client's format, and its ingest hooks run a
command memex accepts."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def section() -> str:
    text = README.read_text()
    start = text.index("## MCP server: memex from any agent")
    return text[start : text.index("\n## ", start + 1)]


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", section(), re.S)


def test_every_client_block_parses_and_starts_memex_mcp() -> None:
    servers = []
    for block in blocks("json"):
        data = json.loads(block)
        if "mcpServers" in data:
            servers.append(data["mcpServers"]["memex"])
        elif "mcp" in data:  # OpenCode: the command as one list
            local = data["mcp"]["memex"]
            assert local["type"] == "local"
            servers.append({"command": local["command"][0], "args": local["command"][1:]})
    codex = tomllib.loads(blocks("toml")[0])["mcp_servers"]["memex"]
    servers.append(codex)
    assert len(servers) == 5  # Gemini, Cursor, OpenCode, Copilot CLI, Codex (Claude Code: `claude mcp add`)
    for server in servers:
        assert server["command"] == "memex" and server["args"] == ["mcp"]
    assert "claude mcp add --scope user memex -- memex mcp" in blocks("bash")[0]


def test_the_ingest_hooks_run_a_valid_memex_command(run) -> None:
    commands = []
    for block in blocks("json"):
        for groups in json.loads(block).get("hooks", {}).values():
            commands += [hook["command"] for group in groups for hook in group["hooks"]]
    assert len(commands) == 2
    for command in commands:
        memex = shlex.split(command.split(">")[0])
        assert memex[:2] == ["memex", "index"]
        result = run(*memex[1:])
        assert result.exit_code == 0, result.output
