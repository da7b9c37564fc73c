"""The store's embedding lock: one worker drains the queue at a time.

Standard library only: a Stop hook checks it on every stop.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from memex.errors import EmbedBusy

LOCK_FILE = "embed.lock"


@contextlib.contextmanager
def worker_lock(home: Path) -> Iterator[None]:
    """Hold the store's embedding lock (one worker at a time); EmbedBusy when another holds it."""
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(home / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    with os.fdopen(descriptor, "r+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            raise EmbedBusy(f"another memex process (pid {holder}) is embedding; it drains the same queue") from None
        handle.seek(0)
        handle.truncate()
        handle.write(str(os.getpid()))
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def worker_running(home: Path) -> bool:
    """True when some process holds the store's embedding lock (or when that cannot be told)."""
    try:
        with worker_lock(home):
            return False
    except EmbedBusy:
        return True
    except OSError:
        return True
