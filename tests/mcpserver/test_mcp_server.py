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

from corpus import CODEX, HILLVIEW, LIVE_CLAUDE, LIVE_CODEX, SLAY
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
        prefix = (await call(client, "search", query="dotfil*", mode="lexical"))["results"][0]  # `zebr*`: a prefix
        assert prefix["session_id"] == SLAY_ID
        assert {prefix["matched_chunk"][s:e].lower() for s, e in prefix["spans"]} == {"dotfiles"}

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
        assert "query is required" in await error(client, "search")  # missing
        assert "limit must be a whole number from 1 to 100" in await error(client, "list_sessions", limit=0)
        assert "no session matches 'zzzz'" in await error(client, "show_session", session="zzzz")
        assert "cannot read 'someday' as a date" in await error(client, "list_sessions", since="someday")
        assert "unknown agent 'vim'" in await error(client, "search", query="x", agent="vim")
        assert "may not pass 100" in await error(client, "search", query="x", offset=95, limit=10)
        assert "touched no files" in await error(client, "find_related", session=SLAY_ID)
        assert "Unknown tool" in await error(client, "forget_everything")
        # An offset past what SQLite can count is a mistake in the arguments, not an internal error.
        for tool, args in (("list_sessions", {}), ("show_session", {"session": SLAY_ID})):
            message = await error(client, tool, offset=2**63 - 1, **args)
            assert "offset" in message and "internal error" not in message, message
        # The same server still answers.
        assert (await call(client, "stats"))["sessions"] == 12

    serve(check)


# Each bad argument, and the one line the agent reads about it.
ARGUMENT_ERRORS = [
    ("search", {}, "query is required: a non-empty string"),
    ("search", {"query": ""}, "query must be a non-empty string, not ''"),
    ("search", {"query": 5}, "query must be a non-empty string, not 5"),
    ("search", {"query": None}, "query must be a non-empty string, not null"),
    ("search", {"query": "x", "mode": "fuzzy"}, "mode must be 'hybrid', 'lexical' or 'semantic', not 'fuzzy'"),
    ("search", {"query": "x", "role": "bot"}, "role must be 'user' or 'assistant', not 'bot'"),
    ("search", {"query": "x", "pr": "abc"}, "pr must be a whole number of 1 or more, not 'abc'"),
    ("list_sessions", {"limit": -5}, "limit must be a whole number from 1 to 100, not -5"),
    ("list_sessions", {"limit": "ten"}, "limit must be a whole number from 1 to 100, not 'ten'"),
    ("list_sessions", {"limit": 2.5}, "limit must be a whole number from 1 to 100, not 2.5"),
    ("list_sessions", {"agent": ["a", "b"]}, 'agent must be a string, not ["a", "b"]'),
    ("show_session", {"session": "x", "offset": -1}, "offset must be a whole number from 0 to 1,000,000,000, not -1"),
    ("show_session", {"session": "x", "view": "raw"}, "view must be 'mirror' or 'turns', not 'raw'"),
    ("find_related", {"window": 0}, "window must be a whole number from 1 to 20, not 0"),
    ("find_related", {"min_shared": -1}, "min_shared must be a whole number of 0 or more, not -1"),
    ("recall", {"prompt": "x" * 500}, None),  # a good call: its error is the missing store, not the arguments
    # An argument the tool does not take, which pydantic dropped: a misspelled filter searched everything.
    (
        "search",
        {"query": "x", "projcet": "shop"},
        "unknown argument 'projcet' (did you mean 'project'?): search takes query, mode, project, agent, since, "
        "until, file, pr, session, scope, role, limit, offset",
    ),
    (
        "list_sessions",
        {"agnet": "codex", "color": "red"},
        "unknown arguments 'agnet' (did you mean 'agent'?), 'color': list_sessions takes project, agent, since, "
        "until, pr, limit, offset",
    ),
    (
        "show_session",
        {"session_id": "x"},
        "unknown argument 'session_id' (did you mean 'session'?): show_session takes session, view, offset, limit",
    ),
    (
        "find_related",
        {"min_share": 2},
        "unknown argument 'min_share' (did you mean 'min_shared'?): find_related takes kind, session, project, "
        "agent, limit, window, min_shared",
    ),
    (
        "recall",
        {"prompt": "x", "query": "x"},
        "unknown argument 'query': recall takes prompt, session_id, project_dir",
    ),
    ("stats", {"verbose": True}, "unknown argument 'verbose': stats takes no arguments"),
    # A boolean where a number goes: Python's bool is an int, and `limit: true` was read as 1.
    ("search", {"query": "x", "limit": True}, "limit must be a whole number from 1 to 50, not true"),
    ("search", {"query": "x", "pr": True}, "pr must be a whole number of 1 or more, not true"),
    ("list_sessions", {"offset": False}, "offset must be a whole number from 0 to 1,000,000,000, not false"),
    ("show_session", {"session": "x", "limit": True}, "limit must be a whole number from 1 to 200, not true"),
    ("find_related", {"window": True}, "window must be a whole number from 1 to 20, not true"),
    ("find_related", {"min_shared": True}, "min_shared must be a whole number of 0 or more, not true"),
    ("search", {"query": True}, "query must be a non-empty string, not true"),
    # A string where a number goes: JSON Schema's integer is no string, though pydantic read "5" as 5.
    ("search", {"query": "x", "limit": "5"}, "limit must be a whole number from 1 to 50, not '5'"),
    ("list_sessions", {"pr": "12"}, "pr must be a whole number of 1 or more, not '12'"),
    (
        "find_related",
        {"window": "3", "min_shared": "1e0"},
        "window must be a whole number from 1 to 20, not '3'; "
        "min_shared must be a whole number of 0 or more, not '1e0'",
    ),
    # Several mistakes in one call: each named, on one line.
    (
        "search",
        {"mode": "x", "limit": 0},
        "query is required: a non-empty string; mode must be 'hybrid', 'lexical' or 'semantic', not 'x'; "
        "limit must be a whole number from 1 to 50, not 0",
    ),
]


