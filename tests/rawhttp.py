"""HTTP at the socket level for the API's tests: many connections from one thread, slow clients, and
what this process holds open (threads, descriptors of the store)."""

from __future__ import annotations

import os
import re
import selectors
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path


def request(path: str, token: str | None = None, extra: str = "", body: bytes = b"") -> bytes:
    """The bytes of one GET that asks the server to close the connection after its answer."""
    head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    if token is not None:
        head += f"Authorization: Bearer {token}\r\n"
    return (head + extra + "\r\n").encode() + body


def status_of(answer: bytes) -> int | None:
    """The status code of the first response in `answer` (None when nothing came)."""
    first = answer.split(b"\r\n", 1)[0].split()
    return int(first[1]) if len(first) > 1 and first[1].isdigit() else None


def statuses(answer: bytes) -> list[int]:
    """The status codes of every response in `answer` (one connection's bytes)."""
    return [int(code) for code in re.findall(rb"HTTP/1\.[01] (\d{3}) ", answer)]


def burst(port: int, requests: list[bytes], timeout: float = 120.0) -> list[bytes]:
    """Open one connection per request, all at once, send each request, and read each answer until the
    server closes the connection. One thread, non-blocking sockets: the test's own thread count stays put.
    An answer is b"" when the connection was refused or reset before anything came."""
    selector = selectors.DefaultSelector()
    answers = [b""] * len(requests)
    pending = [bytearray(data) for data in requests]
    for index in range(len(requests)):
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        selector.register(sock, selectors.EVENT_WRITE, index)
    deadline = time.monotonic() + timeout
    while selector.get_map() and time.monotonic() < deadline:
        for key, events in selector.select(timeout=0.5):
            sock, index = key.fileobj, key.data
            assert isinstance(sock, socket.socket)
            try:
                if events & selectors.EVENT_WRITE:
                    sent = sock.send(pending[index])
                    del pending[index][:sent]
                    if not pending[index]:
                        selector.modify(sock, selectors.EVENT_READ, index)
                    continue
                data = sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                data = b""
            if data:
                answers[index] += data
            else:
                selector.unregister(sock)
                sock.close()
    for key in list(selector.get_map().values()):
        key.fileobj.close()  # type: ignore[union-attr]
    selector.close()
    return answers


def trickle(port: int, data: bytes, every: float, limit: float) -> tuple[bool, int]:
    """Send `data` one byte every `every` seconds; (was the connection closed by the server, bytes sent)
    once the server closes it, or after `limit` seconds."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=limit) as sock:
        sock.settimeout(every)
        stop_at = time.monotonic() + limit
        while time.monotonic() < stop_at:
            try:
                if sock.recv(65536) == b"":
                    return True, sent
            except TimeoutError:
                pass
            except OSError:
                return True, sent
            try:
                sock.send(data[sent % len(data) : sent % len(data) + 1])
                sent += 1
            except OSError:
                return True, sent
    return False, sent


def _open_files() -> list[str]:
    targets = []
    for name in os.listdir("/proc/self/fd"):
        try:
            targets.append(os.readlink(f"/proc/self/fd/{name}"))
        except OSError:
            continue
    return targets


def store_descriptors(db_path: Path) -> int:
    """File descriptors of this process open on the store (the database, its WAL and shared memory)."""
    prefix = str(db_path.resolve())
    return sum(target.startswith(prefix) for target in _open_files())


def open_on(path: Path) -> bool:
    """Whether this process has `path` open."""
    return str(path.resolve()) in _open_files()


class Peak(threading.Thread):
    """Samples `measure()` every few milliseconds until stopped; `peak` is the largest value seen."""

    def __init__(self, measure: Callable[[], int]) -> None:
        super().__init__(daemon=True)
        self.measure = measure
        self.peak = measure()
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(0.005):
            self.peak = max(self.peak, self.measure())

    def __enter__(self) -> Peak:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self.join()
        self.peak = max(self.peak, self.measure())
