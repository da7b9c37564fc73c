"""Work started on a thread of its own, waited for later."""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")

# Idle workers kept for the next work; more finish and end.
MAX_IDLE = 4


class _Workers:
    """Daemon threads that stay for the next work: handing work to an idle one is a queue put, where
    starting a thread makes the caller wait until the new thread runs (on a busy machine, until the
    scheduler gets to it: 16 ms a query at a load average of 6)."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], None], Callable[[], None]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0  # workers that will take a job without one being reserved for them

    def run(self, job: Callable[[], None], then: Callable[[], None]) -> None:
        """`job()` on an idle worker, or on a new one when none is idle; then `then()`, once the worker is
        idle again (whoever waits for the job and starts another finds it idle)."""
        with self._lock:
            start = self._idle == 0
            self._idle -= 0 if start else 1
        self._jobs.put((job, then))
        if start:
            threading.Thread(target=self._serve, name="memex-background", daemon=True).start()

    def _serve(self) -> None:
        while True:
            job, then = self._jobs.get()
            job()
            with self._lock:
                stay = self._idle < MAX_IDLE
                self._idle += stay
            then()
            del job, then  # what the work returned belongs to its caller alone
            if not stay:
                return


_workers = _Workers()


def _after_fork() -> None:  # a forked child has none of its parent's threads
    global _workers
    _workers = _Workers()


os.register_at_fork(after_in_child=_after_fork)


class Background(Generic[T]):
    """`function()` started on a worker thread at once; `result()` waits for it and returns its value or
    raises its exception. Work that releases the GIL (the embedding engine through ctypes, SQLite, numpy's
    products) runs beside the caller's on another core: a query is embedded while the search reads the
    index by words."""

    def __init__(self, function: Callable[[], T]) -> None:
        self._outcome: dict[str, Any] = {}
        self._done = threading.Event()

        def job() -> None:
            try:
                self._outcome["value"] = function()
            except BaseException as exc:  # handed to the caller
                self._outcome["error"] = exc

        _workers.run(job, self._done.set)

    def result(self) -> T:
        self._done.wait()
        if "error" in self._outcome:
            raise self._outcome["error"]
        return cast(T, self._outcome["value"])
