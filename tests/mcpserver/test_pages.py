"""Pages sized for MCP clients, the server's answer to an error inside memex (in-process client), and the
SDK loaded by `memex mcp` only."""

from __future__ import annotations

import subprocess
import sys

import anyio
from mcp import Client

from memex.config import Config
from memex.mcpserver.pages import MAX_RESULT_CHARS, MAX_RESULT_TOKENS, clip, dumps, fill
from memex.mcpserver.server import build_server
from memex.textutil import estimate_tokens


def within_budget(value: object) -> bool:
    text = dumps(value)
    return len(text) <= MAX_RESULT_CHARS and estimate_tokens(text) <= MAX_RESULT_TOKENS


def test_a_page_stops_at_the_budget_and_says_where_the_next_starts() -> None:
    items = [{"n": n, "text": "word " * 1_000} for n in range(20)]  # 5,000 characters each
    page = fill({"total": 20}, "items", items, 0, False)
    assert within_budget(page)
    count = len(page["items"])
    assert 1 < count < 20 and page["next_offset"] == count and page["offset"] == 0
    rest = fill({"total": 20}, "items", items[count:], count, False)
    assert rest["items"][0]["n"] == count


def test_the_last_page_has_no_next_offset_unless_more_items_exist() -> None:
    items = [{"n": n} for n in range(3)]
    assert fill({}, "items", items, 6, False)["next_offset"] is None
    assert fill({}, "items", items, 6, True)["next_offset"] == 9


def test_one_item_too_large_is_cut_to_fit_and_says_so() -> None:
    page = fill({}, "turns", [{"id": 1, "full_text": "x" * 200_000, "prompt_text": "why?"}], 0, False)
    assert within_budget(page) and page["next_offset"] is None
    turn = page["turns"][0]
    assert turn["truncated"] == ["full_text"] and turn["prompt_text"] == "why?"
    assert turn["full_text"].startswith("xxx") and "more characters]" in turn["full_text"]


def test_cjk_text_is_held_to_the_token_budget() -> None:
    page = fill({}, "messages", [{"text": "記憶の検索" * 2_000} for _ in range(5)], 0, False)
    assert within_budget(page) and page["next_offset"] is not None


def test_clip_cuts_only_the_named_fields() -> None:
    item = clip({"a": "y" * 50, "b": "z" * 50, "n": 3}, 10, ("a",))
    assert item["b"] == "z" * 50 and item["a"].startswith("y" * 10) and item["truncated"] == ["a"]


def test_an_internal_error_is_a_tool_error_and_the_server_goes_on(config: Config) -> None:
    server, door = build_server(config)

    async def broken() -> str:
        """A tool whose work fails inside memex."""
        return await door.call("broken", lambda memex: {}["missing"])

    server.add_tool(broken)

    async def main() -> None:
        async with Client(server) as client:
            failed = await client.call_tool("broken", {})
            assert failed.is_error
            assert "internal error in memex (KeyError" in failed.content[0].text  # type: ignore[union-attr]
            answered = await client.call_tool("stats", {})  # no store yet: a clear error, not a crash
            assert "run `memex index` first" in answered.content[0].text  # type: ignore[union-attr]

    try:
        anyio.run(main)
    finally:
        door.close()


def test_other_commands_do_not_import_the_mcp_sdk(home) -> None:
    """`memex stats` (and every command but `memex mcp`) runs without loading the MCP SDK."""
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from memex.cli.main import cli\n"
        "CliRunner().invoke(cli, ['--help'])\n"
        "CliRunner().invoke(cli, ['stats', '--json'])\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
