"""What `Memex` answers: one record (`memex.plain.Record`) per kind of result, each with one `to_json()`.

`to_json()` is the contract of `memex … --json`, of the daemon's HTTP API and of the MCP server: a
key is added, never renamed or removed, and a value never changes type. Store rows that carry every
column of their table (a session in `show`, the turns of `show --turns`) are passed as dicts: their
columns are the schema's (`store/migrations.py`).

- `SearchResults` (`memex search`): a list of `SearchHit`.
- `SearchHit` (one search result): `source` (`turn`, or `mirror` for a session known only by its
  mirror), `id` (the turn's; null for a mirror), `mirror_id` (mirrors only), `session_id`, `agent_id`
  ("" for the main agent), `subagent_name` and `subagent_description` (a subagent's type or nickname and
  what it was asked, as its agent recorded them; null when unknown or for the main agent), `line_index`,
  `kind`, `is_sidechain`, `provisional`, `prompt_text`, `full_text`, `tool_summary`, `started_at`,
  `ended_at`, `agent`, `computer`, `project_dir`, `title`, `score`, `matched_chunk`, `explain` (what each
  ranked list said; absent from another computer's answer).
  A hit of `memex search --in tools` has `source` `tool` (the turn that ran the tool) and also `tool_name`
  (null when the call was not seen), `tool_is_error`, `tool_output_chars` (the output's whole length),
  `tool_line_index` and `tool_output_id`; its `matched_chunk` is an excerpt of that output.
- `ComputerSearch` (`GET /v1/search`): `{"computer", "results": [SearchHit…]}`, redacted.
- `SessionSummary` (`memex sessions list`, a list of them): `session_id`, `agent`, `computer`,
  `project_dir`, `title`, `started_at`, `ended_at`, `transcript_path`, `turns`, `subagents`, `prs`,
  `source`, `subagent_names` (the subagents' types or nicknames, as their agent recorded them).
- `SessionView` (`memex show`, `GET /v1/sessions/<id>/mirror`): `{"session", "mirror"}` (the mirror's
  fields, `metadata`, `messages` of `{role, text, timestamp}`; null when there is no conversation), or
  `{"session", "turns"}` with `--turns` (each turn with `subagent_name` and `subagent_description`, as a
  hit's).
- `Recall` (the prompt hook, the warm server's `recall`, MCP `recall`): `{"text", "hits"}`.
- `Injection` (the other hooks' context: after a compaction, a file's history, a session's recent files):
  `{"text", "items"}`.
- `Related` (`memex find-related sessions|turns`): `{"session", "results", "warnings"}`, and `window`,
  `query_turns` for turns.
- `Stats` (`memex stats`): counts, `database_bytes`, `agent_versions`, `unknown_record_types`,
  `embed_errors`.
- `ComputerList` (`memex computers`): `{"computers": [ComputerStatus…], "registry", "note"}`.

`SessionView`, `Related`, `Stats` and the computers' types live in `memex.reports`: a search or a session
list builds only its own classes.
"""

from __future__ import annotations

from typing import Any

from memex.plain import Record

# The fields of a search hit, in the order `to_json()` gives them (a turn hit's order).
_HIT_FIELDS = (
    "id",
    "session_id",
    "agent_id",
    "subagent_name",
    "subagent_description",
    "line_index",
    "kind",
    "is_sidechain",
    "provisional",
    "prompt_text",
    "full_text",
    "tool_summary",
    "started_at",
    "ended_at",
    "agent",
    "computer",
    "project_dir",
    "title",
)


class Result(Record):
    """A result: equality and repr by its fields (memex.plain: `@dataclass` would compile both anew for every
    class when the module is imported, which a quick command's start pays for: bench/cold_start.py)."""

    __slots__ = ()


