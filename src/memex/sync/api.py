"""The daemon's HTTP API: search over this computer's store, a session's mirror, its raw transcript
(streamed), and health.

| route | answers |
| --- | --- |
| `GET /health` (no token) | `{"ok": true, "computer", "version"}` |
| `GET /v1/search?q=…&limit=&agent=&project=&since=&until=&session=` | `{"computer", "results"}`: this |
| | computer's own sessions, as `memex search --json` gives them |
| `GET /v1/sessions/<id>/mirror` | `{"session", "mirror"}` of a session indexed here |
| `GET /v1/sessions/<id>/raw` | the transcript file of a session indexed here, streamed |

Every route but health needs `Authorization: Bearer <token>` (401 otherwise, before anything else is
looked at). A session is named only by its id, checked against a strict pattern and looked up in the
store: the file served is the one the store recorded for that session, never a path from the request.
Search results and mirrors are redacted like published mirrors; a raw transcript is sent as it is (the
user asked for it, with the token).

The stdlib's ThreadingHTTPServer serves it: a handful of routes, requests from the user's own computers
at human pace, a file streamed with plain writes, and no dependency or event loop inside a daemon that is
otherwise synchronous (SQLite, redis-py). Each request runs in its own thread with its own read-only
connection; idle connections are dropped after `REQUEST_TIMEOUT_S`.
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import socket
import sqlite3
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import orjson

import memex
from memex.config import Config
from memex.errors import MemexError, UserError
from memex.ingest.mirrors import build_mirror, get_mirror
from memex.search.hybrid import hybrid_search
from memex.sources import ADAPTERS
from memex.store.db import connect_readonly
from memex.store.queries import Filters, get_session
from memex.sync.redact import redact
from memex.sync.wire import redact_mirror
from memex.textutil import parse_when

log = logging.getLogger("memex.api")

# Session ids are UUIDs, Codex and Gemini ids, or `<id>-<hash>`: letters, digits, `-` and `_`.
SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
MAX_LIMIT = 100
# A client that sends nothing for this long is disconnected (a thread is not held forever).
REQUEST_TIMEOUT_S = 30
STREAM_BLOCK = 1 << 16
# How quickly the server notices it must stop (a select timeout: costs nothing while it waits).
SHUTDOWN_POLL_S = 0.05
_REDACTED_FIELDS = ("full_text", "matched_chunk", "prompt_text", "title", "tool_summary")


def parse_address(address: str) -> tuple[str, int]:
    """`host:port` (or `[v6]:port`) as a (host, port) pair; UserError when malformed."""
    host, _, port = address.strip().rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UserError(f"api_address must be host:port, got {address!r}")
    return host, int(port)


def advertised_url(config: Config, host: str, port: int) -> str:
    """The URL other computers should use: `api_url`, else derived from where the server listens."""
    if config.api_url:
        return config.api_url.rstrip("/")
    if host in ("0.0.0.0", "::", ""):
        host = config.computer
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def local_search(
    conn: sqlite3.Connection, config: Config, query: str, filters: Filters, limit: int, redacted: bool = True
) -> list[dict[str, Any]]:
    """This computer's own sessions matching `query` (hybrid search, others' mirrors left out), redacted
    for leaving."""
    found = hybrid_search(conn, config, query, filters, limit * 2).results
    results = [hit for hit in found if hit["computer"] == config.computer][:limit]
    if not redacted:
        return results
    for hit in results:
        for name in _REDACTED_FIELDS:
            if isinstance(hit.get(name), str):
                hit[name] = redact(hit[name])[0]
    return results


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], api: ApiServer) -> None:
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.api = api
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that failed outside a request (a client gone, a timeout) is logged, not printed."""
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError | TimeoutError):
            log.debug("API connection from %s ended: %s", client_address[0], error)
        else:
            log.error("API connection from %s failed", client_address[0], exc_info=True)


