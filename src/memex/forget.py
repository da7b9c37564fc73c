"""Forgetting sessions: everything memex holds of them goes, and a tombstone keeps them from coming back.

`forget` removes the chosen sessions' rows, vectors and mirrors (the store), their archived copies (the
files), and leaves a tombstone per session: re-indexing the transcript, still on disk, skips it, and a
mirror delivered again is dropped. The tombstones asked here are published to the user's other computers
(`memex.sync.forgets`), which apply them with `apply_forget`: their mirror of the session goes, and the
computer it ran on forgets it entirely.
"""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memex.archive.copies import archive_lock, archive_root
from memex.config import Config
from memex.store import forget as queries
from memex.store.db import transaction


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass
class ForgetReport:
    """What `forget` removed."""

    sessions: list[queries.Target] = field(default_factory=list)
    archive_files: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "forgotten": [t.to_json() for t in self.sessions],
            "sessions": len(self.sessions),
            "archive_files": self.archive_files,
        }


def _remove_copies(config: Config, relative_paths: list[str]) -> int:
    """Delete archive files (and the folders left empty); returns how many went."""
    root = archive_root(config)
    removed = 0
    with archive_lock(root):
        for relative in relative_paths:
            path = root / relative
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
            with contextlib.suppress(OSError):  # not empty: another stream of the session is still there
                path.parent.rmdir()
    return removed


def _forget_one(conn: sqlite3.Connection, config: Config, session_id: str, computer: str, origin: str) -> int:
    """Delete a session and its copies, and tombstone it; returns the archive files removed."""
    when = now_iso()
    with transaction(conn):
        copies = queries.archive_paths(conn, session_id)
        queries.delete_session(conn, session_id)
        queries.add_tombstone(conn, session_id, computer, origin, when, published=origin != config.computer)
    # The rows go first: a copy whose record is gone is never read again, even if deleting the file fails.
    return _remove_copies(config, copies) if copies else 0


def forget(conn: sqlite3.Connection, config: Config, targets: list[queries.Target]) -> ForgetReport:
    """Forget `targets` here, and leave each a tombstone to publish to the other computers."""
    report = ForgetReport()
    for target in targets:
        report.archive_files += _forget_one(conn, config, target.session_id, target.computer, config.computer)
        report.sessions.append(target)
    return report


def apply_forget(conn: sqlite3.Connection, config: Config, session_id: str, computer: str, origin: str) -> bool:
    """Apply a forgetting another computer published; False when it was known already."""
    if queries.is_forgotten(conn, session_id, computer):
        return False
    _forget_one(conn, config, session_id, computer, origin)
    return True
