"""Secrets are redacted from what leaves the computer; ordinary text is left alone."""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import pytest

from memex.sync.redact import RULES, Rule, redact

rng = random.Random(7)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def token(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits

# Fake secrets in the formats providers issue (built at run time, never real).
SECRETS = {
    "aws-access-key": "AKIA" + token(UPPER, 16),
    "github-token": "ghp_" + token(ALNUM, 36),
    "anthropic-key": "sk-ant-api03-" + token(ALNUM + "-_", 93) + "AA",
    "openai-key": "sk-proj-" + token(ALNUM + "-_", 74) + "T3BlbkFJ" + token(ALNUM + "-_", 74),
    "google-api-key": "AIza" + token(ALNUM + "-_", 35),
    "slack-token": "xoxb-" + token(string.digits, 11) + "-" + token(string.digits, 12) + "-" + token(ALNUM, 24),
    "stripe-key": "sk_live_" + token(ALNUM, 24),
    "huggingface-token": "hf_" + token(ALNUM, 34),
    "gitlab-token": "glpat-" + token(ALNUM, 20),
    "npm-token": "npm_" + token(ALNUM, 36),
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + token(ALNUM + "-_", 43),
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_provider_tokens_are_redacted(kind: str) -> None:
    secret = SECRETS[kind]
    text, count = redact(f"I exported it: export TOKEN={secret} and ran the deploy")
    assert secret not in text and count >= 1
    assert f"[REDACTED:{kind}]" in text or "[REDACTED:" in text
    assert text.startswith("I exported it: export TOKEN=") and text.endswith(" and ran the deploy")


def test_private_key_block() -> None:
    body = "\n".join(token(ALNUM + "+/", 64) for _ in range(5))
    pem = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----"
    text, count = redact(f"here is my key:\n{pem}\nthanks")
    assert body not in text and "[REDACTED:private-key]" in text and text.endswith("thanks") and count == 1


def test_password_in_url_keeps_user_and_host() -> None:
    text, _ = redact("DATABASE_URL=postgres://app:s3cr3t-Pa55@db.internal:5432/shop")
    assert "s3cr3t-Pa55" not in text
    assert "postgres://app:[REDACTED:url-password]@db.internal:5432/shop" in text


def test_aws_secret_and_assignments() -> None:
    secret = token(ALNUM + "/+", 40)
    text, _ = redact(f"aws_secret_access_key = {secret}\npassword: hunter2hunter2\nAPI_KEY='{token(ALNUM, 32)}'")
    assert secret not in text and "hunter2hunter2" not in text and "API_KEY='[REDACTED:" in text


def test_bearer_header() -> None:
    value = token(ALNUM, 40)
    text, _ = redact(f"curl -H 'Authorization: Bearer {value}' https://api.example.com")
    assert value not in text and "Bearer [REDACTED:bearer-token]" in text


def test_ordinary_text_untouched() -> None:
    ordinary = (
        "Fixed parse_config_file in src/memex/config_loader.py; password hashing uses bcrypt.\n"
        "git worktree remove ../old && pytest -q tests/test_api.py::test_token_refresh\n"
        "Set password: ${DB_PASSWORD} in the env; the api_key field is <your key>.\n"
        "https://github.com/org/repo/pull/42 and commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"
    )
    text, count = redact(ordinary)
    assert text == ordinary and count == 0


def _every_rule(text: str) -> tuple[str, int]:
    """Redaction without the triggers' shortcut: every pattern over the whole text."""
    count = 0
    for rule in RULES:

        def replace(match: re.Match[str], rule: Rule = rule) -> str:
            start, end = match.span(rule.group)
            whole = match.group(0)
            return whole[: start - match.start()] + f"[REDACTED:{rule.kind}]" + whole[end - match.start() :]

        text, found = rule.pattern.subn(replace, text)
        count += found
    return text, count


def test_triggers_only_skip_what_cannot_match() -> None:
    """The shortcut (a rule runs only when one of its trigger strings occurs) changes no result: real
    transcripts' text, and text with secrets in any case and position."""
    texts = [path.read_text(errors="replace")[:40_000] for path in sorted(FIXTURES.rglob("*.json*"))]
    pieces = [*SECRETS.values(), "PassWord: hunter2hunter2", "AWS_SECRET_ACCESS_KEY=" + token(ALNUM, 40)]
    pieces += ["Authorization: BEARER " + token(ALNUM, 30), "mysql://root:r00tpass@db/x", "client_Secret: abcdefghij"]
    for _ in range(200):
        words = [rng.choice(pieces) if rng.random() < 0.2 else token(ALNUM, rng.randint(1, 9)) for _ in range(40)]
        texts.append(" ".join(words))
    for text in texts:
        assert redact(text) == _every_rule(text)
