"""The MCP tools: each parses its arguments, calls one `Memex` method, and renders a page of JSON.

The store is read through one read-only `Memex` that lives as long as the server, in one worker thread
(SQLite connections stay in the thread that opened them; the event loop keeps answering meanwhile). The
embedding model loads on the first call that needs it and stays loaded. A mistake in the arguments or an
error inside memex is the tool's error result (`isError`, one clear line: `arguments`); the server keeps running.
Every answer is redacted before it is cut to its page (`secrets`): it goes to the agent's model provider.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Annotated, Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from memex import __version__
from memex.api import Memex
from memex.config import Config
from memex.errors import MemexError, UserError
from memex.mcpserver.arguments import Server
from memex.mcpserver.pages import HIT_FIELD_CHARS, MAX_RESULT_CHARS, READ_FIELD_CHARS, clip, dumps, fill
from memex.mcpserver.secrets import redacted, redacted_hit
from memex.store.queries import Filters

log = logging.getLogger("memex.mcp")

# Re-running a search for a later page costs as much as the whole range: pages stop here.
MAX_SEARCH_RESULTS = 100
# The long fields of a search hit, cut to HIT_FIELD_CHARS.
HIT_TEXT_FIELDS = ("prompt_text", "full_text", "tool_summary", "matched_chunk")

INSTRUCTIONS = f"""memex is a local index of this computer's earlier coding-agent sessions (Claude Code, Codex,
Gemini CLI and more), and of the conversations of the user's other computers. Use it to find past
decisions, fixes, errors, commands and discussions before redoing work: `search` first, then
`show_session` to read around a hit; `list_sessions` to browse; `find_related` for earlier work on the
same files; `recall` for what memex would inject for a prompt. Every result is compact JSON of at most
{MAX_RESULT_CHARS} characters; a list says where its next page starts in `next_offset` (null at the end).
Session ids may be given as a unique prefix (8 characters are usually enough)."""

ProjectArg = Annotated[
    str | None, Field(description="Only sessions in this project: an absolute folder (and below) or a folder name.")
]
AgentArg = Annotated[
    str | None, Field(description="Only sessions of this agent: claude, codex, gemini, opencode, copilot, …")
]
SinceArg = Annotated[
    str | None, Field(description="Only from this time on: a date (2026-05-01), an ISO time, or an age (7d, 12h, 2w).")
]
UntilArg = Annotated[
    str | None, Field(description="Only up to this time: a date (the whole day is included), ISO time, or age.")
]
PrArg = Annotated[int | None, Field(description="Only sessions linked to this pull request number.", ge=1)]
# No store holds a billion items of one kind; past SQLite's 64-bit integers an offset was an internal error.
MAX_OFFSET = 1_000_000_000
OffsetArg = Annotated[
    int,
    Field(description="Where the page starts: 0, or the `next_offset` of the previous page.", ge=0, le=MAX_OFFSET),
]
SessionArg = Annotated[str, Field(description="A session id, or a unique prefix of one (8 characters usually do).")]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


class Door:
    """The server's one `Memex`, used from one worker thread, and the translation of its errors."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="memex-mcp")
        self._memex: Memex | None = None

    def _face(self) -> Memex:
        if self._memex is None:
            self._memex = Memex(self.config, readonly=True)
        return self._memex

    async def call(self, tool: str, work: Callable[[Memex], dict[str, Any]]) -> str:
        """`work` done with the face in the worker thread, as JSON text; its failure as a ToolError."""
        loop = asyncio.get_running_loop()
        try:
            data = await loop.run_in_executor(self._thread, lambda: work(self._face()))
        except MemexError as exc:
            raise ToolError(str(exc)) from None
        except Exception as exc:
            log.exception("memex tool %s failed", tool)
            raise ToolError(
                f"internal error in memex ({type(exc).__name__}: {exc}); the server keeps running"
            ) from None
        return dumps(data)

    def close(self) -> None:
        def shut() -> None:
            if self._memex is not None:
                self._memex.close()

        self._thread.submit(shut).result()
        self._thread.shutdown()


