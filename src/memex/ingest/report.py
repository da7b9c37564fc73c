"""What one transcript's ingest did: its report, and the statuses that need no reading (a module of its own,
so a run that reads nothing imports no parser)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# Plan statuses that need no parsing: nothing changed, the file is gone, it cannot be read, or the user
# asked memex to forget its session (`memex forget`).
IDLE = ("unchanged", "missing", "failed", "forgotten")


@dataclass
class FileReport:
    """What one transcript's ingest did."""

    path: Path
    session_id: str
    agent_id: str = ""
    status: str = "unchanged"  # new, appended, rewritten, unchanged, missing, failed
    error: str | None = None  # why a failed file could not be indexed
    lines: int = 0
    bad_lines: int = 0
    turns: int = 0
    bytes_read: int = 0
    mirror_written: bool = False
    warnings: list[str] = field(default_factory=list)
    size: int = 0  # the file's size when it was planned (0: unknown)
