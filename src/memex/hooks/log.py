"""The hook-run log: one JSON line per hook run in `$MEMEX_HOME/hooks.log`, read by `memex hooks status`.

Hooks never print errors (that would disturb the user's session), so this is where they go. Each line is
written with one `write` on a file opened for appending, which keeps lines whole when hooks run at once;
past its size limit the log is renamed to `hooks.log.1` (one old generation is kept).
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from pathlib import Path
from typing import Any

LOG_NAME = "hooks.log"
# A line stays below the size the kernel appends atomically (PIPE_BUF, 4 KiB on Linux).
MAX_DETAIL_CHARS = 2_000


def log_path(home: Path) -> Path:
    return home / LOG_NAME


def record(home: Path, max_bytes: int, **fields: Any) -> None:
    """Append one run to the log (never raises: logging must not break a hook)."""
    try:
        detail = fields.get("detail")
        if isinstance(detail, str) and len(detail) > MAX_DETAIL_CHARS:
            fields["detail"] = detail[: MAX_DETAIL_CHARS - 1] + "…"
        entry = {"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **fields}
        line = (json.dumps(entry, ensure_ascii=False, default=str) + "\n").encode("utf-8", "replace")
        home.mkdir(parents=True, exist_ok=True)
        path = log_path(home)
        try:
            if path.stat().st_size + len(line) > max_bytes:
                os.replace(path, path.with_name(LOG_NAME + ".1"))
        except FileNotFoundError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    except Exception:  # the log is best effort: logging must never break a hook
        pass


def recent(home: Path, limit: int = 20) -> list[dict[str, Any]]:
    """The last `limit` runs, oldest first (unreadable lines skipped)."""
    lines: deque[str] = deque(maxlen=limit)
    for path in (log_path(home).with_name(LOG_NAME + ".1"), log_path(home)):
        try:
            with path.open(encoding="utf-8", errors="replace") as handle:
                lines.extend(handle)
        except FileNotFoundError:
            continue
    runs = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            runs.append(value)
    return runs
