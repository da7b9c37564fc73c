"""Start the embedding worker in the background (from a hook), cheaply and at most once at a time.

Only the standard library (and the lock module) is imported here: a Stop hook calls this on every stop.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from memex.embed.lock import worker_running

# The background worker yields to the user's own work.
NICENESS = 10


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
