"""A Stop hook tells a running daemon that a session just stopped: its mirror is published at once.

The hook drops a small file in `$MEMEX_HOME/signals/` (only while a daemon runs, so nothing piles up
otherwise); the daemon takes the files at its next pass. Files, not a socket: the hook stays a few
microseconds long and never waits on the daemon. This module imports nothing heavy: hooks load it.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from memex.digest import blake2b

PID_FILE = "daemon.pid"
SIGNALS = "signals"


def daemon_running(home: Path) -> bool:
    """True while a daemon runs for this MEMEX_HOME: its pid file names a live process (`pids.live_pid`)."""
    from memex.pids import live_pid

    return live_pid(home / PID_FILE) is not None


def notify_stop(home: Path, session_id: str, transcript_path: str | None = None) -> bool:
    """Tell the daemon that `session_id` stopped; False (and nothing written) when no daemon runs."""
    if not daemon_running(home):
        return False
    folder = home / SIGNALS
    folder.mkdir(parents=True, exist_ok=True)
    name = "stop-" + blake2b(session_id.encode(), digest_size=8).hexdigest()
    temporary = folder / f".{name}.{os.getpid()}"
    temporary.write_text(json.dumps({"session_id": session_id, "transcript_path": transcript_path}))
    temporary.replace(folder / f"{name}.json")
    return True


def take_stops(home: Path) -> list[dict[str, str | None]]:
    """The stop notifications waiting (each taken once): [{session_id, transcript_path}]."""
    folder = home / SIGNALS
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("stop-*.json")):
        with contextlib.suppress(OSError, ValueError):
            data = json.loads(path.read_text())
            if isinstance(data, dict) and isinstance(data.get("session_id"), str):
                found.append({"session_id": data["session_id"], "transcript_path": data.get("transcript_path")})
        with contextlib.suppress(OSError):
            path.unlink()
    return found
