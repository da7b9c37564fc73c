"""How the daemon serves its HTTP API (what it answers is `sync/api.py`): Starlette routes on uvicorn's
h11 server, in a thread of the daemon, with the limits a server reachable from other computers needs.

Why this stack. The stdlib's ThreadingHTTPServer gave every connection a thread before a byte of its
request had arrived: a backlog of 5 dropped bursts, 100 clients sending a byte a second held 100 threads
(its timeout is per `recv`, so a trickle never trips it), 200 clients meant 200 threads each opening the
store, and a body sent with a GET was read as the next request. Bounding it means writing a server:
an acceptor, a pool, a deadline reader, request framing. uvicorn's event loop instead reads requests
without threads (a slow client costs a socket and a few hundred bytes), frames them with h11 (a GET
body is a body; a NUL in the request line is a 400), takes a real backlog, and streams with flow
control; Starlette routes. Both are small, pure Python and well kept, and a local web viewer can share
them. What uvicorn lacks is a deadline on receiving a request (its keep-alive timer restarts with every
byte): `_GuardedH11` adds it, and cuts a client that stops reading a response. The store stays
synchronous: requests wait in the event loop for one of `workers` threads, each borrowing one of as
many read-only connections (`sync/readers.py`).

| limit | default | what happens beyond it |
| --- | --- | --- |
| `workers` | 4 | requests wait (in the event loop, no thread) for a worker; searches (CPU work) get |
| | | all but one, so a mirror or a transcript never queues behind them |
| `backlog` | 1024 | the kernel queues connections not yet accepted (the stdlib's 5 dropped them) |
| `max_connections` | 512 | connections beyond it get 503 (capped at half the process's descriptor limit) |
| `request_seconds` | 10 | a request (line, headers, body) not whole this long after the connection opened, or |
| | | after the previous answer, is cut without an answer |
| `stall_seconds` | 30 | a client that takes longer than this to take 64 KiB of an answer is cut |
| `keep_alive_seconds` | 5 | an idle connection between requests is closed |
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import io
import logging
import os
import resource
import socket
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import anyio
import h11
import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

import memex
from memex.config import Config
from memex.errors import MemexError, UserError
from memex.sources import raw_transcript
from memex.sources.sqlite_read import SEPARATOR
from memex.sync import api
from memex.sync.api import ApiFailure
from memex.sync.readers import Readers
from memex.sync.token import LiveToken

log = logging.getLogger("memex.api")

T = TypeVar("T")
STREAM_BLOCK = 1 << 16
# After this long, a stop cancels what is still being answered (a transcript half sent).
SHUTDOWN_GRACE_S = 2.0
START_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Limits:
    """The API's limits (see the module's table); tests shorten the deadlines."""

    workers: int = 4  # the store is read by this many threads at once (2-8 cores; search embeds the query)
    backlog: int = 1024  # the kernel caps it at net.core.somaxconn (4096 on current Linux)
    max_connections: int = 512  # a slow or idle client holds one until its deadline
    request_seconds: float = 10.0  # generous for a request line and headers typed by a program
    stall_seconds: float = 30.0  # 64 KiB in 30 s: a link slower than 2 KiB/s is not a reader
    keep_alive_seconds: float = 5.0


class _GuardedH11(H11Protocol):
    """uvicorn's h11 connection with two deadlines it lacks: the request must arrive whole within
    `request_seconds` (a slow client is cut, a trickle of bytes does not restart the clock), and a
    paused answer must drain within `stall_seconds`. One subclass per server carries its `limits`."""

    limits: Limits = Limits()
    _request_timer: asyncio.TimerHandle | None = None
    _stall_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_request()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._request_timer is not None and self.conn.their_state not in (h11.IDLE, h11.SEND_BODY):
            self._request_timer.cancel()  # the request arrived whole
            self._request_timer = None

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
            self._await_request()  # the next request (or the rest of this one's body)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stall_timer is None:
            self._stall_timer = self.loop.call_later(self.limits.stall_seconds, self._cut, "stopped reading")

    def resume_writing(self) -> None:
        super().resume_writing()
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._request_timer, self._stall_timer):
            if timer is not None:
                timer.cancel()
        self._request_timer = self._stall_timer = None
        super().connection_lost(exc)

    def _await_request(self) -> None:
        if self._request_timer is None:
            self._request_timer = self.loop.call_later(self.limits.request_seconds, self._cut, "too slow a request")

    def _cut(self, why: str) -> None:
        self._request_timer = self._stall_timer = None
        if not self.transport.is_closing():
            client = f"{self.client[0]}:{self.client[1]}" if self.client else "?"
            log.debug("API connection from %s cut: %s", client, why)
            self.transport.abort()


def _json(status: int, value: Any) -> Response:
    headers = {"WWW-Authenticate": 'Bearer realm="memex"'} if status == 401 else None
    return Response(orjson.dumps(value, default=str), status, headers, media_type="application/json")


class _Truncated(MemexError):
    """A transcript shrank while it was sent: the length announced cannot be kept."""


class _RequireToken:
    """Every route but `/health` needs the bearer token (the one in force now: `LiveToken`); it is checked
    before anything else."""

    def __init__(self, app: ASGIApp, token: LiveToken) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] != "/health" and not self._authorized(scope):
            await _json(401, {"error": "a valid bearer token is required"})(scope, receive, send)
            return
        # Starlette re-raises what `_crash` answered (logged there) for the server to log again; a
        # truncated answer ends with the connection, which uvicorn closes.
        with contextlib.suppress(Exception):
            await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        header = next((value for name, value in scope["headers"] if name == b"authorization"), b"")
        kind, _, given = header.partition(b" ")
        return kind.lower() == b"bearer" and hmac.compare_digest(given.strip(), self.token.value().encode())


class _Routes:
    """The endpoints: each parses its request, then does its store work on a worker thread."""

    def __init__(self, config: Config, readers: Readers, pool: ThreadPoolExecutor, workers: int) -> None:
        self.config = config
        self.readers = readers
        # Store work runs on this pool's threads: exactly `workers` of them at most, whatever the load
        # (anyio's shared pool may start a new thread before a finished one is idle again).
        self.pool = pool
        self.workers = anyio.CapacityLimiter(workers)
        # Searches take at most all workers but one: a mirror or a transcript never waits behind a queue
        # of searches (each is tens of milliseconds of CPU; a mirror is a few).
        self.searches = anyio.CapacityLimiter(max(1, workers - 1))

    async def health(self, request: Request) -> Response:
        return _json(200, {"ok": True, "computer": self.config.computer, "version": memex.__version__})

    async def search(self, request: Request) -> Response:
        asked = api.search_request(request.query_params)
        async with self.searches:
            found = await self._with_store(request, lambda conn: api.search(conn, self.config, asked))
        return _json(200, found)

    async def mirror(self, request: Request) -> Response:
        session_id = api.checked_session_id(request.path_params["session_id"])
        return _json(200, await self._with_store(request, lambda conn: api.mirror(conn, self.config, session_id)))

    async def raw(self, request: Request) -> Response:
        session_id = api.checked_session_id(request.path_params["session_id"])
        handle, size = await self._with_store(request, lambda conn: _open_transcript(conn, self.config, session_id))
        headers = {"Content-Length": str(size), "X-Memex-Computer": self.config.computer}
        return StreamingResponse(self._blocks(handle, size), headers=headers, media_type="application/octet-stream")

    async def _with_store(self, request: Request, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work(conn)` on a worker thread with a connection of the pool, once a worker is free; a client
        that left while it waited costs nothing more."""

        def run() -> T:
            try:
                with self.readers.borrow() as conn:
                    return work(conn)
            except ApiFailure:
                raise
            except MemexError as exc:  # the store cannot be read now
                raise ApiFailure(503, str(exc)) from None

        async with self.workers:
            if await request.is_disconnected():
                raise ApiFailure(499, "the client went away")
            return await asyncio.get_running_loop().run_in_executor(self.pool, run)

    async def _blocks(self, handle: IO[bytes], size: int) -> AsyncIterator[bytes]:
        """The `size` bytes the transcript had when the request came (lines written since wait for the
        next request), read on the workers block by block; a file that shrank meanwhile ends short."""
        try:
            left = size
            while left > 0:
                async with self.workers:
                    block = await asyncio.get_running_loop().run_in_executor(
                        self.pool, handle.read, min(STREAM_BLOCK, left)
                    )
                if not block:
                    log.warning("%s shrank while it was sent: the answer ends %d bytes short", handle.name, left)
                    raise _Truncated
                left -= len(block)
                yield block
        finally:
            handle.close()