def test_each_argument_error_is_one_line_naming_the_argument(home: Path) -> None:
    """Not the SDK's pydantic report (several lines and a link to pydantic's docs): one line per call,
    naming each bad argument and what it takes, as the tool's error result."""

    async def check(client: Client) -> None:
        for tool, arguments, expected in ARGUMENT_ERRORS:
            message = await error(client, tool, **arguments)
            assert "\n" not in message and "pydantic" not in message, message
            if expected is None:
                assert "no memex database" in message, message
            else:
                assert message == f"Error executing tool {tool}: {expected}", message
        assert "no memex database" in await error(client, "stats")  # the server still answers

    serve(check)


def test_a_misspelled_model_is_a_note_and_search_goes_by_words(indexed: Path, monkeypatch) -> None:
    monkeypatch.setenv("MEMEX_EMBED_MODEL", "e5-smal-q4")

    async def check(client: Client) -> None:
        found = await call(client, "search", query="dotfiles")
        line = "embed_model 'e5-smal-q4' is not a model memex knows; choices: e5-small-q4"
        assert found["mode"] == "lexical" and found["results"][0]["session_id"] == SLAY_ID
        assert found["notes"] == [f"semantic search unavailable ({line}); lexical results only"]
        by_meaning = await call(client, "search", query="dotfiles", mode="semantic")
        assert by_meaning["mode"] == "lexical" and by_meaning["notes"] == found["notes"]
        assert SLAY_ID[:8] in (await call(client, "recall", prompt=DOTFILES))["text"]  # by words, no error

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


def test_search_and_show_session_name_subagents(home: Path, run) -> None:
    """A subagent's turn comes with the name its agent gave it (Claude Code's agentType and description,
    Codex's nickname for a spawned agent)."""
    for corpus in (LIVE_CLAUDE, LIVE_CODEX):
        assert run("index", "--no-embed", str(corpus)).exit_code == 0

    async def check(client: Client) -> None:
        found = await call(client, "search", query="SUBAGENT-TASK list the files", mode="lexical")
        named = {r["agent_id"]: (r["subagent_name"], r["subagent_description"]) for r in found["results"]}
        assert named["a6464d481e77bfaa0"] == ("general-purpose", "List project files")
        assert named["01a209d0-fa7c-7962-b6c3-548f6f302da0"] == ("Laplace", None)
        shown = await call(client, "show_session", session="322e6fc1", view="turns")
        names = {(t["agent_id"], t["subagent_name"]) for t in shown["turns"]}
        assert names == {("", None), ("a6464d481e77bfaa0", "general-purpose")}
        listed = await call(client, "list_sessions", agent="codex")
        assert [s["subagent_names"] for s in listed["sessions"] if s["subagents"]] == [["Laplace"]]

    serve(check)


def test_a_long_query_keeps_the_result_under_its_budget(indexed: Path) -> None:
    """An agent pasting a whole log as the query: the echo of it is cut, the answer stays a valid page."""
    query = "dotfiles " + "x" * 60_000

    async def check(client: Client) -> None:
        found = await call(client, "search", query=query, mode="lexical")  # asserts the size budget
        assert found["query"].startswith("dotfiles x") and len(found["query"]) < 2_100
        assert "query" in found["truncated"]

    serve(check)


def test_turns_of_another_computers_session_point_to_the_mirror_view(indexed: Path) -> None:
    """A session known by its mirror has no turns here: the error names the tool's own argument, not the
    CLI's flags (an agent has no --turns or --raw to drop or use)."""
    from memex.store.db import connect
    from mirrortools import store_received_mirror

    remote = "0c0c0c0c-1111-2222-3333-444444444444"
    conn = connect(indexed / "memex.db")
    store_received_mirror(conn, remote, "laptop", "/home/dev/shop", "the checkout bug", "why?", "rounding")
    conn.close()

    async def check(client: Client) -> None:
        message = await error(client, "show_session", session=remote[:8], view="turns")
        assert "laptop" in message and "view='mirror'" in message
        assert "--turns" not in message and "--raw" not in message
        assert (await call(client, "show_session", session=remote[:8]))["total"] == 2

    serve(check)
