"""Secrets in an encoding the plain rules do not read: base64 (a `.env` piped through `base64`, a
Kubernetes Secret's `data:`), URL encoding (`password%3D…`) and JSON escaped twice (JSON in a string in
JSON). Ordinary base64 (images, hashes, integrity strings), URL-encoded queries and escaped JSON stay."""

from __future__ import annotations

import base64
import hashlib
import random
import string
import textwrap

import pytest

from memex.sync.redact import clear_cut, redact, redact_slice

rng = random.Random(11)
ALNUM = string.ascii_letters + string.digits


def token(n: int) -> str:
    return "".join(rng.choice(ALNUM) for _ in range(n))


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


PASSWORD = token(16)
API_KEY = token(32)
ENV = f"DB_HOST=db.internal\nDB_PASSWORD={PASSWORD}\nDEBUG=0\n"
DOCKER_CONFIG = '{"auths":{"ghcr.io":{"auth":"' + b64(f"me:{PASSWORD}") + '"}}}'

ENCODED = {
    "base64 of a .env, one line": (f"$ base64 -w0 .env\n{b64(ENV)}\n$ ", b64(ENV)),
    "base64 of a .env, decoded on a command line": (f"echo {b64(ENV)} | base64 -d > .env", b64(ENV)),
    "base64 of a .env, wrapped at 76 like GNU base64": (
        "$ cat .env | base64\n" + "\n".join(textwrap.wrap(b64(ENV + f"API_KEY={API_KEY}\n"), 76)) + "\n$ ",
        b64(ENV + f"API_KEY={API_KEY}\n")[:60],
    ),
    "base64 of a lowercase assignment": (
        f"the blob is {b64(f'password: {PASSWORD}')} ok",
        b64(f"password: {PASSWORD}"),
    ),
    "kubernetes secret data, credentials": (
        f"apiVersion: v1\nkind: Secret\ndata:\n  credentials: {b64(PASSWORD)}\n  username: YWRtaW4=\n",
        b64(PASSWORD),
    ),
    "kubernetes secret data, a token as json": (
        f'{{"kind": "Secret", "data": {{"auth-token": "{b64(PASSWORD)}", "user": "YWRtaW4="}}}}',
        b64(PASSWORD),
    ),
    "kubernetes docker config secret": (
        f"data:\n  .dockerconfigjson: {b64(DOCKER_CONFIG)}\ntype: kubernetes.io/dockerconfigjson",
        b64(DOCKER_CONFIG),
    ),
    "url-encoded password": (f"curl -d 'user=bob&password%3D{PASSWORD}&next=1' https://x", PASSWORD),
    "url-encoded query in a log": (f"GET /login?user%3Dbob%26password%3D{PASSWORD}%26x%3D1 HTTP/1.1", PASSWORD),
    "url-encoded json": (f"body=%7B%22api_key%22%3A%22{API_KEY}%22%7D", API_KEY),
    "url-encoded client secret with a space": (f"client_secret%20%3D%20{API_KEY}", API_KEY),
    "json escaped twice": (f'{{"cmd": "curl -d \\"{{\\\\\\"api_key\\\\\\": \\\\\\"{API_KEY}\\\\\\"}}\\""}}', API_KEY),
    "json escaped twice, password": (f'\\\\\\"password\\\\\\":\\\\\\"{PASSWORD}\\\\\\"', PASSWORD),
}


@pytest.mark.parametrize("name", sorted(ENCODED))
def test_encoded_secrets_are_redacted(name: str) -> None:
    text, secret = ENCODED[name]
    clean, count = redact(f"before\n{text}\nafter")
    assert secret not in clean and PASSWORD not in clean and API_KEY not in clean, clean
    assert count >= 1 and clean.startswith("before\n") and clean.endswith("\nafter")


def leaked(secret: str, text: str) -> bool:
    """Whether a piece of `secret` (12 characters) is in `text`."""
    return any(secret[i : i + 12] in text for i in range(max(1, len(secret) - 11)))