def _open_transcript(conn: sqlite3.Connection, config: Config, session_id: str) -> tuple[IO[bytes], int]:
    """The transcript the store recorded for the session (or the archive's copy of it), open, and its size."""
    agent, path = api.transcript_of(conn, config, session_id)
    try:
        if path and SEPARATOR in Path(path).name:  # a session in an agent's database: its records, JSON lines
            records = b"".join(raw_transcript(agent, Path(path)))
            return io.BytesIO(records), len(records)
        handle = open(path, "rb")  # type: ignore[arg-type]  # noqa: SIM115 (closed by the stream)
    except (OSError, TypeError, sqlite3.Error):
        copy = api.archived_transcript(conn, config, session_id)
        if copy is None:
            raise ApiFailure(410, "the transcript of this session is no longer on disk") from None
        return copy, copy.size  # type: ignore[return-value]  # read like a file
    return handle, os.fstat(handle.fileno()).st_size


async def _failure(request: Request, exc: Exception) -> Response:
    # async: Starlette runs a synchronous handler on anyio's shared thread pool (threads the API does
    # not count or bound).
    if isinstance(exc, ApiFailure):
        return _json(exc.status, {"error": str(exc)})
    assert isinstance(exc, HTTPException)
    message = {404: "no such route", 405: "only GET is served"}.get(exc.status_code, exc.detail)
    return _json(exc.status_code, {"error": message})


