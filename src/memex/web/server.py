"""Serving the viewer: uvicorn on a socket bound here, from a background thread (the CLI waits on it, a
test drives it over the socket)."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import uvicorn

from memex.config import Config
from memex.errors import MemexError, UserError
from memex.web.app import build_app
from memex.web.guard import is_loopback

START_TIMEOUT_S = 10.0


def check_host(host: str, allow_remote: bool) -> None:
    """UserError for a host beyond loopback unless the user said `--allow-remote`."""
    if not is_loopback(host) and not allow_remote:
        raise UserError(
            f"{host} is reachable from other machines: add --allow-remote (every request then needs the API token)"
        )


class WebServer:
    """The viewer on `host:port` (0: any free port); listening from construction, serving after `start()`.
    `token`: required on every request (served beyond loopback)."""

    def __init__(self, config: Config, host: str = "127.0.0.1", port: int = 0, token: str | None = None) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self._socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self._socket.bind((host, port))
            self._socket.listen(64)
        except OSError as exc:
            self._socket.close()
            raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
        self.host, self.port = host, self._socket.getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        self.url = f"http://{shown}:{self.port}/"
        self._server = uvicorn.Server(
            uvicorn.Config(
                build_app(config, token),
                ws="none",
                lifespan="off",
                loop="asyncio",
                interface="asgi3",
                log_config=None,
                log_level="warning",
                access_log=False,
                server_header=False,
            )
        )
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Serve from a background thread; returns once connections are accepted."""
        self._thread = threading.Thread(
            target=asyncio.run, args=(self._server.serve(sockets=[self._socket]),), name="memex-web", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self._server.started:
            raise MemexError(f"the viewer did not start on {self.host}:{self.port}")

    def wait(self) -> None:
        """Until the server stops (Ctrl-C in the CLI)."""
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(0.5)

    def stop(self) -> None:
        if self._thread is not None:
            self._server.should_exit = True
            self._thread.join(timeout=5)
            if self._thread.is_alive():
                self._server.force_exit = True
                self._thread.join(timeout=5)
            self._thread = None
        self._socket.close()