class _Failure(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "memex"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    timeout = REQUEST_TIMEOUT_S

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        api = self.server.api
        try:
            url = urlsplit(self.path)
            if url.path == "/health":
                self._json(200, {"ok": True, "computer": api.config.computer, "version": memex.__version__})
                return
            self._authorize(api.token)
            segments = url.path.split("/")
            query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
            if segments == ["", "v1", "search"]:
                self._search(api, query)
            elif len(segments) == 5 and segments[:3] == ["", "v1", "sessions"] and segments[4] in ("mirror", "raw"):
                session_id = unquote(segments[3])
                if not SESSION_ID.fullmatch(session_id):
                    raise _Failure(404, "no such session")
                if segments[4] == "mirror":
                    self._mirror(api, session_id)
                else:
                    self._raw(api, session_id)
            else:
                raise _Failure(404, "no such route")
        except _Failure as failure:
            self._json(failure.status, {"error": str(failure)})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away
        except Exception as exc:
            log.exception("API request %s failed", self.path)
            if getattr(self, "_streaming", False):  # headers are out: the client sees a short body
                self.close_connection = True
            else:
                self._json(500, {"error": f"{type(exc).__name__}: {exc}"})

    def do_POST(self) -> None:
        self.close_connection = True  # a body, if any, is not read
        self._json(405, {"error": "only GET is served"})

    do_PUT = do_DELETE = do_PATCH = do_POST

    # --- routes ------------------------------------------------------------------------------------

    def _authorize(self, token: str) -> None:
        header = self.headers.get("Authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
            raise _Failure(401, "a valid bearer token is required")

    def _search(self, api: ApiServer, query: dict[str, str]) -> None:
        text = query.get("q", "").strip()
        if not text:
            raise _Failure(400, "q (the query) is required")
        try:
            limit = min(MAX_LIMIT, max(1, int(query.get("limit", "10"))))
            since = parse_when(query["since"]) if query.get("since") else None
            until = parse_when(query["until"], end_of_day=True) if query.get("until") else None
        except ValueError as exc:
            raise _Failure(400, str(exc)) from None
        agent = query.get("agent") or None
        if agent is not None and agent not in ADAPTERS:
            raise _Failure(400, f"unknown agent {agent!r}")
        filters = Filters(
            project=query.get("project") or None,
            agent=agent,
            since=since,
            until=until,
            session=query.get("session") or None,
        )
        with api.store() as conn:
            results = local_search(conn, api.config, text, filters, limit)
        self._json(200, {"computer": api.config.computer, "results": results})

    def _mirror(self, api: ApiServer, session_id: str) -> None:
        with api.store() as conn:
            session = _local_session(conn, session_id)
            mirror = get_mirror(conn, session_id, session["computer"])
            if mirror is None or mirror.computer != session["computer"]:
                mirror = build_mirror(conn, session_id)
        data = None
        if mirror is not None:
            clean, _ = redact_mirror(mirror)
            fields = {k: v for k, v in vars(clean).items() if k not in ("conversation_text", "metadata")}
            metadata = {k: v for k, v in clean.metadata.items() if k != "messages"}
            data = {**fields, "metadata": metadata, "messages": clean.messages()}
        info = {k: session[k] for k in ("session_id", "agent", "computer", "project_dir", "title", "started_at")}
        info["title"] = redact(info["title"])[0] if info["title"] else None
        self._json(200, {"session": info, "mirror": data})

    def _raw(self, api: ApiServer, session_id: str) -> None:
        with api.store() as conn:
            path = _local_session(conn, session_id)["transcript_path"]
        try:
            handle = open(path, "rb")  # noqa: SIM115 (closed below) - the path the store recorded
        except (OSError, TypeError):
            raise _Failure(410, "the transcript of this session is no longer on disk") from None
        with handle:
            size = os.fstat(handle.fileno()).st_size  # what exists now; lines written meanwhile wait
            self._streaming = True
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.send_header("X-Memex-Computer", api.config.computer)
            self.end_headers()
            left = size
            while left > 0:
                block = handle.read(min(STREAM_BLOCK, left))
                if not block:
                    break
                self.wfile.write(block)
                left -= len(block)
            if left > 0:  # the file shrank while it was sent: the length promised cannot be kept
                self.close_connection = True

    def _json(self, status: int, value: Any) -> None:
        body = orjson.dumps(value, default=str)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if status == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="memex"')
        self.end_headers()
        self.wfile.write(body)


def _local_session(conn: sqlite3.Connection, session_id: str) -> dict[str, Any]:
    """A session indexed on this computer (404 for any other id)."""
    try:
        return get_session(conn, session_id)
    except UserError:
        raise _Failure(404, "no such session") from None


class _Store:
    """A read-only connection for one request."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.conn: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.conn = connect_readonly(self.config.db_path, self.config.busy_timeout_ms)
        except MemexError as exc:
            raise _Failure(503, str(exc)) from None
        return self.conn

    def __exit__(self, *exc: object) -> None:
        if self.conn is not None:
            self.conn.close()


class ApiServer:
    """The HTTP API of one computer, served from a background thread."""

    def __init__(self, config: Config, token: str, address: str | None = None) -> None:
        self.config = config
        self.token = token
        host, port = parse_address(address or config.api_address)
        try:
            self.httpd = _Server((host, port), self)
        except OSError as exc:
            raise UserError(f"cannot listen on {host}:{port} for the API: {exc.strerror or exc}") from None
        self.host, self.port = host, self.httpd.server_address[1]
        self.url = advertised_url(config, host, self.port)
        self._thread: threading.Thread | None = None

    def store(self) -> _Store:
        return _Store(self.config)

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, args=(SHUTDOWN_POLL_S,), name="memex-api", daemon=True
        )
        self._thread.start()
        log.info("API listening on %s:%d (announced as %s)", self.host, self.port, self.url)

    def stop(self) -> None:
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self.httpd.server_close()