async def _crash(request: Request, exc: Exception) -> Response:
    if isinstance(exc, _Truncated):  # the answer had started: it cannot become an error any more
        return Response(status_code=500)
    log.error("API request %s failed", request.url.path, exc_info=exc)
    return _json(500, {"error": f"{type(exc).__name__}: {exc}"})


def build_app(config: Config, token: str, readers: Readers, pool: ThreadPoolExecutor, workers: int) -> ASGIApp:
    """The API as an ASGI application (the token checked first, then the routes)."""
    routes = _Routes(config, readers, pool, workers)
    app = Starlette(
        routes=[
            Route("/health", routes.health, methods=["GET"]),
            Route("/v1/search", routes.search, methods=["GET"]),
            Route("/v1/sessions/{session_id}/mirror", routes.mirror, methods=["GET"]),
            Route("/v1/sessions/{session_id}/raw", routes.raw, methods=["GET"]),
        ],
        exception_handlers={ApiFailure: _failure, HTTPException: _failure, Exception: _crash},
    )
    return _RequireToken(app, LiveToken(config, token))


def _listen(host: str, port: int, backlog: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        raise UserError(f"cannot listen on {host}:{port} for the API: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


def _connection_cap(wanted: int) -> int:
    """`wanted`, or half the process's descriptor limit when that is lower (the store and the agents'
    transcripts need the rest)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return wanted if soft == resource.RLIM_INFINITY else max(1, min(wanted, soft // 2))


class ApiServer:
    """The HTTP API of one computer, served from a background thread. It listens from construction on
    (connections wait in the backlog until `start()`)."""

    def __init__(self, config: Config, token: str, address: str | None = None, limits: Limits | None = None) -> None:
        self.config = config
        self.limits = limits or Limits()
        host, port = api.parse_address(address or config.api_address)
        self._socket = _listen(host, port, self.limits.backlog)
        self.host, self.port = host, self._socket.getsockname()[1]
        self.url = api.advertised_url(config, host, self.port)
        self.readers = Readers(config.db_path, config.busy_timeout_ms, self.limits.workers)
        self._pool = ThreadPoolExecutor(self.limits.workers, thread_name_prefix="memex-api-worker")
        protocol = type("GuardedH11", (_GuardedH11,), {"limits": self.limits})
        self._server = uvicorn.Server(
            uvicorn.Config(
                build_app(config, token, self.readers, self._pool, self.limits.workers),
                http=protocol,
                ws="none",
                lifespan="off",
                loop="asyncio",
                interface="asgi3",
                backlog=self.limits.backlog,
                limit_concurrency=_connection_cap(self.limits.max_connections),
                timeout_keep_alive=self.limits.keep_alive_seconds,  # type: ignore[arg-type]
                timeout_graceful_shutdown=None,  # `stop()` cuts the connections still open after its grace
                log_config=None,
                log_level="warning",
                access_log=False,
                server_header=False,
                proxy_headers=False,
            )
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Serve from a background thread; returns once the server accepts connections."""
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), name="memex-api", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self._server.started:
            raise MemexError(f"the API did not start on {self.host}:{self.port}")
        log.info("API listening on %s:%d (announced as %s)", self.host, self.port, self.url)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self._server.serve(sockets=[self._socket])

    def stop(self) -> None:
        """Stop serving: answers under way get `SHUTDOWN_GRACE_S` to finish, then are cut."""
        if self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=SHUTDOWN_GRACE_S)
            if self._thread.is_alive() and self._loop is not None:  # answers still under way: cut them
                with contextlib.suppress(RuntimeError):  # the loop ended meanwhile
                    self._loop.call_soon_threadsafe(self._abort_all)
                self._thread.join(timeout=5)
            if self._thread.is_alive():
                self._server.force_exit = True
                self._thread.join(timeout=5)
            self._thread = None
        self._socket.close()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.readers.close()

    def _abort_all(self) -> None:
        for connection in list(self._server.server_state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.abort()