@pytest.mark.parametrize("name", sorted(ENCODED))
def test_a_cut_or_a_slice_never_leaves_a_piece_of_an_encoded_secret(name: str) -> None:
    """A title cut or a chunk border inside a blob or a value: the piece is redacted as part of the whole,
    and a cut moves before the secret (a piece of a blob alone decodes to part of the .env)."""
    text, secret = ENCODED[name]
    whole = f"prose before\n{text}\nprose after"
    first = whole.index(secret[:12])
    for limit in range(first, first + len(secret), 3):
        piece = whole[: clear_cut(whole, limit)]
        assert not leaked(secret, redact(piece)[0]), (limit, piece)
        for start, end in ((0, limit), (limit, len(whole))):
            assert not leaked(secret, redact_slice(whole, start, end)[0]), (start, end)


def test_kubernetes_data_keeps_what_names_no_secret() -> None:
    clean, _ = redact(ENCODED["kubernetes secret data, credentials"][0])
    assert "username: YWRtaW4=" in clean and "credentials: [REDACTED:" in clean


def test_a_base64_blob_is_redacted_whole() -> None:
    clean, count = redact(f"echo {b64(ENV)} | base64 -d")
    assert clean == "echo [REDACTED:base64-secret] | base64 -d" and count == 1


def test_ordinary_base64_and_encodings_are_left_alone() -> None:
    png = base64.b64encode(bytes(rng.randrange(256) for _ in range(600))).decode()
    prose = "the token bucket refills; password hashing uses bcrypt and the secret sauce is caching"
    ordinary = [
        f"![chart](data:image/png;base64,{png})",
        f"readme: {b64(prose)}",  # text about secrets, none in it
        "config: " + b64("DEBUG=0\nDB_HOST=db.internal\nPORT=8080\n"),  # an env file without secrets
        '"integrity": "sha512-' + base64.b64encode(hashlib.sha512(b"x").digest()).decode() + '"',
        "sha256 " + hashlib.sha256(b"x").hexdigest() + " and commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
        "AbstractSingletonProxyFactoryBeanTokenKeyPasswordSecret and getCredentialsProviderChain()",
        "username: YWRtaW4=\nhost: ZGIuaW50ZXJuYWw=\nkey: abcdefgh\nsort_key: timestamp\n",
        "data:\n  tokenizer: Z3B0Mg==\n  api-endpoint: aHR0cHM6Ly9hcGkuZXhhbXBsZS5jb20=\n",
        "https://www.google.com/search?q=password+reset+form&oq=token%3A and q%3Dhello%26lang%3Den",
        "password%3D%24%7BDB_PASSWORD%7D and api_key%3D%3Cyour-key%3E",
        '{"cmd": "echo \\"{\\\\\\"name\\\\\\": \\\\\\"widget-factory-2\\\\\\"}\\""}',
        '\\\\\\"password\\\\\\": \\\\\\"${DB_PASSWORD}\\\\\\"',
    ]
    for text in ordinary:
        assert redact(text) == (text, 0), text


def test_the_encoded_rules_triggers_skip_only_what_cannot_match() -> None:
    """The rules that check what precedes a match (a secret's name, `data`) or what a blob decodes to still
    find nothing in a text without their trigger strings: the shortcut changes no result."""
    from test_redact import _every_rule

    from memex.sync.redact import secret_spans

    pieces = [text for text, _ in ENCODED.values()]
    pieces += ["data: x", "credentials: " + b64(PASSWORD), b64("api_key: " + API_KEY), "%3D" + PASSWORD]
    for _ in range(200):
        words = [rng.choice(pieces) if rng.random() < 0.3 else token(rng.randint(1, 9)) for _ in range(30)]
        text = " ".join(words)
        assert secret_spans(text) == _every_rule(text)
