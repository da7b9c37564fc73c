"""Background work runs on daemon threads that stay for the next work (a warm query hands its embedding to
an idle thread instead of starting one), one per piece of work running at once."""

from __future__ import annotations

import os
import signal
import threading

from memex.background import Background


def test_work_after_work_runs_on_the_same_thread() -> None:
    first = Background(threading.get_ident).result()
    assert all(Background(threading.get_ident).result() == first for _ in range(5))
    assert first != threading.get_ident()


def test_work_running_at_once_gets_a_thread_each() -> None:
    """Work that waits for other work started after it (a query's embedding, itself waiting for the
    engine) still ends: the later work is not queued behind it."""
    ready = threading.Event()
    waiting = Background(lambda: ready.wait(10))
    Background(ready.set).result()
    assert waiting.result() is True


def test_work_inside_work() -> None:
    assert Background(lambda: Background(lambda: 7).result() * 6).result() == 42


def test_a_forked_child_starts_threads_of_its_own() -> None:
    """A child has none of its parent's idle threads: work handed to them would never run."""
    Background(int).result()  # an idle thread in this process
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        signal.alarm(10)
        os._exit(0 if Background(lambda: 5).result() == 5 else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
