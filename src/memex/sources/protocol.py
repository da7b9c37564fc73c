"""What a source adapter is: one module per agent that finds its transcripts and turns their records into
normalised entries. A new agent is one such module (registered in `sources.ADAPTERS`), its fixtures and
its tests; mypy checks every registered module against `SourceAdapter`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol

from memex.sources.files import Skipped
from memex.sources.jsonl import RawLine
from memex.sources.model import BadLine, Entry, Transcript


class SourceAdapter(Protocol):
    """The module of one agent (`memex.sources.claude`…). Optional: `invoked_name(path, agent_id)`, the name
    a subagent's parent gave it when the subagent's own file holds none (Gemini), asked again each time the
    parent is read (`memex.ingest.pipeline`)."""

    # The agent's name, as sessions and `--agent` know it.
    AGENT: str
    # True when transcripts only grow (JSONL): an ingest resumes at the byte where the last one stopped.
    # False when a file is rewritten (a JSON document): it is re-read whole whenever it changes.
    INCREMENTAL: bool

    def discover(self, roots: Iterable[Path], skipped: list[Skipped] | None = None, /) -> list[Transcript]:
        """Every transcript of this agent under `roots` (files or folders), parents before subagents;
        files that look like transcripts but cannot be read go to `skipped`."""
        ...

    def classify(self, path: Path, /) -> Transcript | None:
        """The transcript `path` is, when it is one of this agent's (never claims another agent's file)."""
        ...

    def subagent_transcripts(self, session_path: Path, /) -> list[Transcript]:
        """The transcripts of the subagents of the session whose transcript is `session_path`."""
        ...

    def read_entries(
        self, path: Path, start_offset: int = 0, start_line: int = 0, max_line_bytes: int = ...
    ) -> Iterator[tuple[RawLine, Entry | BadLine | None]]:
        """Each record from `start_offset` (line `start_line`), with its entry: an Entry, a BadLine (a
        record that cannot be read, counted and skipped) or None (nothing to keep)."""
        ...
