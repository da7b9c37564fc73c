"""Source adapters, one per agent: find transcripts and turn their records into normalised entries.

Each adapter module offers `discover(roots) -> list[Transcript]`, `subagent_transcripts(path)` and
`read_entries(path, start_offset, start_line)` yielding `(RawLine, Entry | BadLine | None)`.
"""

from __future__ import annotations

from types import ModuleType

from memex.sources import claude

ADAPTERS: dict[str, ModuleType] = {"claude": claude}


def adapter(agent: str) -> ModuleType:
    """The source adapter module of `agent`."""
    return ADAPTERS[agent]
