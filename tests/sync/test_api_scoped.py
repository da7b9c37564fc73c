"""`/v1/search` with `in=tools` and `role=` over a real socket, and `memex search --computer` asking for
them: the same results as the local search, with a tool output's secrets redacted before they leave."""

from __future__ import annotations

import http.client
import json

import pytest

from secret_corpus import token
from synctools import TOKEN, Computer
from transcripts import ClaudeSession, text, tool_use

SESSION = "7001a5c0-1111-2222-3333-444444444444"
KEY = "ghp_" + token("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 36)


@pytest.fixture
def alpha(computers) -> Computer:
    computer = computers("alpha")
    session = ClaudeSession(computer.claude_dir / "-home-dev-shop" / f"{SESSION}.jsonl", SESSION)
    session.write(session.prompt("why does the fetch keep failing?"))
    session.write(session.assistant(text("Let me run the tests."), tool_use("toolu_1", "Bash", command="pytest")))
    output = f"E   RuntimeError: retryFetchOnFailure gave up after 3 attempts\nGITHUB_TOKEN={KEY}\n1 failed"
    session.write(session.tool_result("toolu_1", output))
    session.write(session.assistant(text("The retry helper gives up too early.")))
    session.write(session.prompt("thanks"))
    computer.start(serve_api=True)
    computer.step()
    return computer


def get(computer: Computer, query: str) -> tuple[int, dict]:
    assert computer.daemon is not None and computer.daemon.api is not None
    connection = http.client.HTTPConnection("127.0.0.1", computer.daemon.api.port, timeout=120)
    try:
        connection.request("GET", "/v1/search?" + query, headers={"Authorization": f"Bearer {TOKEN}"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def test_in_tools_over_http_finds_the_output_redacted(alpha: Computer) -> None:
    status, body = get(alpha, "q=retryFetchOnFailure&in=tools")
    assert status == 200 and body["computer"] == "alpha"
    [hit] = body["results"]
    assert hit["source"] == "tool" and hit["tool_name"] == "Bash" and hit["session_id"] == SESSION
    assert "retryFetchOnFailure" in hit["matched_chunk"] and "[REDACTED" in hit["matched_chunk"]
    assert KEY[4:20] not in json.dumps(body)
    # Not in the conversation; by role, the assistant's words.
    assert get(alpha, "q=retryFetchOnFailure&mode=lexical")[1]["results"] == []
    assert get(alpha, "q=retryFetchOnFailure")[1]["results"] == []
    assert [h["session_id"] for h in get(alpha, "q=helper+early&role=assistant")[1]["results"]] == [SESSION]
    assert get(alpha, "q=helper+early&role=user")[1]["results"] == []
    # Both: the output's hit, and the conversation's for words said.
    assert [h["source"] for h in get(alpha, "q=retryFetchOnFailure&in=all")[1]["results"]] == ["tool"]
    assert [h["source"] for h in get(alpha, "q=retry+helper&in=all")[1]["results"]][:1] == ["turn"]


def test_bad_scope_or_role_is_400(alpha: Computer) -> None:
    assert get(alpha, "q=x&in=everything")[0] == 400
    assert get(alpha, "q=x&role=system")[0] == 400
    status, body = get(alpha, "q=x&in=tools&role=user")
    assert status == 400 and "role" in body["error"]


def test_search_computer_passes_scope_and_role(alpha: Computer, computers) -> None:
    beta = computers("beta")
    beta.start()
    alpha.step()
    beta.step()
    result = beta.cli("search", "--computer", "alpha", "--in", "tools", "--json", "retryFetchOnFailure")
    assert result.exit_code == 0, result.output
    [hit] = json.loads(result.stdout)
    assert hit["source"] == "tool" and hit["tool_name"] == "Bash" and KEY[4:20] not in result.stdout
    result = beta.cli("search", "--computer", "alpha", "--role", "user", "--json", "fetch failing")
    assert [h["prompt_text"] for h in json.loads(result.stdout)] == ["why does the fetch keep failing?"]
