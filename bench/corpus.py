"""The real transcripts the benchmarks draw their text from (../shared/data, read-only)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def claude_messages(root: Path = SHARED / "claude") -> Iterator[tuple[str, object]]:
    """(record type, message content) of every Claude Code record under `root` that has a message."""
    for path in root.rglob("*.jsonl"):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                data = json.loads(line)
            except ValueError:
                continue
            message = data.get("message") if isinstance(data, dict) else None
            if isinstance(message, dict):
                yield str(data.get("type")), message.get("content")
