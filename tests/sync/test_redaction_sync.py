"""Secrets planted in a session on A never reach B, nor Redis, nor A's API answers."""

from __future__ import annotations

import json
import random
import string
import zlib

import redis

from memex.sync.client import ApiClient
from memex.sync.keys import Keys
from synctools import TOKEN, settle
from transcripts import ClaudeSession, text

rng = random.Random(11)
ALNUM = string.ascii_letters + string.digits


def token(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


# Fake secrets in the formats providers issue (built at run time, never real).
AWS_KEY = "AKIA" + token(string.ascii_uppercase + string.digits, 16)
AWS_SECRET = token(ALNUM + "/+", 40)
GITHUB = "ghp_" + token(ALNUM, 36)
OPENAI = "sk-proj-" + token(ALNUM + "-_", 74) + "T3BlbkFJ" + token(ALNUM + "-_", 74)
SLACK = "xoxb-" + token(string.digits, 11) + "-" + token(string.digits, 12) + "-" + token(ALNUM, 24)
ANTHROPIC = "sk-ant-api03-" + token(ALNUM + "-_", 93) + "AA"
KEY_BODY = "\n".join(token(ALNUM + "+/", 64) for _ in range(6))
PRIVATE_KEY = f"-----BEGIN RSA PRIVATE KEY-----\n{KEY_BODY}\n-----END RSA PRIVATE KEY-----"
URL_PASSWORD = "Tr0ub4dor-" + token(ALNUM, 8)
SECRETS = [AWS_KEY, AWS_SECRET, GITHUB, OPENAI, SLACK, ANTHROPIC, KEY_BODY, URL_PASSWORD]
SESSION_ID = "cccccccc-1111-2222-3333-444444444444"


def plant(root) -> None:
    session = ClaudeSession(root / "-home-dev-infra" / f"{SESSION_ID}.jsonl", SESSION_ID, cwd="/home/dev/infra")
    session.write(session.custom_title(f"rotate {GITHUB} before the pangolin deploy"))
    session.write(
        session.prompt(
            "The pangolin deploy fails. My env:\n"
            f"AWS_ACCESS_KEY_ID={AWS_KEY}\naws_secret_access_key = {AWS_SECRET}\n"
            f"OPENAI_API_KEY={OPENAI}\nSLACK_BOT_TOKEN={SLACK}\n"
            f"DATABASE_URL=postgres://deploy:{URL_PASSWORD}@db.internal:5432/pangolin"
        )
    )
    session.write(session.assistant(text(f"Your deploy key is wrong; use this one:\n{PRIVATE_KEY}\nand {ANTHROPIC}.")))
    session.write(session.prompt("thanks, the pangolin deploy works now"))


def assert_clean(blob: str) -> None:
    for secret in SECRETS:
        assert secret not in blob


def test_planted_secrets_are_absent_on_b(computers, redis_url: str, prefix: str) -> None:
    a, b = computers("alpha"), computers("beta")
    plant(a.claude_dir)
    a.start(serve_api=True)
    b.start()
    settle(a, b)

    received = b.mirrors("alpha")[SESSION_ID]
    assert_clean(received["conversation_text"] + (received["title"] or "") + received["metadata"])
    for kind in ("aws-access-key", "aws-secret-key", "openai-key", "slack-token", "private-key", "url-password"):
        assert f"[REDACTED:{kind}]" in received["conversation_text"], kind
    assert "[REDACTED:github-token]" in received["title"]
    assert "pangolin deploy" in received["conversation_text"]  # the conversation itself is all there
    assert json.loads(received["metadata"])["redacted"] >= 8
    # The spans still point at the right places after redaction.
    shown = json.loads(b.cli("show", SESSION_ID, "--json").stdout)
    assert shown["mirror"]["messages"][-1] == {
        "role": "user",
        "text": "thanks, the pangolin deploy works now",
        "timestamp": shown["mirror"]["messages"][-1]["timestamp"],
    }
    for secret in (GITHUB, AWS_KEY, SLACK):
        assert json.loads(b.cli("search", secret, "--json").stdout) == []

    # Nor in Redis: neither the stream nor the latest-mirror hash.
    client = redis.Redis.from_url(redis_url)
    keys = Keys(prefix)
    payloads = [fields[b"mirror"] for _, fields in client.xrange(keys.stream)]
    payloads.append(client.hget(keys.latest("alpha"), SESSION_ID))
    for payload in payloads:
        assert_clean(zlib.decompress(payload).decode())

    # Nor in what A's API answers (search and mirror); the raw transcript is the user's own file, as it is.
    assert a.daemon is not None and a.daemon.api is not None
    api = ApiClient(a.daemon.api.url, TOKEN, timeout=120)  # the first search loads the model
    assert_clean(json.dumps(api.search("pangolin", 10)))
    assert_clean(json.dumps(api.mirror(SESSION_ID)))
    assert GITHUB.encode() in b"".join(api.raw(SESSION_ID))
    # A's own store keeps its local mirror whole: redaction happens on the way out.
    assert GITHUB in a.mirrors("alpha")[SESSION_ID]["title"]


def test_every_text_of_a_hit_leaves_redacted_through_the_api_as_through_mcp(tmp_path) -> None:
    """A subagent's name is a text its agent wrote (Codex nicknames, Claude's agentType from a user's own
    agent file): the daemon's API redacts it, as the MCP server does, with the hit's other texts."""
    from memex.mcpserver.secrets import redacted_hit as for_mcp
    from memex.store.db import connect
    from memex.sync.outbound import redacted_hit as for_api

    token = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    hit = {
        "source": "turn",
        "full_text": f"User: use {token}",
        "matched_chunk": f"use {token}",
        "prompt_text": f"use {token}",
        "subagent_name": f"agent-{token}",
        "subagent_description": f"push with {token}",
        "title": "deploy",
    }
    conn = connect(tmp_path / "memex.db")
    try:
        for door in (for_api, for_mcp):
            clean = door(conn, hit, "use")
            assert not any(token in str(value) for value in clean.values()), (door.__module__, clean)
    finally:
        conn.close()
