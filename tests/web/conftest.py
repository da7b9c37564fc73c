"""A real corpus indexed into a test MEMEX_HOME, a received mirror with a hostile title, and the viewer
served over a real socket on 127.0.0.1."""

from __future__ import annotations

import dataclasses
import http.client
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import pytest

from corpus import CODEX_SHORT, HILLVIEW, LIVE_CLAUDE
from memex.config import Config
from memex.mirrors.build import build_mirror, store_mirror
from memex.store.db import connect
from memex.web.server import WebServer

SUBAGENT_SESSION = "322e6fc1-933c-4088-b825-a0b12dac4c7a"
MIRRORED = "feedface-0000-4000-8000-000000000001"
HOSTILE = '<script>alert("pwned")</script> & <b>bold</b>'


@dataclasses.dataclass
class Page:
    status: int
    body: str
    headers: dict[str, str]


class Browser:
    """A tiny HTTP client over a real socket (one connection per request)."""

    def __init__(self, server: WebServer, host_header: str | None = None, token: str | None = None) -> None:
        self.server = server
        self.host_header = host_header
        self.token = token

    def request(self, method: str, path: str, form: dict[str, str] | None = None, **headers: str) -> Page:
        connection = http.client.HTTPConnection(self.server.host, self.server.port, timeout=60)
        try:
            body = urlencode(form).encode() if form is not None else None
            sent = dict(headers)
            if body is not None:
                sent["Content-Type"] = "application/x-www-form-urlencoded"
            if self.token:
                sent.setdefault("Authorization", f"Bearer {self.token}")
            if self.host_header:
                connection.putrequest(method, path, skip_host=True)
                connection.putheader("Host", self.host_header)
            else:
                connection.putrequest(method, path)
            for name, value in sent.items():
                connection.putheader(name, value)
            if body is not None:
                connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            answer = connection.getresponse()
            return Page(answer.status, answer.read().decode(), {k.lower(): v for k, v in answer.getheaders()})
        finally:
            connection.close()

    def get(self, path: str, **headers: str) -> Page:
        return self.request("GET", path, **headers)

    def post(self, path: str, form: dict[str, str]) -> Page:
        return self.request("POST", path, form)


@pytest.fixture
def corpus(run, tmp_path: Path, config: Config) -> Config:
    """HillviewCap's sessions, a live Claude Code session with subagents, a Codex rollout, indexed; and a
    mirror received from the computer `laptop` whose title is hostile HTML."""
    projects = tmp_path / "claude-projects"
    shutil.copytree(HILLVIEW, projects / HILLVIEW.name)
    shutil.copytree(LIVE_CLAUDE / "-home-dev-proj", projects / "-home-dev-proj")
    codex = tmp_path / "codex-sessions" / "2025" / "11" / "13"
    codex.mkdir(parents=True)
    shutil.copy(CODEX_SHORT, codex / CODEX_SHORT.name)
    assert run("index").exit_code == 0
    conn = connect(config.db_path)
    try:
        mirror = build_mirror(conn, SUBAGENT_SESSION)
        assert mirror is not None
        received = dataclasses.replace(mirror, session_id=MIRRORED, computer="laptop", title=HOSTILE)
        store_mirror(conn, received)
        conn.commit()
    finally:
        conn.close()
    return config


@pytest.fixture
def web(corpus: Config) -> Iterator[Browser]:
    server = WebServer(corpus)
    server.start()
    try:
        yield Browser(server)
    finally:
        server.stop()
