"""Secrets are redacted from what leaves the computer; ordinary text is left alone."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from memex.sync.redact import RULES, Span, clear_cut, redact, redact_slice, secret_spans
from secret_corpus import CORPUS, Secret

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


def _every_rule(text: str) -> list[Span]:
    """Where the secrets are without the triggers' shortcut: every pattern over the whole text."""
    found = []
    for rule in RULES:
        for match in rule.pattern.finditer(text):
            group = next((g for g in rule.groups if match.group(g) is not None), 0)
            if rule.accept is None or rule.accept(match):
                found.append(Span(*match.span(group), rule.kind))
    found.sort(key=lambda s: (s.start, -s.end))
    merged: list[Span] = []
    for span in found:
        if merged and span.start < merged[-1].end:
            merged[-1] = Span(merged[-1].start, max(merged[-1].end, span.end), merged[-1].kind)
        else:
            merged.append(span)
    return merged


def test_triggers_only_skip_what_cannot_match() -> None:
    """The shortcut (a rule runs only when one of its trigger strings occurs) changes no result: real
    transcripts' text, and text with secrets in any case and position."""
    texts = [path.read_text(errors="replace")[:40_000] for path in sorted(FIXTURES.rglob("*.json*"))]
    pieces = [*SECRETS.values(), *(s.text for s in CORPUS), "PassWord: hunter2hunter2"]
    pieces += ["Authorization: BEARER " + token(ALNUM, 30), "mysql://root:r00tpass@db/x", "client_Secret: abcdefghij"]
    pieces += ["AWS_SECRET_ACCESS_KEY=" + token(ALNUM, 40), "ACCOUNTKEY=" + token(ALNUM, 60), "Token: a1" + "b" * 12]
    for _ in range(200):
        words = [rng.choice(pieces) if rng.random() < 0.2 else token(ALNUM, rng.randint(1, 9)) for _ in range(40)]
        texts.append(" ".join(words))
    for text in texts:
        assert secret_spans(text) == _every_rule(text)


@pytest.mark.parametrize("secret", CORPUS, ids=lambda s: s.name)
def test_every_format_of_the_corpus_is_redacted(secret: Secret) -> None:
    text, count = redact(f"I ran this:\n{secret.text}\nand it worked")
    assert secret.leaked_in(text) is None, text
    assert count >= 1 and text.startswith("I ran this:\n") and text.endswith("\nand it worked")
    if secret.kind:
        assert f"[REDACTED:{secret.kind}]" in text


