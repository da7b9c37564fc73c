"""Start the embedding worker in the background (from a hook), cheaply and at most once at a time.

Only the standard library is imported here: a Stop hook calls this on every stop.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

# The background worker yields to the user's own work.
NICENESS = 10


def worker_running(home: Path) -> bool:
    """True when some process holds the store's embedding lock."""
    try:
        with (home / "embed.lock").open("a") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False
    except OSError:
        return True  # cannot tell: do not start another


def start_background_embed(home: Path, threads: int = 1) -> bool:
    """Spawn a detached, niced `memex embed` unless a worker already runs; True if one was started."""
    if worker_running(home):
        return False
    env = {**os.environ, "MEMEX_HOME": str(home), "MEMEX_EMBED_THREADS": str(threads)}
    subprocess.Popen(
        [sys.executable, "-m", "memex", "embed", "--quiet"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        env=env,
        preexec_fn=lambda: os.nice(NICENESS),
    )
    return True
