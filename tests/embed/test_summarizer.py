"""The optional LLM session summary: an OpenAI-compatible endpoint (a real HTTP server on 127.0.0.1)
writes what the session vector reads; when it fails, the extractive summary is used."""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from memex.config import load_config
from memex.embed.model import load_embedder
from memex.embed.worker import drain, worker_lock
from memex.ingest.embed_texts import session_summary
from memex.ingest.indexer import discover, index_transcripts
from transcripts import ClaudeSession, simple_turn

pytestmark = [pytest.mark.model]

SUMMARY = "The user fixed a stale CDN manifest after deploys by purging it in the release script."


class Endpoint(BaseHTTPRequestHandler):
    requests: list[dict] = []  # noqa: RUF012 - the test reads what was asked
    fail = False

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Endpoint.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if Endpoint.fail:
            self.send_response(500)
            self.end_headers()
            return
        answer = json.dumps({"choices": [{"message": {"role": "assistant", "content": SUMMARY}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Endpoint.requests, Endpoint.fail = [], False
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def _session_vector(conn) -> np.ndarray:
    blob = conn.execute("SELECT embedding FROM vectors WHERE level = 'session'").fetchone()[0]
    return np.frombuffer(blob, dtype="<f4")


@pytest.mark.parametrize("fail", [False, True])
def test_session_vector_reads_the_llm_summary_or_the_extractive_one(conn, home, tmp_path: Path, endpoint, fail) -> None:
    Endpoint.fail = fail
    env = {
        **os.environ,
        "MEMEX_SUMMARY_LLM_URL": endpoint,
        "MEMEX_SUMMARY_LLM_MODEL": "tiny",
        "MEMEX_SUMMARY_LLM_KEY": "k-1",
    }
    config = load_config(env)
    os.environ["MEMEX_SUMMARY_LLM_KEY"] = "k-1"
    try:
        session = ClaudeSession(tmp_path / "p" / "-home-dev-shop" / "s1.jsonl", "s1")
        simple_turn(
            session, "after each deploy the site serves the old bundle", "The CDN cached manifest.json; now purged."
        )
        index_transcripts(conn, config, discover({"claude": [session.path.parent]}))
        with worker_lock(config.home):
            drain(conn, config)
    finally:
        del os.environ["MEMEX_SUMMARY_LLM_KEY"]
    (request,) = Endpoint.requests
    assert request["path"] == "/v1/chat/completions" and request["auth"] == "Bearer k-1"
    assert request["body"]["model"] == "tiny" and "old bundle" in request["body"]["messages"][1]["content"]
    mirror_id = conn.execute("SELECT id FROM mirrors").fetchone()[0]
    expected = SUMMARY if not fail else session_summary(conn, mirror_id, config)
    reference = load_embedder(config).embed_passages([expected])[0]
    assert float(_session_vector(conn) @ reference) > 0.999
