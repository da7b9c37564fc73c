"""Source adapters, one per agent: find transcripts and turn their records into normalised entries.

Each adapter is a module satisfying `sources.adapter.SourceAdapter` (`AGENT`, `INCREMENTAL`, `discover`,
`classify`, `subagent_transcripts`, `read_entries`), registered in `ADAPTERS`. A module with
`INCREMENTAL = False` is re-read whole whenever its file changes (its offsets are ignored).

Every adapter sees the same folders when paths are given by hand, so each claims only its own files.
"""

from __future__ import annotations

from memex.sources import claude, codex, gemini
from memex.sources.adapter import SourceAdapter

ADAPTERS: dict[str, SourceAdapter] = {"claude": claude, "codex": codex, "gemini": gemini}


def adapter(agent: str) -> SourceAdapter:
    """The source adapter module of `agent`."""
    return ADAPTERS[agent]


def is_incremental(agent: str) -> bool:
    """Whether `agent`'s transcripts can be read from where the last run stopped (append-only files)."""
    return ADAPTERS[agent].INCREMENTAL