class SearchHit(Result):
    """A turn (or, for a session known only by its mirror, that mirror) that matched a search."""

    __slots__ = (
        "agent",
        "agent_id",
        "computer",
        "ended_at",
        "explain",
        "extra",
        "full_text",
        "id",
        "is_sidechain",
        "kind",
        "line_index",
        "matched_chunk",
        "mirror_id",
        "project_dir",
        "prompt_text",
        "provisional",
        "score",
        "session_id",
        "source",
        "spans",
        "started_at",
        "subagent_description",
        "subagent_name",
        "title",
        "tool_summary",
    )

    source: str  # "turn" or "mirror"
    id: int | None
    session_id: str
    agent_id: str
    line_index: int | None
    kind: str
    is_sidechain: int
    provisional: int
    prompt_text: str
    full_text: str
    tool_summary: str
    started_at: str | None
    ended_at: str | None
    agent: str
    computer: str
    project_dir: str | None
    title: str | None
    score: float
    matched_chunk: str
    mirror_id: int | None
    # Where the query's words are in `matched_chunk`: [start, end) character offsets.
    spans: list[list[int]] | None
    explain: dict[str, Any] | None
    # A subagent's turn: the name and description its agent gave it (null when it gave none, for the main
    # agent's turns, for a mirror, and from a memex too old to send them).
    subagent_name: str | None
    subagent_description: str | None
    # Keys another computer's memex sent that this one does not know (a newer version's additions).
    extra: dict[str, Any]

    def __init__(
        self,
        source: str,
        id: int | None,
        session_id: str,
        agent_id: str,
        line_index: int | None,
        kind: str,
        is_sidechain: int,
        provisional: int,
        prompt_text: str,
        full_text: str,
        tool_summary: str,
        started_at: str | None,
        ended_at: str | None,
        agent: str,
        computer: str,
        project_dir: str | None,
        title: str | None,
        score: float,
        matched_chunk: str,
        mirror_id: int | None = None,
        spans: list[list[int]] | None = None,
        explain: dict[str, Any] | None = None,
        subagent_name: str | None = None,
        subagent_description: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.source = source
        self.id = id
        self.session_id = session_id
        self.agent_id = agent_id
        self.line_index = line_index
        self.kind = kind
        self.is_sidechain = is_sidechain
        self.provisional = provisional
        self.prompt_text = prompt_text
        self.full_text = full_text
        self.tool_summary = tool_summary
        self.started_at = started_at
        self.ended_at = ended_at
        self.agent = agent
        self.computer = computer
        self.project_dir = project_dir
        self.title = title
        self.score = score
        self.matched_chunk = matched_chunk
        self.mirror_id = mirror_id
        self.spans = spans
        self.explain = explain
        self.subagent_name = subagent_name
        self.subagent_description = subagent_description
        self.extra = {} if extra is None else extra

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SearchHit:
        """A hit from its JSON (or a search's row); keys it does not know are kept in `extra`."""
        known = {name for name in cls.__annotations__ if name != "extra"}
        values: dict[str, Any] = {name: data.get(name) for name in known}
        return cls(**values, extra={k: v for k, v in data.items() if k not in known})

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.source == "mirror":
            data["source"] = "mirror"
            data["id"] = self.id
            data["mirror_id"] = self.mirror_id
            data.update((name, getattr(self, name)) for name in _HIT_FIELDS[1:])
        else:
            data.update((name, getattr(self, name)) for name in _HIT_FIELDS)
            data["source"] = self.source
        data["score"] = self.score
        data["matched_chunk"] = self.matched_chunk
        if self.spans is not None:
            data["spans"] = self.spans
        if self.explain is not None:
            data["explain"] = self.explain
        data.update(self.extra)
        return data


class SearchResults(Result):
    """The hits of a search, and how they were found."""

    __slots__ = ("hits", "levels", "mode", "notes")

    hits: list[SearchHit]
    mode: str  # the mode actually used (hybrid degrades to lexical without a model)
    levels: list[str]
    notes: list[str]

    def __init__(
        self,
        hits: list[SearchHit],
        mode: str = "hybrid",
        levels: list[str] | None = None,
        notes: list[str] | None = None,
    ) -> None:
        self.hits = hits
        self.mode = mode
        self.levels = [] if levels is None else levels
        self.notes = [] if notes is None else notes

    def to_json(self) -> list[dict[str, Any]]:
        return [hit.to_json() for hit in self.hits]


class ComputerSearch(Result):
    """A computer's answer to `/v1/search`: its own sessions that matched, and what its search had to say
    of how it searched (`notes`: no model, no vectors yet: found by words only)."""

    __slots__ = ("computer", "hits", "notes")

    computer: str
    hits: list[SearchHit]
    notes: list[str]

    def __init__(self, computer: str, hits: list[SearchHit], notes: list[str] | None = None) -> None:
        self.computer = computer
        self.hits = hits
        self.notes = [] if notes is None else notes

    def to_json(self) -> dict[str, Any]:
        return {"computer": self.computer, "results": [hit.to_json() for hit in self.hits], "notes": self.notes}


class SessionSummary(Result):
    """A session in a listing, newest first."""

    __slots__ = (
        "agent",
        "computer",
        "ended_at",
        "project_dir",
        "prs",
        "session_id",
        "source",
        "started_at",
        "subagent_names",
        "subagents",
        "title",
        "transcript_path",
        "turns",
    )

    session_id: str
    agent: str
    computer: str
    project_dir: str | None
    title: str | None
    started_at: str | None
    ended_at: str | None
    transcript_path: str | None
    turns: int | None  # None for a session known only by its mirror (received from another computer)
    subagents: int
    prs: list[int]
    source: str  # "local": indexed here; "mirror": received from `computer`
    # The names its agent gave its subagents, in id order (those it named: fewer than `subagents` then).
    subagent_names: list[str]

    def __init__(
        self,
        session_id: str,
        agent: str,
        computer: str,
        project_dir: str | None,
        title: str | None,
        started_at: str | None,
        ended_at: str | None,
        transcript_path: str | None,
        turns: int | None,
        subagents: int,
        prs: list[int],
        source: str = "local",
        subagent_names: list[str] | None = None,
    ) -> None:
        self.session_id = session_id
        self.agent = agent
        self.computer = computer
        self.project_dir = project_dir
        self.title = title
        self.started_at = started_at
        self.ended_at = ended_at
        self.transcript_path = transcript_path
        self.turns = turns
        self.subagents = subagents
        self.prs = prs
        self.source = source
        self.subagent_names = [] if subagent_names is None else subagent_names

    def to_json(self) -> dict[str, Any]:
        # copies, as `dataclasses.asdict` made
        return {**self.as_dict(), "prs": list(self.prs), "subagent_names": list(self.subagent_names)}


class Recall(Result):
    """What the prompt hook injects for a prompt, and how many turns it holds."""

    __slots__ = ("hits", "text")

    text: str
    hits: int

    def __init__(self, text: str, hits: int) -> None:
        self.text = text
        self.hits = hits

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "hits": self.hits}


class Injection(Result):
    """Context a hook injects (what a compaction dropped, who touched a file before, the files a session
    touched), and how many turns or files it holds; `text` is "" when there is nothing to say."""

    __slots__ = ("items", "text")

    text: str
    items: int

    def __init__(self, text: str, items: int) -> None:
        self.text = text
        self.items = items

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "items": self.items}
