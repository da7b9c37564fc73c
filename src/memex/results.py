"""What `Memex` answers: one dataclass per kind of result, each with one `to_json()`.

`to_json()` is the contract of `memex … --json`, of the daemon's HTTP API and of the MCP server: a
key is added, never renamed or removed, and a value never changes type. Store rows that carry every
column of their table (a session in `show`, the turns of `show --turns`) are passed as dicts: their
columns are the schema's (`store/migrations.py`).

- `SearchResults` (`memex search`): a list of `SearchHit`.
- `SearchHit` (one search result): `source` (`turn`, or `mirror` for a session known only by its
  mirror), `id` (the turn's; null for a mirror), `mirror_id` (mirrors only), `session_id`, `agent_id`
  ("" for the main agent), `line_index`, `kind`, `is_sidechain`, `provisional`, `prompt_text`,
  `full_text`, `tool_summary`, `started_at`, `ended_at`, `agent`, `computer`, `project_dir`, `title`,
  `score`, `matched_chunk`, `explain` (what each ranked list said; absent from another computer's answer).
  A hit of `memex search --in tools` has `source` `tool` (the turn that ran the tool) and also `tool_name`
  (null when the call was not seen), `tool_is_error`, `tool_output_chars` (the output's whole length),
  `tool_line_index` and `tool_output_id`; its `matched_chunk` is an excerpt of that output.
- `ComputerSearch` (`GET /v1/search`): `{"computer", "results": [SearchHit…]}`, redacted.
- `SessionSummary` (`memex sessions list`, a list of them): `session_id`, `agent`, `computer`,
  `project_dir`, `title`, `started_at`, `ended_at`, `transcript_path`, `turns`, `subagents`, `prs`.
- `SessionView` (`memex show`, `GET /v1/sessions/<id>/mirror`): `{"session", "mirror"}` (the mirror's
  fields, `metadata`, `messages` of `{role, text, timestamp}`; null when there is no conversation), or
  `{"session", "turns"}` with `--turns`.
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

from dataclasses import asdict, dataclass, field
from typing import Any

# The fields of a search hit, in the order `to_json()` gives them (a turn hit's order).
_HIT_FIELDS = (
    "id",
    "session_id",
    "agent_id",
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


class Result:
    """Equality and repr from the fields, written once: `@dataclass` would compile both anew for every
    class when the module is imported, which a quick command's start pays for (bench/cold_start.py)."""

    def _values(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in getattr(self, "__dataclass_fields__"))  # noqa: B009

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass with eq

    def __repr__(self) -> str:
        values = zip(getattr(self, "__dataclass_fields__"), self._values(), strict=True)  # noqa: B009
        return f"{type(self).__qualname__}({', '.join(f'{name}={value!r}' for name, value in values)})"


@dataclass(eq=False, repr=False)
class SearchHit(Result):
    """A turn (or, for a session known only by its mirror, that mirror) that matched a search."""

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
    mirror_id: int | None = None
    # Where the query's words are in `matched_chunk`: [start, end) character offsets.
    spans: list[list[int]] | None = None
    explain: dict[str, Any] | None = None
    # Keys another computer's memex sent that this one does not know (a newer version's additions).
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SearchHit:
        """A hit from its JSON (or a search's row); keys it does not know are kept in `extra`."""
        known = {name for name in cls.__dataclass_fields__ if name != "extra"}
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


@dataclass(eq=False, repr=False)
class SearchResults(Result):
    """The hits of a search, and how they were found."""

    hits: list[SearchHit]
    mode: str = "hybrid"  # the mode actually used (hybrid degrades to lexical without a model)
    levels: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> list[dict[str, Any]]:
        return [hit.to_json() for hit in self.hits]


@dataclass(eq=False, repr=False)
class ComputerSearch(Result):
    """A computer's answer to `/v1/search`: its own sessions that matched."""

    computer: str
    hits: list[SearchHit]

    def to_json(self) -> dict[str, Any]:
        return {"computer": self.computer, "results": [hit.to_json() for hit in self.hits]}


@dataclass(eq=False, repr=False)
class SessionSummary(Result):
    """A session in a listing, newest first."""

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
    source: str = "local"  # "local": indexed here; "mirror": received from `computer`

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(eq=False, repr=False)
class Recall(Result):
    """What the prompt hook injects for a prompt, and how many turns it holds."""

    text: str
    hits: int

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "hits": self.hits}


@dataclass(eq=False, repr=False)
class Injection(Result):
    """Context a hook injects (what a compaction dropped, who touched a file before, the files a session
    touched), and how many turns or files it holds; `text` is "" when there is nothing to say."""

    text: str
    items: int

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "items": self.items}
