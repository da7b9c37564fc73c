"""What the other doors answer (`memex show`, `find-related`, `stats`, `computers`): their result types,
each with one `to_json()` under the contract of `memex.results` (which documents them). Apart from the
search and listing results, so a quick command's start does not build these classes.
"""

from __future__ import annotations

import copy
from typing import Any

from memex.results import Result


class SessionView(Result):
    """A session as `show` gives it: its row (prs, subagents included) and its conversation (`mirror`,
    None when it has none) or, with `turns`, its full turns."""

    __slots__ = ("mirror", "session", "turns")

    session: dict[str, Any]
    mirror: dict[str, Any] | None
    turns: list[dict[str, Any]] | None

    def __init__(
        self,
        session: dict[str, Any],
        mirror: dict[str, Any] | None = None,
        turns: list[dict[str, Any]] | None = None,
    ) -> None:
        self.session = session
        self.mirror = mirror
        self.turns = turns

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.mirror["messages"] if self.mirror else []

    def to_json(self) -> dict[str, Any]:
        if self.turns is not None:
            return {"session": self.session, "turns": self.turns}
        return {"session": self.session, "mirror": self.mirror}


class Related(Result):
    """Sessions (or stretches of turns) that worked on the same files as `session`."""

    __slots__ = ("query_turns", "results", "session", "warnings", "window")

    session: dict[str, Any]
    results: list[dict[str, Any]]
    warnings: list[str]
    window: int | None  # turns compared (find-related turns only)
    query_turns: list[dict[str, Any]] | None  # the session's last turns compared (turns only)

    def __init__(
        self,
        session: dict[str, Any],
        results: list[dict[str, Any]],
        warnings: list[str] | None = None,
        window: int | None = None,
        query_turns: list[dict[str, Any]] | None = None,
    ) -> None:
        self.session = session
        self.results = results
        self.warnings = [] if warnings is None else warnings
        self.window = window
        self.query_turns = query_turns

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


class Stats(Result):
    """What the store holds."""

    __slots__ = (
        "agent_versions",
        "archive_bytes",
        "archive_ratio",
        "archived_originals_gone",
        "archived_transcript_bytes",
        "archived_transcripts",
        "bad_lines",
        "chunks",
        "database",
        "database_bytes",
        "embed_errors",
        "embed_jobs",
        "entries",
        "file_mentions",
        "mirrors",
        "pr_links",
        "provisional_turns",
        "sessions",
        "sessions_by_agent",
        "subagent_sessions",
        "tool_outputs",
        "turns",
        "unknown_record_types",
        "vectors_by_level",
    )

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

    def __init__(
        self,
        database: str,
        database_bytes: int,
        sessions: int,
        sessions_by_agent: dict[str, int],
        subagent_sessions: int,
        entries: int,
        turns: int,
        provisional_turns: int,
        chunks: int,
        tool_outputs: int,
        file_mentions: int,
        pr_links: int,
        mirrors: int,
        bad_lines: int,
        vectors_by_level: dict[str, int],
        embed_jobs: dict[str, int],
        embed_errors: list[dict[str, Any]],
        agent_versions: dict[str, dict[str, int]],
        unknown_record_types: list[dict[str, Any]],
        archived_transcripts: int,
        archived_transcript_bytes: int,
        archive_bytes: int,
        archive_ratio: float | None,
        archived_originals_gone: int,
    ) -> None:
        self.database = database
        self.database_bytes = database_bytes
        self.sessions = sessions
        self.sessions_by_agent = sessions_by_agent
        self.subagent_sessions = subagent_sessions
        self.entries = entries
        self.turns = turns
        self.provisional_turns = provisional_turns
        self.chunks = chunks
        self.tool_outputs = tool_outputs
        self.file_mentions = file_mentions
        self.pr_links = pr_links
        self.mirrors = mirrors
        self.bad_lines = bad_lines
        self.vectors_by_level = vectors_by_level
        self.embed_jobs = embed_jobs
        self.embed_errors = embed_errors
        self.agent_versions = agent_versions
        self.unknown_record_types = unknown_record_types
        self.archived_transcripts = archived_transcripts
        self.archived_transcript_bytes = archived_transcript_bytes
        self.archive_bytes = archive_bytes
        self.archive_ratio = archive_ratio
        self.archived_originals_gone = archived_originals_gone

    def to_json(self) -> dict[str, Any]:
        return copy.deepcopy(self.as_dict())  # as `dataclasses.asdict` copied


class ComputerStatus(Result):
    """A computer sharing mirrors under this prefix."""

    __slots__ = ("api_url", "computer", "last_seen", "mirrors_here", "sessions", "status", "this_computer", "version")

    computer: str
    this_computer: bool
    status: str  # live, stale, unknown
    last_seen: str | None
    sessions: int | None
    mirrors_here: int
    version: str | None
    api_url: str | None

    def __init__(
        self,
        computer: str,
        this_computer: bool,
        status: str,
        last_seen: str | None,
        sessions: int | None,
        mirrors_here: int,
        version: str | None,
        api_url: str | None,
    ) -> None:
        self.computer = computer
        self.this_computer = this_computer
        self.status = status
        self.last_seen = last_seen
        self.sessions = sessions
        self.mirrors_here = mirrors_here
        self.version = version
        self.api_url = api_url

    def to_json(self) -> dict[str, Any]:
        return self.as_dict()  # plain values only


class ComputerList(Result):
    """The computers known, where that was read (`redis`, or the `local copy` when Redis was not asked)
    and why Redis was not asked."""

    __slots__ = ("computers", "note")

    computers: list[ComputerStatus]
    note: str | None

    def __init__(self, computers: list[ComputerStatus], note: str | None) -> None:
        self.computers = computers
        self.note = note

    @property
    def registry(self) -> str:
        return "redis" if self.note is None else "local copy"

    def to_json(self) -> dict[str, Any]:
        return {"computers": [c.to_json() for c in self.computers], "registry": self.registry, "note": self.note}
