"""Whether a process is alive, and the live process a pid file names: the one check every pid file of
memex (the daemon's, the warm server's, a hook's background index) is read with. Imports nothing heavy:
hooks load it."""

from __future__ import annotations

import os
from pathlib import Path


def alive(pid: int) -> bool:
    """True while a process of this user has this pid. Every pid file of memex is in the user's private
    MEMEX_HOME, written by a process of the user: a process this user may not signal (PermissionError: it
    belongs to another user) took a pid freed since, and the process the file named is gone, as for a pid of
    no process at all (ProcessLookupError)."""
    if pid <= 0:  # 0 and negative pids name process groups, never one process
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def live_pid(path: Path) -> int | None:
    """The pid written in `path` when that process is alive; None when the file is missing, unreadable,
    holds no pid, or names a process that is gone (one killed, SIGKILL or a crash, leaves its file behind)."""
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if alive(pid) else None
