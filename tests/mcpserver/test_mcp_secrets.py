"""What `memex mcp` hands an agent goes to that agent's model provider: every tool's answer is redacted
as search results over the HTTP API and hook injections are (a session's own conversation, its turns with
their tool output, its title), checked through the MCP SDK's client over stdio."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from mcp import Client
from test_mcp_server import call, serve

from secret_corpus import ALNUM, UPPER, token
from transcripts import ClaudeSession, text, tool_use

pytestmark = pytest.mark.subprocess

SESSION = "5ec7e75e-aaaa-bbbb-cccc-444444444444"
AWS = "AKIA" + token(UPPER.replace("0", "").replace("1", ""), 16)
GITHUB = "ghp_" + token(ALNUM, 36)
PASSWORD = "hunter2" + token(ALNUM, 9)
# A .env that went through `base64` (as a Kubernetes Secret is made): the blob alone decodes to the key.
ENV_BLOB = base64.b64encode(f"DB_HOST=db.internal\nDB_PASSWORD={token(ALNUM, 18)}\n".encode()).decode()
SECRETS = (AWS, GITHUB, PASSWORD, ENV_BLOB)


@pytest.fixture
def planted(home: Path, run, tmp_path: Path) -> Path:
    """A Claude Code session whose title, prompts, answers and tool output hold the secrets, indexed."""
    folder = tmp_path / "claude-projects" / "-home-dev-vault"
    session = ClaudeSession(folder / f"{SESSION}.jsonl", SESSION, cwd="/home/dev/vault")
    session.write(session.prompt(f"deploy pangolin with AWS_ACCESS_KEY_ID={AWS} please"))
    session.write(
        session.assistant(
            text(f"The pangolin deploy uses the token {GITHUB}; let me read the env file."),
            tool_use("t1", "Bash", command="cat .env"),
        )
    )
    session.write(session.tool_result("t1", f"PANGOLIN_HOST=db.internal\npassword={PASSWORD}\nDEBUG=0"))
    session.write(session.assistant(text(f"pangolin is configured: password={PASSWORD} and key {AWS}.")))
    session.write(session.prompt(f"pangolin secret for the cluster: {ENV_BLOB}"))
    session.write(session.assistant(text("Put it in the Secret's data.")))
    session.write(session.prompt(f"pangolin again: is {GITHUB} still valid?"))
    session.write(session.assistant(text("Rotate it, pangolin keys should not be pasted.")))
    assert run("index", str(folder)).exit_code == 0
    return home


def leaks(answer: dict) -> list[str]:
    blob = json.dumps(answer)
    return [secret for secret in SECRETS if secret in blob]


def test_no_tool_answer_holds_a_secret_of_the_session(planted: Path) -> None:
    async def check(client: Client) -> None:
        answers = {
            "mirror": await call(client, "show_session", session=SESSION[:8]),
            "turns": await call(client, "show_session", session=SESSION[:8], view="turns"),
            "list": await call(client, "list_sessions"),
            "search": await call(client, "search", query="pangolin", mode="lexical", limit=5),
            "search tools": await call(client, "search", query="PANGOLIN_HOST", scope="tools"),
            "search all": await call(client, "search", query="pangolin", mode="lexical", scope="all"),
            "search user": await call(client, "search", query="pangolin", role="user"),
        }
        # The tools did answer with the session (the secrets are not missing for lack of results).
        assert len(answers["mirror"]["messages"]) == 6 and len(answers["turns"]["turns"]) == 3
        assert [s["session_id"] for s in answers["list"]["sessions"]] == [SESSION]
        assert all(answers[name]["results"] for name in ("search", "search tools", "search all", "search user"))
        for name, answer in answers.items():
            assert leaks(answer) == [], name
        blob = json.dumps(answers["turns"])
        assert "[REDACTED:aws-access-key]" in blob and "[REDACTED:github-token]" in blob
        assert "[REDACTED:secret-assignment]" in blob and "[REDACTED:base64-secret]" in blob
        assert "[REDACTED:aws-access-key]" in answers["list"]["sessions"][0]["title"]

    serve(check)