@pytest.mark.parametrize("secret", CORPUS, ids=lambda s: s.name)
def test_a_slice_is_redacted_as_part_of_its_text(secret: Secret) -> None:
    """Wherever a slice begins or ends in a secret (a chunk border), no piece of it is left."""
    whole = f"some prose first, then\n{secret.text}\nand more prose after it."
    first = whole.index(secret.core[:12])
    last = first + len(secret.core)
    for cut in sorted({first + 1, first + len(secret.core) // 3, first + len(secret.core) // 2, last - 2}):
        for start, end in ((0, cut), (cut, len(whole)), (cut - 5, cut + 20)):
            piece, _ = redact_slice(whole, start, end)
            assert secret.leaked_in(piece) is None, (start, end, piece)
            # Without the rest of the text, the piece alone may no longer be recognised.
            # The whole text's secrets found once serve every piece of it alike.
            assert redact_slice(whole, start, end, secret_spans(whole)) == (piece, _)
    assert redact_slice(whole, 0, 10) == (whole[:10], 0)


@pytest.mark.parametrize("secret", CORPUS, ids=lambda s: s.name)
def test_a_cut_never_falls_inside_a_secret(secret: Secret) -> None:
    whole = f"prose before\n{secret.text}\nprose after"
    first = whole.index(secret.core[:12])
    for limit in (first + 1, first + len(secret.core) // 2, first + len(secret.core) - 1):
        cut = clear_cut(whole, limit)
        assert cut <= limit and secret.leaked_in(whole[:cut]) is None
    assert clear_cut(whole, len(whole) + 5) == len(whole)
    assert clear_cut("plain words only", 5) == 5


@pytest.mark.parametrize("secret", CORPUS, ids=lambda s: s.name)
def test_a_piece_cut_just_after_a_secret_still_has_it_redacted(secret: Secret) -> None:
    """A cut (a title, a tool summary's command) after a secret but before what tells it is one (the `@host`
    after a URL's password, the closing quote of a quoted value, `| sudo -S` after `echo …`) would leave a
    piece where it is no longer recognised: the secret goes with the part cut off."""
    whole = f"prose before\n{secret.text}\nprose after"
    for limit in range(whole.index(secret.core[:12]), len(whole)):
        piece = whole[: clear_cut(whole, limit)]
        assert secret.leaked_in(redact(piece)[0]) is None, piece


def test_urls_that_hold_no_password_are_left_alone() -> None:
    ordinary = (
        "open http://localhost:5173/@vite/client and https://registry.npmjs.org/@types/node; "
        "git@github.com:org/repo.git; mailto:dev@example.com; http://[::1]:8080/health"
    )
    assert redact(ordinary) == (ordinary, 0)


def test_references_to_secrets_are_not_secrets() -> None:
    code = "apiKey: process.env.OPENAI_API_KEY,\nclient_secret: env.AUTH0_CLIENT_SECRET\npassword: self.config.password"
    assert redact(code) == (code, 0)


def test_other_flags_and_names_like_the_password_ones_are_left_alone() -> None:
    """`-p` is a port, a parent or a prompt to most commands; a name holding `pass` is not a password."""
    ordinary = (
        "mkdir -p build/out && docker run -p 8080:80 nginx && ssh -p 2222 me@host && mysql -u root -p shop\n"
        'curl -u "$API_USER:$API_PASS" https://api.example.com && curl -u admin https://x\n'
        "bypass=feature-flag-1234 compass: north-by-northwest PASS_THROUGH=true\n"
        'echo "{\\"password\\": \\"${DB_PASSWORD}\\"}" and docker login -u me --password-stdin\n'
        '"maxTokens": 4096, tokenizer: gpt2bpe12345678, cancellationToken: CancellationToken.None\n'
        '"auth": "required", "auth": "oauth2-pkce-flow"\n'
        "ssh-keygen -t ed25519 -N '' -f key && vault login -method=oidc && redis-cli -a $REDIS_PW ping\n"
        "echo $TOKEN | docker login ghcr.io -u me --password-stdin; echo done | tee x; gh secret list\n"
        "run vault login\nthen go on; npm config set registry https://x; mongo --port 27017; the openssl -k flag\n"
        "Set-Cookie: theme=dark; Path=/ and a cookie: a small file the browser keeps, name=value pairs"
    )
    assert redact(ordinary) == (ordinary, 0)


def test_a_hit_leaving_the_computer_marks_the_query_in_its_redacted_chunk() -> None:
    """The spans of a hit point into its chunk as sent: moved when redaction changed the chunk, the
    search's own when it did not."""
    import sqlite3

    from memex.search.highlight import spans_json
    from memex.sync.outbound import redacted_hit

    key = "sk-ant-api03-" + token(ALNUM, 90)
    for chunk in (f"token {key} then deploy the deploy script", "nothing secret: deploy the deploy script"):
        full = f"before. {chunk}. after"
        hit = {"source": "turn", "full_text": full, "matched_chunk": chunk, "spans": spans_json(chunk, "deploy")}
        clean = redacted_hit(sqlite3.connect(":memory:"), hit, "deploy")
        assert key not in clean["matched_chunk"] and key not in clean["full_text"]
        assert clean["spans"] == spans_json(clean["matched_chunk"], "deploy")
        assert [clean["matched_chunk"][s:e] for s, e in clean["spans"]] == ["deploy", "deploy"]
