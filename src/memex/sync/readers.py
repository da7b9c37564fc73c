"""A small pool of read-only connections to the store, lent to one thread at a time.

The API answers each request on one of a few worker threads; opening a connection per request cost two
opens (the first one brings an old schema up to date) and, with a thread per request, as many open
handles as requests in flight. Here at most `size` connections exist, each reused across requests and
threads (`check_same_thread=False`; one borrower at a time). A connection whose database file was
replaced (a rebuild sets the old file aside) is closed and opened again; one that failed in the middle of
a request is closed rather than lent again.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

from memex.store.db import connect_readonly


class Readers:
    """At most `size` read-only connections to the store at `path`, lent with `borrow()`."""

    def __init__(self, path: Path, busy_timeout_ms: int, size: int) -> None:
        self.path = path
        self.busy_timeout_ms = busy_timeout_ms
        self._slots = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._idle: list[tuple[sqlite3.Connection, tuple[int, int]]] = []
        self._closed = False

    @contextlib.contextmanager
    def borrow(self) -> Iterator[sqlite3.Connection]:
        """A connection for the caller's use until the block ends (waits while all `size` are lent).
        MemexError when the store cannot be opened."""
        with self._slots:
            conn, identity = self._take()
            try:
                yield conn
            except BaseException:
                conn.close()
                raise
            with self._lock:
                if self._closed:
                    conn.close()
                else:
                    self._idle.append((conn, identity))

    def _take(self) -> tuple[sqlite3.Connection, tuple[int, int]]:
        with self._lock:
            if self._closed:
                raise RuntimeError("the store's readers are closed")
            idle = self._idle.pop() if self._idle else None
        current = _identity(self.path)
        if idle is not None:
            conn, identity = idle
            if identity == current:
                return conn, identity
            conn.close()  # the database was replaced: this handle reads the old file
        conn = connect_readonly(self.path, self.busy_timeout_ms)
        return conn, _identity(self.path)

    def close(self) -> None:
        """Close the idle connections; those lent are closed when they come back."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()


def _identity(path: Path) -> tuple[int, int]:
    try:
        stat = os.stat(path)
    except OSError:
        return (-1, -1)
    return (stat.st_dev, stat.st_ino)
