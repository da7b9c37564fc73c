"""Pull request links from every agent: its own records first, then URLs in tool output and answers."""

from __future__ import annotations

import json
from pathlib import Path

from memex.config import Config
from memex.ingest.indexer import discover, index_transcripts
from memex.ingest.pipeline import ingest_transcript
from memex.ingest.prs import pull_requests
from memex.sources import claude, codex, gemini
from memex.store.queries import pull_requests_of
from transcripts import ClaudeSession, CodexRollout, GeminiChat, text, tool_use

SID = "11111111-2222-3333-4444-555555555555"


def test_pull_request_urls() -> None:
    found = pull_requests(
        "Created https://github.com/acme/shop/pull/42 and see https://GitHub.com/acme/shop/pull/42/files#diff, "
        "https://gitlab.com/group/sub/api/-/merge_requests/7 and https://github.acme.corp/infra/deploy/pull/3."
    )
    assert [(p.number, p.url, p.repository) for p in found] == [
        (42, "https://github.com/acme/shop/pull/42", "acme/shop"),
        (3, "https://github.acme.corp/infra/deploy/pull/3", "infra/deploy"),
        (7, "https://gitlab.com/group/sub/api/-/merge_requests/7", "group/sub/api"),
    ]
    assert pull_requests("https://github.com/acme/shop/issues/42 and github.com/acme/shop/pull/x") == []
    listing = " ".join(f"https://github.com/acme/shop/pull/{n}" for n in range(1, 6))
    assert pull_requests(listing) == []  # a page of links is not work on five pull requests


def test_claude_records_first_then_urls_in_tool_output_and_answers(conn, config: Config, tmp_path: Path) -> None:
    session = ClaudeSession(tmp_path / "p" / f"{SID}.jsonl", SID)
    session.write(session.prompt("open a PR for the cart fix"))
    session.write(session.assistant(tool_use("toolu_1", "Bash", command="gh pr create --fill")))
    session.write(session.tool_result("toolu_1", "https://github.com/dev/shop/pull/12\n"))
    session.write(session.assistant(text("Opened https://github.com/dev/shop/pull/12; it builds on dev/infra#12.")))
    session.write(session.assistant(text("Also related: https://github.com/dev/infra/pull/12")))
    session.write(session.pr_link(12))  # Claude Code's own record of the same pull request, written later
    ingest_transcript(conn, config, claude.classify(session.path))
    prs = pull_requests_of(conn, SID)
    assert [(p["pr_url"], p["source"]) for p in prs] == [
        ("https://github.com/dev/shop/pull/12", "record"),
        ("https://github.com/dev/infra/pull/12", "text"),
    ]
    # Appending re-reads the provisional turn: the links stay the same, once each.
    session.write(session.prompt("thanks"))
    ingest_transcript(conn, config, claude.classify(session.path))
    assert pull_requests_of(conn, SID) == prs


def test_codex_gh_pr_create_links_the_session(run, tmp_path: Path) -> None:
    rollout = CodexRollout(
        tmp_path / "s" / "rollout-2026-03-01T00-00-00-aaaaaaaa-1111-2222-3333-444444444444.jsonl",
        "aaaaaaaa-1111-2222-3333-444444444444",
    )
    arguments = json.dumps({"cmd": "gh pr create --title 'Cart fix' --body ''", "workdir": "/home/dev/shop"})
    rollout.write(
        rollout.meta(),
        *rollout.prompt("open a pull request for the cart fix"),
        rollout.line(
            "response_item", {"type": "function_call", "name": "exec_command", "arguments": arguments, "call_id": "c1"}
        ),
        rollout.line(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": "Output:\nhttps://github.com/dev/shop/pull/77\n",
            },
        ),
        *rollout.answer("Opened the pull request."),
    )
    run("index", str(tmp_path / "s"), "--agent", "codex")
    found = json.loads(run("sessions", "list", "--pr", "77", "--json").output)
    assert [s["session_id"] for s in found] == ["aaaaaaaa-1111-2222-3333-444444444444"]
    shown = json.loads(run("show", "aaaaaaaa", "--json").output)
    assert shown["session"]["prs"] == [
        {"pr_number": 77, "pr_url": "https://github.com/dev/shop/pull/77", "repository": "dev/shop", "source": "text"}
    ]


def test_gemini_shell_output_links_the_session(conn, config: Config, tmp_path: Path) -> None:
    chat = GeminiChat(tmp_path / "tmp" / "shop" / "chats" / "session-2026-03-01T00-00-abcd.jsonl", "g1")
    call = GeminiChat.call("run_shell_command", command="glab mr create --fill")
    call["result"] = [
        {
            "functionResponse": {
                "id": call["id"],
                "name": "run_shell_command",
                "response": {"output": "https://gitlab.com/dev/shop/-/merge_requests/5"},
            }
        }
    ]
    chat.write(chat.user("open a merge request"), chat.gemini("", call), chat.gemini("Done."))
    index_transcripts(conn, config, discover({"gemini": [tmp_path / "tmp"]}))
    (found,) = pull_requests_of(conn, "g1")
    assert (found["pr_number"], found["repository"]) == (5, "dev/shop")
    assert gemini.classify(chat.path) is not None and codex.classify(chat.path) is None