def _filters(**values: Any) -> Filters:
    return Filters.parse(values)


def build_server(config: Config) -> tuple[Server, Door]:
    """The MCP server over the store of `config`, and the door to close when it stops."""
    door = Door(config)
    server = Server("memex", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(
        annotations=READ_ONLY,
        structured_output=False,
        description="Search earlier coding-agent sessions for turns matching a query: words, identifiers, "
        "paths, error text, or meaning, in any language. Returns {query, mode, levels, notes, results, offset, "
        "next_offset}; each result is one turn (prompt, the agent's work and answer, the user's reaction) with "
        "session_id, agent_id ('' for the main agent, else a subagent, named by subagent_name and "
        "subagent_description where its agent named it), started_at, project_dir, title, "
        "prompt_text, full_text, tool_summary, matched_chunk, score; long fields are cut to "
        f"{HIT_FIELD_CHARS} characters (named in `truncated`: read the whole turn with show_session). One "
        "result per session, best first. Use it before redoing work that was probably done before. "
        "scope='tools' searches the output of the tools the turns ran instead (exact error text, log lines; "
        "by words): each result then names tool_name and matched_chunk is an excerpt of that output. role='user' "
        "or 'assistant' keeps to what that voice wrote (by words).",
    )
    async def search(
        query: Annotated[
            str,
            Field(
                description="What to look for. Words match as written; a word ending in * is a prefix "
                "(zebr* finds zebra, zebras).",
                min_length=1,
            ),
        ],
        mode: Annotated[
            Literal["hybrid", "lexical", "semantic"],
            Field(description="lexical: words; semantic: meaning; hybrid (default): both fused."),
        ] = "hybrid",
        project: ProjectArg = None,
        agent: AgentArg = None,
        since: SinceArg = None,
        until: UntilArg = None,
        file: Annotated[str | None, Field(description="Only turns that read or changed this file path.")] = None,
        pr: PrArg = None,
        session: Annotated[str | None, Field(description="Only this session (an id or unique prefix).")] = None,
        scope: Annotated[
            Literal["conversation", "tools", "all"],
            Field(
                description="conversation (default): what was said; tools: what the tools printed (by words); "
                "all: both, interleaved."
            ),
        ] = "conversation",
        role: Annotated[
            Literal["user", "assistant"] | None,
            Field(description="Only what the user (prompts) or the assistant (its messages) wrote (by words)."),
        ] = None,
        limit: Annotated[int, Field(description="Results per page.", ge=1, le=50)] = 10,
        offset: OffsetArg = 0,
    ) -> str:
        if offset + limit > MAX_SEARCH_RESULTS:
            raise ToolError(f"offset + limit may not pass {MAX_SEARCH_RESULTS}: narrow the search with filters")

        def work(memex: Memex) -> dict[str, Any]:
            filters = _filters(
                project=project, agent=agent, since=since, until=until, file=file, pr=pr, session=session
            )
            found = memex.search(
                query,
                filters,
                limit=offset + limit,
                mode=mode,
                scope=scope,
                role=role,
            )
            hits = []
            for hit in found.hits[offset:]:
                data = redacted_hit(memex.conn, hit.to_json(), query)
                data.pop("explain", None)  # how each ranked list placed it: for debugging, not for agents
                hits.append(clip(data, HIT_FIELD_CHARS, HIT_TEXT_FIELDS))
            # The query is echoed cut like a hit's field: a pasted log must not push the page past its budget.
            envelope = clip(
                redacted({"query": query, "mode": found.mode, "levels": found.levels, "notes": found.notes}),
                HIT_FIELD_CHARS,
                ("query",),
            )
            more = len(found.hits) == offset + limit and offset + limit < MAX_SEARCH_RESULTS
            return fill(envelope, "results", hits, offset, more)

        return await door.call("search", work)

    @server.tool(
        annotations=READ_ONLY,
        structured_output=False,
        description="Read one earlier session, a page at a time. view='mirror' (default): its conversation "
        "(user and assistant text, no tool calls), as {session, mirror, total, messages, offset, next_offset}, "
        "each message {role, text, timestamp}. view='turns': its turns in order with the agent's tool work, as "
        "{session, total, turns, offset, next_offset}, each turn with id, agent_id (a subagent's turn when "
        "not '', named by subagent_name and subagent_description), prompt_text, full_text, tool_summary, "
        "started_at. A session from another computer has only "
        f"its conversation. Fields longer than {READ_FIELD_CHARS} characters are cut (named in `truncated`).",
    )
    async def show_session(
        session: SessionArg,
        view: Annotated[
            Literal["mirror", "turns"], Field(description="mirror: the conversation; turns: turns with tool work.")
        ] = "mirror",
        offset: OffsetArg = 0,
        limit: Annotated[int, Field(description="Messages or turns per page.", ge=1, le=200)] = 30,
    ) -> str:
        def work(memex: Memex) -> dict[str, Any]:
            if view == "turns" and not memex.is_local(session_id := memex.resolve_session(session)):
                # Memex.show's own message names the CLI's flags, which an agent here has not.
                computer = memex.show(session_id).session.get("computer")
                raise UserError(
                    f"session {session_id} ran on {computer}: only its conversation is here; read it with view='mirror'"
                )
            found = memex.show(session, turns=view == "turns")
            if view == "turns":
                items = found.turns or []
                envelope: dict[str, Any] = {"session": found.session, "total": len(items)}
                key = "turns"
            else:
                mirror = found.mirror
                items = mirror["messages"] if mirror else []
                info = {k: v for k, v in mirror.items() if k != "messages"} if mirror else None
                envelope = {"session": found.session, "mirror": info, "total": len(items)}
                key = "messages"
            envelope = redacted(envelope)  # the session's title
            page = [clip(redacted(item), READ_FIELD_CHARS) for item in items[offset : offset + limit]]
            return fill(envelope, key, page, offset, offset + limit < len(items))

        return await door.call("show_session", work)

    @server.tool(
        annotations=READ_ONLY,
        structured_output=False,
        description="List earlier coding-agent sessions, newest first, optionally of one project, agent, pull "
        "request or time range. Returns {sessions, offset, next_offset}; each session has session_id, agent, "
        "computer, project_dir, title (usually its first prompt), started_at, ended_at, turns, subagents (a count), "
        "subagent_names, prs. "
        "Use it to see what was worked on recently or to pick a session to read with show_session.",
    )
    async def list_sessions(
        project: ProjectArg = None,
        agent: AgentArg = None,
        since: SinceArg = None,
        until: UntilArg = None,
        pr: PrArg = None,
        limit: Annotated[int, Field(description="Sessions per page.", ge=1, le=100)] = 20,
        offset: OffsetArg = 0,
    ) -> str:
        def work(memex: Memex) -> dict[str, Any]:
            filters = _filters(project=project, agent=agent, since=since, until=until, pr=pr)
            rows = memex.sessions(filters, limit=offset + limit + 1)
            page = [redacted(row.to_json()) for row in rows[offset : offset + limit]]
            return fill({}, "sessions", page, offset, len(rows) > offset + limit)

        return await door.call("list_sessions", work)

    @server.tool(
        annotations=READ_ONLY,
        structured_output=False,
        description="Find earlier work on the same files as a session (by default the latest session of the "
        "project this server runs in, normally the current one). kind='sessions': sessions that worked on its "
        "files, those sharing rare files first, each with session_id, agent, project_dir, title, started_at, "
        "score (combines shared_score, the rarity-weighted share of its files in common, with similarity, how "
        "alike the file paths read), shared_count, shared_files, shared ([{path, sessions}]: how many sessions, "
        "this one included, touched each file; fewer is more telling), files. kind='turns': "
        "stretches of consecutive turns of other sessions that worked on the files of its last `window` "
        "turns, each with turns (turn_id, agent_id, subagent_name, started_at, prompt), files, shared_files, "
        "score. Returns "
        "{session, results, warnings, offset, next_offset}. Use before changing files another session changed.",
    )
    async def find_related(
        kind: Annotated[
            Literal["sessions", "turns"], Field(description="sessions: whole sessions; turns: stretches of turns.")
        ] = "sessions",
        session: Annotated[
            str | None, Field(description="A session id or unique prefix; default: this project's latest session.")
        ] = None,
        project: ProjectArg = None,
        agent: AgentArg = None,
        limit: Annotated[int, Field(description="Results.", ge=1, le=50)] = 10,
        window: Annotated[
            int | None, Field(description="Turns compared (kind='turns'); default 3.", ge=1, le=20)
        ] = None,
        min_shared: Annotated[
            int, Field(description="Only results that touched at least this many of the session's files.", ge=0)
        ] = 0,
    ) -> str:
        def work(memex: Memex) -> dict[str, Any]:
            filters = _filters(project=project, agent=agent)
            session_id = memex.resolve_session(session) if session else memex.latest_session(os.getcwd())
            if memex.related_ready():
                return related(memex, session_id, filters)
            if not memex.writable:
                raise UserError(
                    f"the store {memex.config.db_path} is read-only and find_related must first store the vectors "
                    "of new file paths and sessions there: run `memex find-related sessions` where it is writable"
                )
            # The file paths' vectors and the centroids are a cache of the store: written once, by a face
            # opened for this call only (the server's own stays read-only).
            with Memex(memex.config) as writer:
                return related(writer, session_id, filters)

        def related(memex: Memex, session_id: str, filters: Filters) -> dict[str, Any]:
            if kind == "turns":
                found = memex.related_turns(session_id, filters, limit, window, min_shared=min_shared)
            else:
                found = memex.related_sessions(session_id, filters, limit, min_shared=min_shared)
            data = redacted(found.to_json())
            return fill(data, "results", data["results"], 0, False)

        return await door.call("find_related", work)

    @server.tool(
        annotations=READ_ONLY,
        structured_output=False,
        description="What memex's prompt-time recall would inject into an agent's context for this prompt: the "
        "most relevant turns of other sessions (same project first), by words and meaning, within the recall "
        "token budget, rendered as text with date, project, title and session id of each. Returns {text, hits} "
        "(hits: how many turns; text is empty when nothing is relevant enough). Unlike the hook, it answers short "
        "prompts and acknowledgements too. Use search for more control.",
    )
    async def recall(
        prompt: Annotated[str, Field(description="The user's prompt, as the agent received it.", min_length=1)],
        session_id: Annotated[
            str | None, Field(description="The current session's id: its own turns are left out.")
        ] = None,
        project_dir: Annotated[
            str | None, Field(description="The project folder the prompt is about (ranked first); default: none.")
        ] = None,
    ) -> str:
        return await door.call(
            "recall",
            lambda memex: redacted(
                memex.recall(prompt, session_id=session_id, project_dir=project_dir, semantic=True).to_json()
            ),
        )

    @server.tool(
        annotations=READ_ONLY,
        structured_output=False,
        description="What memex's store holds: counts of sessions (by agent), turns, chunks, mirrors, vectors by "
        "level, pending and failed embedding jobs, the database size, the agents' versions seen, and record "
        "types an agent's reader does not know yet. Use it to check that memex has indexed anything at all.",
    )
    async def stats() -> str:
        return await door.call("stats", lambda memex: redacted(memex.stats().to_json()))

    return server, door


def run(config: Config) -> None:
    """Serve MCP on stdin/stdout until the client closes it (logs go to stderr)."""
    server, door = build_server(config)
    try:
        server.run("stdio")
    finally:
        door.close()
    sys.stderr.flush()
