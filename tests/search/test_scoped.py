"""Searches on request: tool output (`--in tools`) and one voice of the conversation (`--role`), over real
transcripts from tests/fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from corpus import CODEX, GEMINI, HILLVIEW, LIVE, MISC, SLAY
from memex.api import Memex
from memex.config import load_config
from memex.errors import UserError
from memex.ingest.turns import bounded_output
from memex.search.scoped import EXCERPT_CHARS, interleaved
from memex.store.db import connect
from memex.store.queries import Filters
from transcripts import ClaudeSession, text, tool_use

# Only in the output of a `Read` of misc/large-conversation.jsonl (a function of the file it read): the
# conversation never names it.
TOOL_ONLY = "exchangeCodeForTokens"
LARGE = "large-conversation"
SLAY_ID = SLAY.stem
SESSION = "7001a5c0-1111-2222-3333-444444444444"


@pytest.fixture
def indexed(home: Path, run) -> Path:
    for corpus in (MISC, SLAY.parent, HILLVIEW):
        assert run("index", str(corpus)).exit_code == 0
    return home


def search(run, *args: str) -> list[dict]:
    result = run("search", *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_word_only_in_tool_output_is_found_with_in_tools_and_only_then(indexed: Path, run) -> None:
    assert search(run, TOOL_ONLY) == []  # the default search: the conversation
    assert search(run, "--mode", "lexical", TOOL_ONLY) == []
    assert search(run, "--in", "conversation", TOOL_ONLY) == []
    hits = search(run, "--in", "tools", TOOL_ONLY)
    assert [h["session_id"] for h in hits] == [LARGE]
    hit = hits[0]
    # The turn that ran the tool, the tool's name, and a bounded excerpt of its output with the match marked.
    assert hit["source"] == "tool" and hit["tool_name"] == "Read" and hit["tool_is_error"] is False
    assert hit["id"] is not None and hit["line_index"] <= hit["tool_line_index"]
    assert hit["prompt_text"] and hit["full_text"] and TOOL_ONLY not in hit["full_text"]
    assert TOOL_ONLY in hit["matched_chunk"] and len(hit["matched_chunk"]) <= EXCERPT_CHARS + 2
    start, end = hit["spans"][0]
    assert hit["matched_chunk"][start:end] == TOOL_ONLY
    assert hit["tool_output_chars"] > len(hit["matched_chunk"])
    for key in ("session_id", "agent_id", "started_at", "agent", "computer", "project_dir", "title", "score"):
        assert key in hit


def test_tool_search_honours_the_filters(indexed: Path, run) -> None:
    assert search(run, "--in", "tools", "--agent", "claude", TOOL_ONLY)
    assert search(run, "--in", "tools", "--agent", "codex", TOOL_ONLY) == []
    assert search(run, "--in", "tools", "--session", "large-conv", TOOL_ONLY)
    assert search(run, "--in", "tools", "--session", SLAY_ID, TOOL_ONLY) == []
    assert search(run, "--in", "tools", "--until", "2020-01-01", TOOL_ONLY) == []
    assert search(run, "--in", "tools", "--project", "no-such-project", TOOL_ONLY) == []
    assert search(run, "--in", "tools", "--pr", "999", TOOL_ONLY) == []
    # A key of a settings file the agent read, found in its project by name.
    found = search(run, "--in", "tools", "--project", "Personal_AI_Infrastructure", "alwaysThinkingEnabled")
    assert [h["session_id"][:8] for h in found] == ["5eac5945"]
    assert search(run, "--in", "tools", "--project", "slay", "alwaysThinkingEnabled") == []


def test_the_cli_names_the_tool_and_says_when_nothing_matched(indexed: Path, run) -> None:
    result = run("search", "--in", "tools", TOOL_ONLY)
    assert result.exit_code == 0 and "tool output: Read" in result.stdout and TOOL_ONLY in result.stdout
    nothing = run("search", "--in", "tools", "zzqxnothingatall")
    assert nothing.exit_code == 0 and "No matching tool output." in nothing.stderr


def test_tool_output_is_never_embedded_nor_in_a_mirror(indexed: Path, config) -> None:
    conn = connect(config.db_path)
    try:
        assert conn.execute("SELECT count(*) FROM tool_outputs").fetchone()[0] > 100
        # Embedding work exists for chunks, turns and sessions only, and none of their texts holds tool output.
        assert {r[0] for r in conn.execute("SELECT DISTINCT level FROM embed_jobs")} <= {"chunk", "turn", "session"}
        assert conn.execute("SELECT count(*) FROM chunks WHERE content LIKE ?", (f"%{TOOL_ONLY}%",)).fetchone()[0] == 0
        mirrors = conn.execute("SELECT conversation_text FROM mirrors").fetchall()
        assert mirrors and not any(TOOL_ONLY in row[0] or "alwaysThinkingEnabled" in row[0] for row in mirrors)
    finally:
        conn.close()


def test_role_keeps_to_what_that_voice_wrote(indexed: Path, run) -> None:
    # "symlink" is only in the assistant's first answer; "first time" only in the user's first prompt.
    assert [h["session_id"] for h in search(run, "--role", "assistant", "--session", SLAY_ID, "symlink")] == [SLAY_ID]
    assert search(run, "--role", "user", "--session", SLAY_ID, "symlink") == []
    assert search(run, "--session", SLAY_ID, "--mode", "lexical", "symlink")  # the whole conversation has it
    user = search(run, "--role", "user", "--session", SLAY_ID, "first time")
    assert [h["prompt_text"][:3] for h in user] == ["Hi!"] and user[0]["source"] == "turn"
    assert "first time" in user[0]["matched_chunk"]
    assert search(run, "--role", "assistant", "--session", SLAY_ID, "first time") == []


def test_a_user_message_is_found_at_the_turn_it_opens(indexed: Path, run) -> None:
    # Turn 1's text holds the user's next message too ("User (next): So I can't have an entire…"); by role,
    # that message is the prompt of turn 2, and turn 2 is the hit.
    hits = search(run, "--role", "user", "--session", SLAY_ID, "--per-session", "3", "entire directory")
    assert len(hits) == 1 and hits[0]["prompt_text"].startswith("So I can't have an entire")


def test_in_all_finds_both_kinds_interleaved(indexed: Path, run) -> None:
    assert [h["source"] for h in search(run, "--in", "all", TOOL_ONLY)] == ["tool"]
    assert [h["source"] for h in search(run, "--in", "all", "--session", SLAY_ID, "symlink")] == ["turn"]
    # Words in both: each list's first first (the conversation's on a tie), one result per session.
    both = search(run, "--in", "all", "--mode", "lexical", "--limit", "20", "settings")
    conversation = search(run, "--mode", "lexical", "--limit", "20", "settings")
    tools = search(run, "--in", "tools", "--limit", "20", "settings")
    assert both[0] == conversation[0]
    # The tool list's first hit in a session not already shown is there, and each list keeps its order.
    first_tool = next(hit for hit in tools if hit["session_id"] != conversation[0]["session_id"])
    assert first_tool in both
    for own in (conversation, tools):
        kept = [hit for hit in both if hit in own]
        assert kept == sorted(kept, key=own.index)
    assert {h["source"] for h in both} == {"turn", "tool"} and len({h["session_id"] for h in both}) == len(both)


def test_interleaving_is_by_rank_in_each_list() -> None:
    conversation = [{"session_id": s, "n": f"c{s}"} for s in "abc"]
    tools = [{"session_id": s, "n": f"t{s}"} for s in "dae"]
    assert [r["n"] for r in interleaved([conversation, tools], 10, 1, 5)] == ["ca", "td", "cb", "cc", "te"]
    assert [r["n"] for r in interleaved([conversation, tools], 10, 2, 5)] == ["ca", "td", "cb", "ta", "cc", "te"]
    assert [r["n"] for r in interleaved([conversation, tools], 2, 1, 5)] == ["ca", "td"]


def test_scoped_searches_refuse_what_they_cannot_do(indexed: Path, run) -> None:
    for args, message in [
        (("--in", "tools", "--mode", "semantic"), "cannot be searched by meaning"),
        (("--role", "user", "--mode", "semantic"), "cannot be searched by meaning"),
        (("--in", "tools", "--role", "user"), "does not apply to tool output"),
        (("--in", "all", "--role", "user"), "does not apply to tool output"),
        (("--in", "tools", "--level", "chunk"), "level applies to conversation search"),
    ]:
        result = run("search", *args, "anything")
        assert result.exit_code != 0 and message in result.stderr and "Traceback" not in result.output
        # The face says it to every door: the web viewer and the MCP server have no `--mode` (it said
        # "use --mode lexical" to a viewer's user and to an agent calling the tool).
        assert "--" not in result.stderr.removeprefix("memex: error: ")
    assert run("search", "--in", "everything", "x").exit_code == 2


def test_the_face_takes_scope_and_role(indexed: Path) -> None:
    with Memex(load_config(), readonly=True) as memex:
        found = memex.search(TOOL_ONLY, Filters(), scope="tools")
        assert found.mode == "lexical" and [h.source for h in found.hits] == ["tool"]
        assert found.hits[0].to_json()["tool_name"] == "Read"
        assert memex.search(TOOL_ONLY, Filters(), mode="lexical").hits == []
        assert memex.search("symlink", Filters(session=SLAY_ID), role="assistant").hits
        with pytest.raises(UserError):
            memex.search("x", Filters(), scope="nowhere")
        with pytest.raises(UserError):
            memex.search("x", Filters(), role="system")


def test_a_long_output_keeps_its_start_and_its_end() -> None:
    text = "START " + "middle words " * 2_000 + "TAIL-ERROR: retryFetchOnFailure failed"
    kept = bounded_output(text, 1_000)
    assert kept.startswith("START ") and kept.endswith("retryFetchOnFailure failed")
    assert len(kept) < 1_100 and "characters left out by memex" in kept
    assert bounded_output("short", 1_000) == "short"
    # A secret across the tail's cut goes whole with the part left out (half a key would escape redaction).
    key = "ghp_" + "A1b2C3d4E5" * 4
    secret = "x " * 1_000 + key + " y" * 110  # the tail (its last 250 characters) would start inside the key
    kept = bounded_output(secret, 1_000)
    assert key[-12:] not in kept and kept.endswith(" y")


def test_the_bound_applies_at_ingest(home: Path, run, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMEX_TOOL_OUTPUT_MAX_CHARS", "1000")
    assert run("index", str(MISC)).exit_code == 0
    conn = connect(load_config().db_path)
    try:
        longest = conn.execute("SELECT max(chars), max(length(text)) FROM tool_outputs").fetchone()
        assert longest[0] > 5_000 and longest[1] < 1_100
    finally:
        conn.close()


def test_forgetting_a_session_forgets_its_tool_output_and_messages(indexed: Path, run, config) -> None:
    assert run("forget", LARGE, "--yes").exit_code == 0
    assert search(run, "--in", "tools", TOOL_ONLY) == []
    conn = connect(config.db_path)
    try:
        # The full-text indexes lost its documents too (not only the rows they point to).
        match = "SELECT count(*) FROM {0} WHERE {0} MATCH ?"
        assert conn.execute(match.format("tool_outputs_fts"), (TOOL_ONLY,)).fetchone()[0] == 0
        assert conn.execute(match.format("entries_fts"), ("worktree",)).fetchone()[0] == 0
    finally:
        conn.close()


def test_a_secret_in_tool_output_is_redacted_in_the_excerpt(home: Path, run, tmp_path: Path) -> None:
    key = "ghp_" + "Zq3vK8mW2xR7tY1uP4sN6bL9cD0fH5jA2eGi"
    session = ClaudeSession(tmp_path / "p" / f"{SESSION}.jsonl", SESSION)
    session.write(session.prompt("why does the fetch keep failing?"))
    session.write(session.assistant(text("Let me look."), tool_use("toolu_1", "Bash", command="env; pytest")))
    session.write(session.tool_result("toolu_1", f"GITHUB_TOKEN={key}\nE   retryFetchOnFailure gave up\n1 failed"))
    session.write(session.prompt("thanks"))
    assert run("index", str(session.path)).exit_code == 0
    [hit] = search(run, "--in", "tools", "retryFetchOnFailure")
    assert "retryFetchOnFailure" in hit["matched_chunk"] and "[REDACTED" in hit["matched_chunk"]
    assert key[4:16] not in json.dumps(hit)


@pytest.mark.parametrize("corpus", [GEMINI, CODEX, LIVE], ids=["gemini", "codex", "live"])
def test_every_agents_tool_outputs_are_named_by_their_call(home: Path, run, config, corpus: Path) -> None:
    assert run("index", str(corpus)).exit_code == 0
    conn = connect(config.db_path)
    try:
        named = conn.execute("SELECT count(*), count(tool_name) FROM tool_outputs").fetchone()
        assert named[0] > 0 and named[0] == named[1]
    finally:
        conn.close()
