"""What one transcript's ingest did: its report, and the statuses that need no reading (a module of its own,
so a run that reads nothing imports no parser)."""

from __future__ import annotations

from pathlib import Path

from memex.plain import Record

# Plan statuses that need no parsing: nothing changed, the file is gone, it cannot be read, or the user
# asked memex to forget its session (`memex forget`).
IDLE = ("unchanged", "missing", "failed", "forgotten")


class FileReport(Record):
    """What one transcript's ingest did."""

    __slots__ = (
        "agent_id",
        "bad_lines",
        "bytes_read",
        "error",
        "lines",
        "mirror_written",
        "path",
        "session_id",
        "size",
        "status",
        "turns",
        "warnings",
    )

    path: Path
    session_id: str
    agent_id: str
    status: str  # new, appended, rewritten, unchanged, missing, failed
    error: str | None  # why a failed file could not be indexed
    lines: int
    bad_lines: int
    turns: int
    bytes_read: int
    mirror_written: bool
    warnings: list[str]
    size: int  # the file's size when it was planned (0: unknown)

    def __init__(
        self,
        path: Path,
        session_id: str,
        agent_id: str = "",
        status: str = "unchanged",
        error: str | None = None,
        lines: int = 0,
        bad_lines: int = 0,
        turns: int = 0,
        bytes_read: int = 0,
        mirror_written: bool = False,
        warnings: list[str] | None = None,
        size: int = 0,
    ) -> None:
        self.path = path
        self.session_id = session_id
        self.agent_id = agent_id
        self.status = status
        self.error = error
        self.lines = lines
        self.bad_lines = bad_lines
        self.turns = turns
        self.bytes_read = bytes_read
        self.mirror_written = mirror_written
        self.warnings = [] if warnings is None else warnings
        self.size = size
