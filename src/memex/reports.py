"""What the other doors answer (`memex show`, `find-related`, `stats`, `computers`): their result types,
each with one `to_json()` under the contract of `memex.results` (which documents them). Apart from the
search and listing results, so a quick command's start does not build these classes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from memex.results import Result


@dataclass(eq=False, repr=False)
class SessionView(Result):
    """A session as `show` gives it: its row (prs, subagents included) and its conversation (`mirror`,
    None when it has none) or, with `turns`, its full turns."""

    session: dict[str, Any]
    mirror: dict[str, Any] | None = None
    turns: list[dict[str, Any]] | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.mirror["messages"] if self.mirror else []

    def to_json(self) -> dict[str, Any]:
        if self.turns is not None:
            return {"session": self.session, "turns": self.turns}
        return {"session": self.session, "mirror": self.mirror}


@dataclass(eq=False, repr=False)
class Related(Result):
    """Sessions (or stretches of turns) that worked on the same files as `session`."""

    session: dict[str, Any]
    results: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    window: int | None = None  # turns compared (find-related turns only)
    query_turns: list[dict[str, Any]] | None = None  # the session's last turns compared (turns only)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Related:
        return cls(
            data["session"], data["results"], data.get("warnings", []), data.get("window"), data.get("query_turns")
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"session": self.session, "results": self.results}
        if self.window is not None:
            data["window"] = self.window
            data["query_turns"] = self.query_turns
        data["warnings"] = self.warnings
        return data


@dataclass(eq=False, repr=False)
class Stats(Result):
    """What the store holds."""

    database: str
    database_bytes: int
    sessions: int
    sessions_by_agent: dict[str, int]
    subagent_sessions: int
    entries: int
    turns: int
    provisional_turns: int
    chunks: int
    tool_outputs: int  # outputs of tool calls, searched by `memex search --in tools`
    file_mentions: int
    pr_links: int
    mirrors: int
    bad_lines: int
    vectors_by_level: dict[str, int]
    embed_jobs: dict[str, int]
    embed_errors: list[dict[str, Any]]
    agent_versions: dict[str, dict[str, int]]
    unknown_record_types: list[dict[str, Any]]
    # The archive (copies of the transcripts, kept when the agents delete them).
    archived_transcripts: int
    archived_transcript_bytes: int
    archive_bytes: int
    archive_ratio: float | None
    archived_originals_gone: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(eq=False, repr=False)
class ComputerStatus(Result):
    """A computer sharing mirrors under this prefix."""

    computer: str
    this_computer: bool
    status: str  # live, stale, unknown
    last_seen: str | None
    sessions: int | None
    mirrors_here: int
    version: str | None
    api_url: str | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(eq=False, repr=False)
class ComputerList(Result):
    """The computers known, where that was read (`redis`, or the `local copy` when Redis was not asked)
    and why Redis was not asked."""

    computers: list[ComputerStatus]
    note: str | None

    @property
    def registry(self) -> str:
        return "redis" if self.note is None else "local copy"

    def to_json(self) -> dict[str, Any]:
        return {"computers": [c.to_json() for c in self.computers], "registry": self.registry, "note": self.note}
