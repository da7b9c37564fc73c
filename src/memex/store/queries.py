"""Read queries over the store: filters, sessions, turns, statistics."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from memex.errors import UserError
from memex.plain import FrozenRecord


class Filters(FrozenRecord):
    """What narrows a search or a listing. Every field is optional."""

    __slots__ = ("agent", "exclude_session", "file", "include_subagents", "pr", "project", "session", "since", "until")

    project: Final[str | None]  # a path (this folder and below) or a folder name
    agent: Final[str | None]
    since: Final[str | None]  # normalised timestamps
    until: Final[str | None]
    session: Final[str | None]  # a session id or unique prefix
    file: Final[str | None]  # turns that touched this file
    pr: Final[int | None]  # sessions linked to this pull request
    include_subagents: Final[bool]
    exclude_session: Final[str | None]  # never this session's turns (a hook's own session)

    def __init__(
        self,
        project: str | None = None,
        agent: str | None = None,
        since: str | None = None,
        until: str | None = None,
        session: str | None = None,
        file: str | None = None,
        pr: int | None = None,
        include_subagents: bool = True,
        exclude_session: str | None = None,
    ) -> None:
        self.project = project
        self.agent = agent
        self.since = since
        self.until = until
        self.session = session
        self.file = file
        self.pr = pr
        self.include_subagents = include_subagents
        self.exclude_session = exclude_session

    @classmethod
    def parse(cls, values: Mapping[str, Any]) -> Filters:
        """Filters from what a person typed (CLI options, HTTP query parameters): `project`, `agent`,
        `since` and `until` (2026-05-01, ISO time, or 7d / 12h / 2w ago; a bare `until` date includes its
        day), `session` (an id or prefix), `file`, `pr`. Absent or empty values filter nothing; UserError
        names a value that does not parse."""
        from memex.sources import ADAPTERS  # the agents' names (store/ imports nothing else above it)
        from memex.textutil import parse_when

        try:
            since = parse_when(values["since"]) if values.get("since") else None
            until = parse_when(values["until"], end_of_day=True) if values.get("until") else None
        except ValueError as exc:
            raise UserError(str(exc)) from None
        agent = values.get("agent") or None
        if agent is not None and agent not in ADAPTERS:
            raise UserError(f"unknown agent {agent!r}")
        pr = values.get("pr")
        if pr is not None:
            number = pr if type(pr) is int else int(pr) if str(pr).strip().isdecimal() else 0
            if not 0 < number < 2**63:  # an SQLite integer
                raise UserError(f"pr must be a pull request number, got {pr!r}")
            pr = number
        return cls(
            project=values.get("project") or None,
            agent=agent,
            since=since,
            until=until,
            session=values.get("session") or None,
            file=values.get("file") or None,
            pr=pr,
        )

    def _project_clause(self, column: str) -> tuple[str, list[Any]]:
        assert self.project
        if "/" in self.project or self.project in (".", "~"):
            root = str(Path(self.project).expanduser().resolve())
            params = [root, _like_escape(root.rstrip("/")) + "/%"]  # the root folder: "/%", not "//%"
        else:
            params = [self.project, "%/" + _like_escape(self.project)]
        return f"({column} = ? OR {column} LIKE ? ESCAPE '\\')", params

    def session_clauses(self, s: str = "s") -> tuple[list[str], list[Any]]:
        """SQL conditions (and their parameters) on the sessions table aliased `s`."""
        clauses: list[str] = []
        params: list[Any] = []
        if self.project:
            clause, values = self._project_clause(f"{s}.project_dir")
            clauses.append(clause)
            params += values
        if self.agent:
            clauses.append(f"{s}.agent = ?")
            params.append(self.agent)
        if self.session:
            clauses.append(f"{s}.session_id LIKE ? ESCAPE '\\'")
            params.append(_like_escape(self.session) + "%")
        if self.pr is not None:
            clauses.append(f"{s}.session_id IN (SELECT session_id FROM pr_links WHERE pr_number = ?)")
            params.append(self.pr)
        if self.exclude_session:
            # Also the `<id>-<hash>` form a second file claiming the same session id is stored under.
            clauses.append(f"{s}.session_id != ? AND {s}.session_id NOT LIKE ? ESCAPE '\\'")
            params += [self.exclude_session, _like_escape(self.exclude_session) + "-%"]
        return clauses, params

    def turn_clauses(self, t: str = "t", s: str = "s") -> tuple[list[str], list[Any]]:
        """SQL conditions on turns aliased `t` joined to their session aliased `s`."""
        clauses, params = self.session_clauses(s)
        if self.since:
            clauses.append(f"coalesce({t}.started_at, {s}.started_at) >= ?")
            params.append(self.since)
        if self.until:
            clauses.append(f"coalesce({t}.started_at, {s}.started_at) <= ?")
            params.append(self.until)
        if not self.include_subagents:
            clauses.append(f"{t}.agent_id = ''")
        if self.file:
            clause, values = _file_clause(self.file, t)
            clauses.append(clause)
            params += values
        return clauses, params

    def mirror_clauses(self, m: str = "m") -> tuple[list[str], list[Any]] | None:
        """SQL conditions on the mirrors table aliased `m`; None when the filters need what mirrors do not
        record (the files a turn touched, pull requests)."""
        if self.file or self.pr is not None:
            return None
        clauses: list[str] = []
        params: list[Any] = []
        if self.project:
            clause, values = self._project_clause(f"{m}.project")
            clauses.append(clause)
            params += values
        if self.agent:
            clauses.append(f"{m}.agent = ?")
            params.append(self.agent)
        if self.session:
            clauses.append(f"{m}.session_id LIKE ? ESCAPE '\\'")
            params.append(_like_escape(self.session) + "%")
        if self.since:
            clauses.append(f"coalesce({m}.timestamp_end, {m}.timestamp_start) >= ?")
            params.append(self.since)
        if self.until:
            clauses.append(f"{m}.timestamp_start <= ?")
            params.append(self.until)
        return clauses, params


def _like_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def path_suffixes(path: str) -> list[str]:
    """How `file_mentions` may hold absolute `path`: as is, or relative to any folder above it."""
    parts = Path(path).parts
    return [path, *("/".join(parts[i:]) for i in range(2, len(parts)))]


def _file_clause(path: str, t: str) -> tuple[str, list[Any]]:
    """Turns (aliased `t`) that touched `path`.

    A path as written matches a mention stored that way or ending with it (`cart.py` finds `src/cart.py`);
    its absolute form (relative paths are read from the current folder) also matches a mention stored
    relative to its session's project folder, which is how paths inside a project are kept.
    """
    written = os.path.normpath(path.strip()).removeprefix("./")
    absolute = os.path.abspath(os.path.expanduser(path.strip()))
    suffixes = path_suffixes(absolute)
    marks = ",".join("?" * len(suffixes))
    sql = (
        f"{t}.id IN (SELECT fm.turn_id FROM file_mentions fm WHERE fm.file_path IN (?, ?) "
        "OR fm.file_path LIKE ? ESCAPE '\\' "
        "UNION SELECT fm.turn_id FROM file_mentions fm JOIN sessions ps ON ps.session_id = fm.session_id "
        f"WHERE fm.file_path IN ({marks}) AND rtrim(ps.project_dir, '/') || '/' || fm.file_path = ?)"
    )
    return sql, [written, absolute, "%/" + _like_escape(written.lstrip("/")), *suffixes, absolute]


def where(clauses: list[str]) -> str:
    return (" WHERE " + " AND ".join(clauses)) if clauses else ""


def list_sessions(conn: sqlite3.Connection, filters: Filters, limit: int = 20) -> list[dict[str, Any]]:
    """Sessions newest first by start time, with their turn counts, subagents and pull requests."""
    clauses, params = filters.session_clauses("s")
    if filters.since:
        clauses.append("s.started_at >= ?")
        params.append(filters.since)
    if filters.until:
        clauses.append("s.started_at <= ?")
        params.append(filters.until)
    rows = conn.execute(
        "SELECT s.session_id, s.agent, s.computer, s.project_dir, s.title, s.started_at, s.ended_at, "
        "s.transcript_path, "
        "(SELECT count(*) FROM turns t WHERE t.session_id = s.session_id AND t.agent_id = '') AS turns, "
        # Its subagents' names (null where none was recorded): their count, and who they were.
        f"(SELECT json_group_array(a.agent_type) FROM subagent_sessions a WHERE a.session_id = s.session_id "
        f"AND {_SUBAGENT_WORKED}) AS subagents, "
        "(SELECT group_concat(DISTINCT pr_number) FROM pr_links p WHERE p.session_id = s.session_id) AS prs "
        f"FROM sessions s{where(clauses)} "
        "ORDER BY s.started_at IS NULL, s.started_at DESC, s.session_id LIMIT ?",
        [*params, limit],
    ).fetchall()
    sessions = []
    for row in rows:
        item = dict(row)
        item["prs"] = [int(n) for n in row["prs"].split(",")] if row["prs"] else []
        names = json.loads(row["subagents"])
        item["subagents"], item["subagent_names"] = len(names), [name for name in names if name]
        sessions.append(item)
    return sessions


# A subagent (`subagent_sessions a`) that left at least one turn. Claude Code 2.0 primed two subagents with
# "Warmup" at the start of every session, whose turns are not kept: counted, every such session listed
# "+2 subagents" and `show` sent the user to `--turns`, which had none of them to show.
_SUBAGENT_WORKED = "EXISTS (SELECT 1 FROM turns t WHERE t.session_id = a.session_id AND t.agent_id = a.agent_id)"


# A turn's subagent's name and description (null for the main agent's turns, or a subagent never named):
# joined wherever turns are read for a person (`memex show --turns`, search results, recall, find-related).
_SUBAGENT_NAME_COLUMNS = "a.agent_type AS subagent_name, a.description AS subagent_description"
_SUBAGENT_NAME_JOIN = (
    "LEFT JOIN subagent_sessions a ON t.agent_id != '' AND a.session_id = t.session_id AND a.agent_id = t.agent_id"
)


def resolve_session(conn: sqlite3.Connection, prefix: str, agent: str | None = None) -> str:
    """The full id of the one session (indexed here, or known by its mirror) whose id starts with `prefix`."""
    prefix = prefix.strip()
    if not prefix:
        raise UserError("give a session id (or a unique prefix of one)")
    pattern = _like_escape(prefix) + "%"
    agent_clause = " AND agent = ?" if agent else ""
    rows = conn.execute(
        f"SELECT session_id FROM sessions WHERE session_id LIKE ? ESCAPE '\\'{agent_clause} UNION "
        f"SELECT session_id FROM mirrors WHERE session_id LIKE ? ESCAPE '\\'{agent_clause} "
        "ORDER BY session_id LIMIT 6",
        [pattern, *([agent] if agent else []), pattern, *([agent] if agent else [])],
    ).fetchall()
    if not rows:
        raise UserError(f"no {agent + ' ' if agent else ''}session matches {prefix!r}{_subagent_hint(conn, prefix)}")
    exact = [r["session_id"] for r in rows if r["session_id"] == prefix]
    if exact:
        return exact[0]
    if len(rows) > 1:
        shown = ", ".join(r["session_id"] for r in rows[:5])
        raise UserError(f"{prefix!r} matches several sessions ({shown}…): give more characters")
    return rows[0]["session_id"]


def _subagent_hint(conn: sqlite3.Connection, prefix: str) -> str:
    """Where a subagent whose id starts with `prefix` is found, said after "no session matches": search
    results and `--turns` label a subagent's turns with its id (`[Subagent: 01a209d0-fa7c-…]`), and an
    agent may list it as a session of its own (OpenCode's child sessions), so users give it as one."""
    rows = conn.execute(
        "SELECT session_id, agent_id FROM subagent_sessions WHERE agent_id LIKE ? ESCAPE '\\' "
        "ORDER BY session_id, agent_id LIMIT 2",
        (_like_escape(prefix) + "%",),
    ).fetchall()
    if len(rows) != 1:
        return ""
    return f": it is subagent {rows[0]['agent_id']} of session {rows[0]['session_id']}, shown with its turns"


def get_session(conn: sqlite3.Connection, session_id: str) -> dict[str, Any]:
    """One session's row, with its pull requests and subagents."""
    row = conn.execute("SELECT * FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    if row is None:
        raise UserError(f"no session {session_id!r}")
    session = dict(row)
    session["prs"] = pull_requests_of(conn, session_id)
    subagents = conn.execute(
        "SELECT agent_id, agent_type, description FROM subagent_sessions a "
        f"WHERE a.session_id = ? AND {_SUBAGENT_WORKED} ORDER BY agent_id",
        (session_id,),
    ).fetchall()
    session["subagents"] = [r["agent_id"] for r in subagents]
    # Its own turns, as `sessions list` counts them (with `subagents`: whether `--turns` has anything to show).
    session["turns"] = conn.execute(
        "SELECT count(*) FROM turns WHERE session_id = ? AND agent_id = ''", (session_id,)
    ).fetchone()[0]
    # What the agent said of each (Claude Code's agent-<id>.meta.json), where it did.
    session["subagent_details"] = [dict(r) for r in subagents]
    return session


def session_turns(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """A session's turns in time order, subagent turns where they happened (with their subagent's name)."""
    rows = conn.execute(
        "SELECT t.id, t.agent_id, t.line_index, t.kind, t.is_sidechain, t.provisional, t.prompt_text, t.full_text, "
        f"t.tool_summary, t.started_at, t.ended_at, {_SUBAGENT_NAME_COLUMNS} FROM turns t {_SUBAGENT_NAME_JOIN} "
        "WHERE t.session_id = ? ORDER BY coalesce(t.started_at, ''), t.agent_id != '', t.line_index",
        (session_id,),
    ).fetchall()
    return [dict(r) for r in rows]


def turns_by_ids(conn: sqlite3.Connection, turn_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Turns with their session's fields, keyed by turn id."""
    if not turn_ids:
        return {}
    marks = ",".join("?" * len(turn_ids))
    rows = conn.execute(
        "SELECT t.id, t.session_id, t.agent_id, t.line_index, t.kind, t.is_sidechain, t.provisional, "
        "t.prompt_text, t.full_text, t.tool_summary, t.started_at, t.ended_at, s.agent, s.computer, "
        f"s.project_dir, s.title, {_SUBAGENT_NAME_COLUMNS} FROM turns t JOIN sessions s ON s.session_id = t.session_id "
        f"{_SUBAGENT_NAME_JOIN} WHERE t.id IN ({marks})",
        turn_ids,
    ).fetchall()
    return {r["id"]: dict(r) for r in rows}


def statistics(conn: sqlite3.Connection, db_path: Path) -> dict[str, Any]:
    """Counts of what the store holds, and its size on disk."""

    def count(sql: str) -> int:
        return conn.execute(sql).fetchone()[0]

    by_agent = {
        r["agent"]: r["n"]
        for r in conn.execute("SELECT agent, count(*) AS n FROM sessions GROUP BY agent ORDER BY agent")
    }
    size = sum(
        Path(str(db_path) + suffix).stat().st_size
        for suffix in ("", "-wal", "-shm")
        if Path(str(db_path) + suffix).exists()
    )
    return {
        "database": str(db_path),
        "database_bytes": size,
        "sessions": count("SELECT count(*) FROM sessions"),
        "sessions_by_agent": by_agent,
        "subagent_sessions": count("SELECT count(*) FROM subagent_sessions"),
        "entries": count("SELECT count(*) FROM entries"),
        "turns": count("SELECT count(*) FROM turns"),
        "provisional_turns": count("SELECT count(*) FROM turns WHERE provisional = 1"),
        "chunks": count("SELECT count(*) FROM chunks"),
        "tool_outputs": count("SELECT count(*) FROM tool_outputs"),
        "file_mentions": count("SELECT count(*) FROM file_mentions"),
        "pr_links": count("SELECT count(*) FROM pr_links"),
        "mirrors": count("SELECT count(*) FROM mirrors"),
        "bad_lines": count("SELECT coalesce(sum(bad_lines), 0) FROM sessions")
        + count("SELECT coalesce(sum(bad_lines), 0) FROM subagent_sessions"),
        "vectors_by_level": {
            r[0]: r[1] for r in conn.execute("SELECT level, count(*) FROM vectors GROUP BY level ORDER BY level")
        },
        "embed_jobs": {
            r[0]: r[1] for r in conn.execute("SELECT status, count(*) FROM embed_jobs GROUP BY status ORDER BY status")
        },
        "embed_errors": [
            dict(r)
            for r in conn.execute(
                "SELECT level, owner_id, status, attempts, last_error, updated_at FROM embed_jobs "
                "WHERE last_error IS NOT NULL ORDER BY updated_at DESC LIMIT 5"
            )
        ],
        "agent_versions": agent_versions(conn),
        "unknown_record_types": unknown_record_types(conn),
    }


def session_count(conn: sqlite3.Connection) -> int:
    """How many sessions are indexed here."""
    return int(conn.execute("SELECT count(*) FROM sessions").fetchone()[0])


def mirror_counts(conn: sqlite3.Connection) -> dict[str, int]:
    """How many mirrors this store holds of each computer."""
    return dict(conn.execute("SELECT computer, count(*) FROM mirrors GROUP BY computer").fetchall())


def agent_versions(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """Sessions per agent and version of the agent that wrote them (newest version first)."""
    versions: dict[str, dict[str, int]] = {}
    for row in conn.execute(
        "SELECT agent, coalesce(agent_version, 'unknown') AS version, count(*) AS n FROM sessions "
        "GROUP BY agent, version ORDER BY agent, max(coalesce(started_at, '')) DESC, version DESC"
    ):
        versions.setdefault(row["agent"], {})[row["version"]] = row["n"]
    return versions


def unknown_record_types(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Format drift: records of types their agent's adapter does not know, per agent, version and type."""
    return [
        dict(r)
        for r in conn.execute(
            "SELECT s.agent, coalesce(u.agent_version, s.agent_version) AS version, u.record_type, "
            "count(*) AS records, count(DISTINCT u.session_id) AS sessions, "
            "max(coalesce(s.ended_at, s.started_at)) AS last_seen "
            "FROM unknown_records u JOIN sessions s ON s.session_id = u.session_id "
            "GROUP BY s.agent, version, u.record_type ORDER BY last_seen DESC, records DESC, s.agent, u.record_type"
        )
    ]


def pull_requests_of(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """A session's pull requests, each once (by URL): those the agent recorded first, then as first seen."""
    return [
        dict(r)
        for r in conn.execute(
            "SELECT pr_number, pr_url, repository, CASE WHEN min(source != 'record') THEN 'text' ELSE 'record' END "
            "AS source FROM pr_links WHERE session_id = ? GROUP BY link_key "
            "ORDER BY min(source != 'record'), min(agent_id != ''), min(line_index), pr_number",
            (session_id,),
        )
    ]


def latest_session_in(conn: sqlite3.Connection, folder: str) -> str | None:
    """The most recently active session of the project `folder` is in: the deepest indexed project that is
    `folder` or a folder above it (as written, or with links resolved)."""
    candidates: list[str] = []
    for path in dict.fromkeys((Path(folder), Path(folder).resolve())):
        candidates += [str(path), *(str(parent) for parent in path.parents)]
    row = conn.execute(
        "SELECT session_id FROM sessions WHERE rtrim(project_dir, '/') IN (SELECT value FROM json_each(?)) "
        "ORDER BY length(project_dir) DESC, coalesce(ended_at, started_at) DESC, session_id LIMIT 1",
        (json.dumps(list(dict.fromkeys(candidates))),),
    ).fetchone()
    return row[0] if row else None


# --- what the hooks read ---------------------------------------------------------------------------


def session_row(conn: sqlite3.Connection, session_id: str | None, transcript_path: str | None) -> sqlite3.Row | None:
    """The stored session a hook's input names: by its transcript file (resolved) first, else by id."""
    if transcript_path:
        key = str(Path(transcript_path).expanduser().resolve())
        row = conn.execute("SELECT * FROM sessions WHERE transcript_path = ?", (key,)).fetchone()
        if row is not None:
            return row
    if session_id:
        return conn.execute("SELECT * FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    return None


def is_indexed(conn: sqlite3.Connection, session_id: str) -> bool:
    """True when the session is indexed here (not only known by another computer's mirror)."""
    return conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone() is not None


def ingest_mark(
    conn: sqlite3.Connection, session_id: str, subagent_id: str | None, resolved_path: str
) -> tuple[int | None, int | None, int] | None:
    """(file size, mtime in ns, byte offset) a transcript had at its last ingest; None if never ingested. A
    subagent's transcript is found by its session and agent ids, a session's by its resolved path."""
    if subagent_id:
        row = conn.execute(
            "SELECT file_size, file_mtime_ns, last_offset FROM subagent_sessions WHERE session_id = ? AND agent_id = ?",
            (session_id, subagent_id),
        ).fetchone()
    else:
        row = conn.execute(
            "SELECT file_size, file_mtime_ns, last_offset FROM sessions WHERE transcript_path = ?", (resolved_path,)
        ).fetchone()
    return (row[0], row[1], row[2]) if row is not None else None


def turns_before(conn: sqlite3.Connection, session_id: str, line_index: int, limit: int) -> list[dict[str, Any]]:
    """A session's own last `limit` turns (no subagents, no compaction summaries) before `line_index`,
    newest first."""
    rows = conn.execute(
        "SELECT t.id, t.session_id, t.agent_id, t.kind, t.prompt_text, t.full_text, t.tool_summary, "
        "t.started_at FROM turns t WHERE t.session_id = ? AND t.agent_id = '' AND t.line_index < ? "
        "AND t.kind != 'compaction' ORDER BY t.line_index DESC LIMIT ?",
        (session_id, line_index, limit),
    ).fetchall()
    return [dict(r) for r in rows]


def file_mentions_of(conn: sqlite3.Connection, stored_forms: list[str], other_than: str | None) -> list[sqlite3.Row]:
    """Mentions of a file stored as any of `stored_forms`, in sessions other than `other_than`, with their
    turn and session (file_path, tool_name, id, session_id, agent_id, prompt_text, started_at, project_dir,
    title, and a subagent's name and description)."""
    marks = ",".join("?" * len(stored_forms))
    return conn.execute(
        "SELECT fm.file_path, fm.tool_name, t.id, t.session_id, t.agent_id, t.prompt_text, t.started_at, "
        f"s.project_dir, s.title, {_SUBAGENT_NAME_COLUMNS} FROM file_mentions fm JOIN turns t ON t.id = fm.turn_id "
        f"JOIN sessions s ON s.session_id = t.session_id {_SUBAGENT_NAME_JOIN} "
        f"WHERE fm.file_path IN ({marks}) AND fm.session_id != ?",
        [*stored_forms, other_than or ""],
    ).fetchall()


def session_file_tools(conn: sqlite3.Connection, session_id: str) -> list[sqlite3.Row]:
    """(file_path, tool_name, last_line) of the files a session's own turns (not its subagents') touched."""
    return conn.execute(
        "SELECT fm.file_path, fm.tool_name, max(t.line_index) AS last_line FROM file_mentions fm "
        "JOIN turns t ON t.id = fm.turn_id WHERE fm.session_id = ? AND t.agent_id = '' "
        "GROUP BY fm.file_path, fm.tool_name",
        (session_id,),
    ).fetchall()


def mark_compaction(conn: sqlite3.Connection, resolved_path: str) -> None:
    """Record that the session of this transcript was compacted at its last ingested line."""
    conn.execute(
        "UPDATE sessions SET last_compact_line_index = last_line_index WHERE transcript_path = ?", (resolved_path,)
    )


def known_projects(conn: sqlite3.Connection) -> list[str]:
    """Every project folder of an indexed session (where Aider and SpecStory keep their histories)."""
    rows = conn.execute("SELECT DISTINCT project_dir FROM sessions WHERE project_dir IS NOT NULL ORDER BY 1")
    return [row[0] for row in rows]


def mirror_row(conn: sqlite3.Connection, mirror_id: int) -> sqlite3.Row | None:
    """A stored mirror (every column of the `mirrors` view) by its id."""
    return conn.execute("SELECT * FROM mirrors WHERE id = ?", (mirror_id,)).fetchone()


def mirror_version(conn: sqlite3.Connection, session_id: str, computer: str) -> sqlite3.Row | None:
    """(updated_at, content_hash) of the mirror stored for `computer`'s session, if any."""
    return conn.execute(
        "SELECT updated_at, content_hash FROM mirrors WHERE session_id = ? AND computer = ?", (session_id, computer)
    ).fetchone()


def session_of_transcript(conn: sqlite3.Connection, resolved_path: str) -> str | None:
    """The id of the session stored from the transcript at `resolved_path`, if any."""
    row = conn.execute("SELECT session_id FROM sessions WHERE transcript_path = ?", (resolved_path,)).fetchone()
    return str(row["session_id"]) if row else None


def mirror_count(conn: sqlite3.Connection, computer: str) -> int:
    """How many mirrors received from `computer` this store holds."""
    return int(conn.execute("SELECT count(*) FROM mirror_records WHERE computer = ?", (computer,)).fetchone()[0])


def tool_output_text(conn: sqlite3.Connection, output_id: object) -> str | None:
    """The stored (bounded) text of one tool output, or None."""
    row = conn.execute("SELECT text FROM tool_outputs WHERE id = ?", (output_id,)).fetchone()
    return row[0] if row else None
