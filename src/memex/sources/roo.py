"""Roo Code, a fork of the Cline extension: `tasks/<id>/ui_messages.json` (and `api_conversation_history.json`)
in the editor's global storage under `rooveterinaryinc.roo-cline`, in Cline's task layout (`memex.sources.cline`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from memex.sources import cline
from memex.sources.files import Skipped, candidates, safe_resolve
from memex.sources.jsonl import DEFAULT_MAX_LINE_BYTES, RawLine
from memex.sources.model import BadLine, Entry, Transcript

AGENT = "roo"
INCREMENTAL = False


def classify(path: Path) -> Transcript | None:
    """A Roo Code task's file: only under Roo's storage folder (the same files elsewhere are Cline's)."""
    if cline.ROO_STORAGE not in path.parts:
        return None
    return cline.task_transcript(path, AGENT)


def discover(roots: Iterable[Path], skipped: list[Skipped] | None = None) -> list[Transcript]:
    """Every Roo Code task under `roots`."""
    found: dict[Path, Transcript] = {}
    wanted = (cline.UI_MESSAGES, cline.API_HISTORY)
    for path, _ in candidates(roots, "*.json", lambda p: p.name in wanted, skipped):
        transcript = classify(path)
        if transcript is not None:
            found[safe_resolve(path)] = transcript
    return sorted(found.values(), key=lambda t: str(t.path))


def subagent_transcripts(session_path: Path) -> list[Transcript]:
    """Roo Code's subtasks are tasks of their own."""
    return []


def read_entries(
    path: Path, start_offset: int = 0, start_line: int = 0, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
    """The whole task, message by message (re-read whole when it changes)."""
    return cline.read_task(path, max_line_bytes)
