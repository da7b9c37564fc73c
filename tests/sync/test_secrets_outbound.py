"""Every secret of the corpus (tests/secret_corpus.py), planted in transcripts, is absent from everything
that leaves the computer: what reached Redis (the stream and the latest-mirror hash), what the HTTP API
answers over a real socket (/v1/search, /v1/sessions/<id>/mirror), and what an LLM endpoint receives to
summarise a session. Secrets are also placed where the text gets cut (a chunk border, the 20,000-character
cut of a message, the 200,000-character cut of a turn, a title, a command in a tool summary): redaction
sees the whole text before any cut, so no piece of a secret leaves either."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote

import pytest
import redis

from memex.embed.worker import drain, worker_lock
from memex.store.db import connect
from memex.sync.client import ApiClient
from memex.sync.keys import Keys
from memex.sync.outbound import redacted_hit
from secret_corpus import CORPUS, Secret, pem, token
from synctools import TOKEN, Computer
from transcripts import ClaudeSession, text, tool_use

pytestmark = [pytest.mark.model]

MAIN = "5ec7e75e-1111-2222-3333-444444444444"
LONG = "5ec7e75e-2222-2222-3333-444444444444"
ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

# Secrets placed where text is cut.
TITLE_KEY = token(ALNUM, 95)  # the title is the first prompt cut to 100 characters: the cut falls inside
COMMAND_TOKEN = token(ALNUM, 40)  # a tool summary cuts each command to 120 characters
MESSAGE_KEY = token(ALNUM, 95)  # a mirror message is cut at 20,000 characters
TURN_KEY = token(ALNUM, 95)  # a turn's text is cut at 200,000 characters
BIG_PEM, BIG_BODY = pem("RSA PRIVATE KEY", lines=60)  # longer than a chunk: chunks cut it
CUT = [
    Secret("title cut", "", TITLE_KEY),
    Secret("command cut", "", COMMAND_TOKEN),
    Secret("message cut", "", MESSAGE_KEY),
    Secret("turn cut", "", TURN_KEY),
    Secret("key cut by chunks", "", BIG_BODY),
]


def anchor(i: int) -> str:
    """A word found only next to secret number `i` (a search for it returns the chunk around it)."""
    return f"marker{i:02d}zz"


def plant(computer: Computer) -> None:
    folder = computer.claude_dir / "-home-dev-vault"
    session = ClaudeSession(folder / f"{MAIN}.jsonl", MAIN, cwd="/home/dev/vault")
    # The first prompt names the session: 100 characters, cut inside the key.
    session.write(session.prompt(f"rotate the leaked key sk-ant-oat01-{TITLE_KEY} before the pangolin release"))
    session.write(
        session.assistant(
            text("Let me call the deploy hook."),
            tool_use(
                "t1",
                "Bash",
                command=f"curl -sS -X POST https://deploy.example.com/v1/hooks/production/trigger?wait=1 "
                f'-H "Authorization: Bearer {COMMAND_TOKEN}"',
            ),
        )
    )
    for i, secret in enumerate(CORPUS):
        session.write(session.prompt(f"pangolin step {i}: my config has\n{secret.text}\n{anchor(i)} what now?"))
        session.write(session.assistant(text(f"Noted ({anchor(i)}): never paste\n{secret.text}\ninto a chat.")))
    session.write(session.prompt(f"and this deploy key (pangolin):\n{BIG_PEM}\n{anchor(99)} is it safe?"))
    session.write(session.assistant(text("No: rotate it.")))
    # A message longer than a mirror keeps (20,000 characters): the cut falls inside a key.
    filler = ("pangolin filler text " * 1000)[: 20_000 - 30]
    session.write(session.prompt(f"{filler} sk-ant-oat01-{MESSAGE_KEY} the end"))
    session.write(session.assistant(text("That was long.")))
    session.write(session.prompt("thanks, pangolin done"))
    # A turn longer than a turn keeps (200,000 characters): the cut falls inside a key.
    long = ClaudeSession(folder / f"{LONG}.jsonl", LONG, cwd="/home/dev/vault")
    long.write(long.prompt("dump the pangolin log please"))
    body = ("pangolin log line " * 12_000)[: 200_000 - 40]
    long.write(long.assistant(text(f"{body} sk-ant-oat01-{TURN_KEY} end of log")))
    long.write(long.prompt("ok"))


def leaks(blob: str) -> list[str]:
    """The secrets (corpus and cut ones) a piece of which is in `blob`."""
    return [f"{s.name}: {piece!r}" for s in [*CORPUS, *CUT] if (piece := s.leaked_in(blob))]


class Endpoint(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint that records what it is asked to summarise."""

    bodies: list[str] = []  # noqa: RUF012 - read by the test

    def do_POST(self) -> None:
        Endpoint.bodies.append(self.rfile.read(int(self.headers["Content-Length"])).decode())
        answer = json.dumps({"choices": [{"message": {"content": "A session about a release."}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    Endpoint.bodies = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


@pytest.fixture
def alpha(computers, endpoint: str) -> Iterator[Computer]:
    # Small chunks (64 tokens): chunk borders fall inside many secrets, and every key spans several chunks.
    computer = computers(
        "alpha", summary_llm_url=endpoint, summary_llm_model="tiny", chunk_max_tokens=64, chunk_overlap_tokens=8
    )
    plant(computer)
    computer.start(serve_api=True)
    for _ in range(20):
        if not computer.step().sent:
            break
    yield computer


def test_the_corpus_is_large_enough() -> None:
    assert 30 <= len(CORPUS) < 99  # anchor(99) is the big key's: a corpus that reaches it needs another
    assert len({s.name for s in CORPUS}) == len(CORPUS)


def test_nothing_of_any_secret_reaches_redis(alpha: Computer, redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    keys = Keys(prefix)
    payloads = [fields[b"mirror"] for _, fields in client.xrange(keys.stream)]
    payloads += list(client.hgetall(keys.latest("alpha")).values())
    assert len(payloads) >= 4  # both sessions, in the stream and in the hash
    documents = [zlib.decompress(p).decode() for p in payloads]
    everything = "\n".join(documents)
    assert leaks(everything) == []
    assert "pangolin step 7" in everything and "[REDACTED:anthropic-key]" in everything
    main = next(json.loads(d) for d in documents if json.loads(d)["session_id"] == MAIN)
    kinds = {s.kind for s in CORPUS if s.kind}
    assert {kind for kind in kinds if f"[REDACTED:{kind}]" not in main["conversation_text"]} == set()
    assert main["title"] == "rotate the leaked key…"  # cut before the key, not inside it


def api(computer: Computer) -> ApiClient:
    assert computer.daemon is not None and computer.daemon.api is not None
    return ApiClient(computer.daemon.api.url, TOKEN, timeout=30)


def test_nothing_of_any_secret_in_what_the_api_answers(alpha: Computer) -> None:
    client = api(alpha)
    answers: list[Any] = [client.search("pangolin", 100)]
    # Each secret's own neighbourhood: the chunk a search for the word beside it returns.
    for i in [*range(len(CORPUS)), 99]:
        found = client.search(anchor(i), 5)["results"]
        assert found, anchor(i)
        answers.append(found)
    answers.append(client.search("log", 10))
    answers += [client.mirror(MAIN), client.mirror(LONG)]
    blob = json.dumps(answers, ensure_ascii=False)
    assert leaks(blob) == []
    assert "pangolin step 3" in blob and "[REDACTED:" in blob
    # The store does hold a chunk with the end of the long key and no BEGIN line: the cut is real.
    last_line = BIG_BODY.splitlines()[-2]
    conn = connect(alpha.config.db_path)
    try:
        stored = [r[0] for r in conn.execute("SELECT content FROM chunks WHERE content LIKE ?", (f"%{last_line}%",))]
    finally:
        conn.close()
    assert any("BEGIN" not in c for c in stored)
    # That chunk is among the answers, cleaned.
    chunks = [hit["matched_chunk"] for hit in client.search(anchor(99), 5)["results"]]
    assert any("-----END RSA PRIVATE KEY-----" in c or "[REDACTED:private-key]" in c for c in chunks)
    assert all("BEGIN" not in c for c in chunks if anchor(99) in c)


def test_raw_search_answer_over_the_socket(alpha: Computer) -> None:
    """The same, read as bytes from the socket (no client-side decoding in between)."""
    import http.client

    assert alpha.daemon is not None and alpha.daemon.api is not None
    connection = http.client.HTTPConnection("127.0.0.1", alpha.daemon.api.port, timeout=30)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    connection.request("GET", f"/v1/search?q={quote('pangolin')}&limit=100", headers=headers)
    body = connection.getresponse().read().decode()
    connection.close()
    assert leaks(body) == [] and "pangolin" in body


def test_nothing_of_any_secret_in_what_an_llm_is_asked_to_summarise(alpha: Computer) -> None:
    config = alpha.config
    os.environ.pop(config.summary_llm_key_env, None)
    conn = connect(config.db_path)
    try:
        with worker_lock(config.home):
            drain(conn, config, should_stop=lambda: len(Endpoint.bodies) >= 2)  # turns, then the two sessions
    finally:
        conn.close()
    assert len(Endpoint.bodies) == 2
    blob = "\n".join(Endpoint.bodies)
    assert leaks(blob) == []
    assert "pangolin" in blob and "[REDACTED:" in blob


@pytest.mark.parametrize("secret", CORPUS, ids=lambda s: s.name)
def test_a_chunk_cut_anywhere_in_a_secret_leaks_nothing(secret: Secret) -> None:
    """The mechanism behind /v1/search: a matched chunk is redacted as a slice of its turn's whole text,
    wherever its borders fall (redacting the chunk alone misses a key body without its BEGIN line, the
    second half of a token, the last word of a quoted password)."""
    full = f"User: my settings are\n{secret.text}\nwhat now?\n\nAssistant: Rotate it."
    first = full.index(secret.core[:12])
    last = first + len(secret.core)
    conn = sqlite3.connect(":memory:")
    for cut in range(first + 1, last, max(1, (last - first) // 7)):
        for chunk in (full[:cut], full[cut:], full[cut - 3 : cut + 9]):
            hit = {"source": "turn", "full_text": full, "matched_chunk": chunk, "title": "t", "tool_summary": ""}
            sent = redacted_hit(conn, hit, "settings")
            assert secret.leaked_in(json.dumps(sent)) is None, chunk
