"""Source adapters, one per agent: find transcripts and turn their records into normalised entries.

Each adapter module offers `discover(roots) -> list[Transcript]`, `subagent_transcripts(path)` and
`read_entries(path, start_offset, start_line)` yielding `(RawLine, Entry | BadLine | None)`. A module
that sets `INCREMENTAL = False` is re-read whole whenever its file changes (its offsets are ignored).

Every adapter sees the same folders when paths are given by hand, so each claims only its own files.
"""

from __future__ import annotations

from types import ModuleType

from memex.sources import claude, codex, gemini

ADAPTERS: dict[str, ModuleType] = {"claude": claude, "codex": codex, "gemini": gemini}


def adapter(agent: str) -> ModuleType:
    """The source adapter module of `agent`."""
    return ADAPTERS[agent]


def is_incremental(agent: str) -> bool:
    """Whether `agent`'s transcripts can be read from where the last run stopped (append-only files)."""
    return getattr(ADAPTERS[agent], "INCREMENTAL", True)
