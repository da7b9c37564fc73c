"""`memex mcp` through the MCP SDK's own client: the server runs as a child process on stdio (as an agent
starts it), over a store holding real transcripts from tests/fixtures."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from corpus import CODEX, HILLVIEW, SLAY
from memex.mcpserver.pages import MAX_RESULT_CHARS

pytestmark = pytest.mark.subprocess

SLAY_ID = "2969822b-3c7d-47bd-8814-4bc86f67056a"
CODEX_ID = "019a7ae6-1945-7c63-98f2-210adb922af9"  # six turns, a long conversation
DOTFILES = "I have some dotfiles from github, where do I put them for cc?"
TOOLS = {"search", "show_session", "list_sessions", "find_related", "recall", "stats"}


@pytest.fixture
def indexed(home: Path, run) -> Path:
    """MEMEX_HOME holding the slay, HillviewCap and Codex transcripts, indexed (no vectors)."""
    for corpus in (SLAY.parent, HILLVIEW, CODEX):
        assert run("index", str(corpus)).exit_code == 0
    return home


def serve(check: Callable[[Client], Awaitable[None]], cwd: Path | None = None) -> None:
    """Start `memex mcp` as a child process (the test's environment: its MEMEX_HOME), connect the SDK's
    client with the initialize handshake, and run `check` against it."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "memex", "mcp"], env=dict(os.environ), cwd=str(cwd) if cwd else None
    )

    async def main() -> None:
        async with Client(params, mode="legacy", read_timeout_seconds=300) as client:
            await check(client)

    anyio.run(main)


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """The tool's JSON answer (the test fails on an error result)."""
    result = await client.call_tool(tool, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    assert not result.is_error, text
    assert len(text) <= MAX_RESULT_CHARS
    return json.loads(text)


async def error(client: Client, tool: str, **arguments: Any) -> str:
    """The text of the tool's error result (the test fails when the call succeeds)."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    return result.content[0].text  # type: ignore[union-attr]


def test_initialize_and_list_tools(indexed: Path) -> None:
    async def check(client: Client) -> None:
        assert client.server_info is not None and client.server_info.name == "memex"
        assert "search" in (client.instructions or "")
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        for tool in tools.values():
            assert len(tool.description or "") > 150, tool.name  # agents choose tools by these
            assert tool.annotations is not None and tool.annotations.read_only_hint
        search = tools["search"].input_schema
        assert search["required"] == ["query"]
        assert set(search["properties"]) >= {"query", "mode", "project", "agent", "since", "limit", "offset"}
        assert tools["show_session"].input_schema["required"] == ["session"]

    serve(check)


def test_every_tool_answers_on_the_real_corpus(indexed: Path) -> None:
    async def check(client: Client) -> None:
        stats = await call(client, "stats")
        assert stats["sessions_by_agent"] == {"claude": 9, "codex": 3} and stats["turns"] > 0

        listed = await call(client, "list_sessions", limit=50)
        assert listed["next_offset"] is None and len(listed["sessions"]) == stats["sessions"]
        assert listed["sessions"][0]["session_id"] == SLAY_ID  # newest first
        assert set(listed["sessions"][0]) >= {"session_id", "agent", "project_dir", "title", "started_at", "turns"}
        codex = await call(client, "list_sessions", agent="codex")
        assert {s["agent"] for s in codex["sessions"]} == {"codex"} and len(codex["sessions"]) == 3

        found = await call(client, "search", query="dotfiles", mode="lexical")
        assert found["mode"] == "lexical" and found["results"][0]["session_id"] == SLAY_ID
        assert set(found["results"][0]) >= {"prompt_text", "full_text", "tool_summary", "matched_chunk", "score"}
        assert "explain" not in found["results"][0]
        assert (await call(client, "search", query="dotfiles", mode="lexical", agent="codex"))["results"] == []

        mirror = await call(client, "show_session", session=SLAY_ID[:8])
        assert mirror["session"]["session_id"] == SLAY_ID and mirror["mirror"]["computer"] == "testbox"
        assert mirror["total"] == len(mirror["messages"]) and mirror["next_offset"] is None
        assert mirror["messages"][0]["role"] == "user" and "dotfiles" in mirror["messages"][0]["text"]
        turns = await call(client, "show_session", session=SLAY_ID[:8], view="turns")
        assert turns["total"] == 2 and "mirror" not in turns
        assert set(turns["turns"][0]) >= {"id", "agent_id", "prompt_text", "full_text", "tool_summary", "started_at"}

    serve(check)


def test_pages_follow_next_offset(indexed: Path) -> None:
    async def check(client: Client) -> None:
        seen: list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            page = await call(client, "show_session", session=CODEX_ID, view="turns", limit=2, offset=offset)
            assert page["offset"] == offset and len(page["turns"]) <= 2
            seen.extend(page["turns"])
            offset = page["next_offset"]
        assert len(seen) == 6 and len({t["id"] for t in seen}) == 6
        # Asked for all at once, the page stops where the size budget does, and says where to go on.
        whole = await call(client, "show_session", session=CODEX_ID, view="turns", limit=200)
        assert whole["total"] == 6 and whole["next_offset"] == len(whole["turns"]) < 6
        assert [t["id"] for t in whole["turns"]] == [t["id"] for t in seen[: len(whole["turns"])]]

        first = await call(client, "list_sessions", limit=4)
        second = await call(client, "list_sessions", limit=4, offset=first["next_offset"])
        assert first["next_offset"] == 4 and second["offset"] == 4
        every = await call(client, "list_sessions", limit=100)
        ids = [s["session_id"] for s in every["sessions"]]
        assert [s["session_id"] for s in first["sessions"] + second["sessions"]] == ids[:8]

        messages = await call(client, "show_session", session=CODEX_ID, limit=1, offset=1)
        assert messages["offset"] == 1 and len(messages["messages"]) == 1 and messages["next_offset"] == 2

    serve(check)


def test_bad_arguments_and_errors_keep_the_server_running(indexed: Path) -> None:
    async def check(client: Client) -> None:
        assert "'hybrid', 'lexical' or 'semantic'" in await error(client, "search", query="x", mode="fuzzy")
        assert "query" in await error(client, "search")  # missing
        assert "greater than or equal to 1" in await error(client, "list_sessions", limit=0)
        assert "no session matches 'zzzz'" in await error(client, "show_session", session="zzzz")
        assert "cannot read 'someday' as a date" in await error(client, "list_sessions", since="someday")
        assert "unknown agent 'vim'" in await error(client, "search", query="x", agent="vim")
        assert "may not pass 100" in await error(client, "search", query="x", offset=95, limit=10)
        assert "touched no files" in await error(client, "find_related", session=SLAY_ID)
        assert "Unknown tool" in await error(client, "forget_everything")
        # The same server still answers.
        assert (await call(client, "stats"))["sessions"] == 12

    serve(check)


def test_search_in_tool_output_and_by_role(indexed: Path) -> None:
    async def check(client: Client) -> None:
        # A key of a settings file an agent read: only in that tool's output.
        found = await call(client, "search", query="alwaysThinkingEnabled", scope="tools")
        assert found["mode"] == "lexical" and [r["session_id"][:8] for r in found["results"]] == ["5eac5945"]
        hit = found["results"][0]
        assert (
            hit["source"] == "tool" and hit["tool_name"] == "Read" and "alwaysThinkingEnabled" in hit["matched_chunk"]
        )
        assert (await call(client, "search", query="alwaysThinkingEnabled", mode="lexical"))["results"] == []
        mine = await call(client, "search", query="symlink", role="assistant", session=SLAY_ID)
        assert [r["session_id"] for r in mine["results"]] == [SLAY_ID]
        assert (await call(client, "search", query="symlink", role="user", session=SLAY_ID))["results"] == []
        assert "by meaning" in await error(client, "search", query="x", scope="tools", mode="semantic")
        assert "does not apply to tool output" in await error(client, "search", query="x", scope="tools", role="user")

    serve(check)


def test_a_missing_store_is_an_error_until_it_exists(home: Path, run) -> None:
    async def check(client: Client) -> None:
        assert "run `memex index` first" in await error(client, "stats")
        assert not (home / "memex.db").exists()  # read-only: the server creates no store
        assert run("index", str(SLAY.parent)).exit_code == 0
        assert (await call(client, "stats"))["sessions"] == 1  # the same server, now that there is one

    serve(check)


@pytest.mark.model
def test_recall_and_find_related_with_the_model(indexed: Path) -> None:
    async def check(client: Client) -> None:
        recalled = await call(client, "recall", prompt=DOTFILES)
        assert recalled["hits"] >= 1 and "memex recall" in recalled["text"] and "session 2969822b" in recalled["text"]
        own = await call(client, "recall", prompt=DOTFILES, session_id=SLAY_ID)
        assert "session 2969822b" not in own["text"]  # never the current session's own turns

        related = await call(client, "find_related", session=CODEX_ID[:8])
        assert related["session"]["session_id"] == CODEX_ID and related["next_offset"] is None
        assert CODEX_ID not in {hit["session_id"] for hit in related["results"]}
        turns = await call(client, "find_related", kind="turns", session=CODEX_ID[:8], window=2)
        assert turns["window"] == 2 and all("turns" in hit for hit in turns["results"])

    serve(check)
