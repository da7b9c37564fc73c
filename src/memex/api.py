"""`Memex`: the one face of the library. Every door (the CLI, the hooks, the warm server, the daemon's
HTTP API, the MCP server, the web viewer) parses its input, calls one method, and renders the typed result
(`memex.results`, each with one `to_json()`).

    with Memex.open(readonly=True) as memex:
        for hit in memex.search("sticky header", Filters.parse({"since": "7d"})).hits:
            print(hit.session_id, hit.title)

The store connection is opened on first use (a command that needs none, like `computers` on a fresh
computer, never creates a database) and closed with the face; a door that keeps its own connection (a hook,
the warm server's per-thread connections) lends it with `Memex(config, conn)`. This module imports only the
configuration and the store's filters: what a method needs is imported when it is called, so a hook pays
for nothing it does not use.
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from memex.config import Config, load_config
from memex.errors import StoreError, UserError
from memex.plain import Record
from memex.store.queries import Filters

if TYPE_CHECKING:
    from memex.archive.reader import ArchiveReader
    from memex.embed.worker import DrainReport
    from memex.forget import ForgetReport
    from memex.ingest.indexer import FileReport, IndexReport
    from memex.ingest.state import StoredStream
    from memex.mirrors.model import Mirror
    from memex.reports import ComputerList, Related, SessionView, Stats
    from memex.results import ComputerSearch, Injection, Recall, SearchHit, SearchResults, SessionSummary
    from memex.sources.files import Skipped
    from memex.sources.model import Transcript
    from memex.sources.tree import LiveTree
    from memex.store.forget import Target
    from memex.sync.heartbeat import ComputerInfo

# find-related's steps for a progress bar: (the step, done, total; None while it cannot be counted).
ProgressFn = Callable[[str, int, int | None], None]


class Discovery(Record):
    """The transcripts an index run will read: found under `roots`, passed over (`skipped`: unreadable),
    or given by hand and claimed by no agent (`refused`)."""

    __slots__ = ("defaults", "known", "refused", "roots", "seconds", "skipped", "transcripts", "unchanged")

    roots: dict[str, list[Path]]
    transcripts: list[Transcript]
    skipped: list[Skipped]
    refused: list[Skipped]
    defaults: bool  # found in the agents' default folders (no paths given)
    # Paths of the transcripts found as the store holds them (never read), each with its stored row; and
    # what the store holds.
    unchanged: dict[str, StoredStream]
    known: dict[str, StoredStream] | None
    # How long finding them took: with nothing changed, most of a run (every file is stat'ed here).
    seconds: float

    def __init__(
        self,
        roots: dict[str, list[Path]],
        transcripts: list[Transcript],
        skipped: list[Skipped] | None = None,
        refused: list[Skipped] | None = None,
        defaults: bool = False,
        unchanged: dict[str, StoredStream] | None = None,
        known: dict[str, StoredStream] | None = None,
        seconds: float = 0.0,
    ) -> None:
        self.roots = roots
        self.transcripts = transcripts
        self.skipped = [] if skipped is None else skipped
        self.refused = [] if refused is None else refused
        self.defaults = defaults
        self.unchanged = {} if unchanged is None else unchanged
        self.known = known
        self.seconds = seconds

    @property
    def where(self) -> str:
        """The folders and files looked in, for a message saying nothing was found there."""
        return ", ".join(str(p) for ps in self.roots.values() for p in ps)

    def found_nothing(self, report: IndexReport) -> bool:
        """Whether nothing at all was found: no transcript, none unchanged, none failed or refused."""
        return not self.transcripts and not self.unchanged and not report.failed and not report.refused

    @property
    def total_bytes(self) -> int:
        from memex.ingest.state import FILE_SIZE

        unchanged = sum(row[FILE_SIZE] for row in self.unchanged.values())
        return sum(_size(t.read_path) for t in self.transcripts) + unchanged


class Memex:
    """Recall over one store: search, recall, show, list, relate, count."""

    def __init__(self, config: Config, conn: sqlite3.Connection | None = None, *, readonly: bool = False) -> None:
        self.config = config
        self.readonly = readonly
        self._conn = conn
        self._owned = conn is None  # a lent connection stays open when the face closes

    @classmethod
    def open(cls, config: Config | None = None, *, readonly: bool = False) -> Memex:
        """The face over the configured store (`load_config()` unless given); read-only for doors that only
        read (they then work while a writer is busy, and on a store they cannot write)."""
        return cls(config or load_config(), readonly=readonly)

    def __enter__(self) -> Memex:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._conn is not None and self._owned:
            self._conn.close()
            self._conn = None

    @property
    def conn(self) -> sqlite3.Connection:
        """The store connection (opened now if it was not: a read-write one creates and migrates the store)."""
        if self._conn is None:
            from memex.store.db import connect, connect_readonly

            opener = connect_readonly if self.readonly else connect
            self._conn = opener(self.config.db_path, self.config.busy_timeout_ms)
        return self._conn

    def _existing_conn(self) -> sqlite3.Connection | None:
        """The connection when there is a store, else None (never creates one)."""
        if self._conn is None and not self.config.db_path.exists():
            return None
        return self.conn

    # --- index and embed ------------------------------------------------------------------------------

    def discover(
        self,
        paths: Sequence[Path] = (),
        agents: Sequence[str] = (),
        *,
        check_archive: bool = False,
        tree: LiveTree | None = None,
        stored: dict[str, StoredStream] | None = None,
    ) -> Discovery:
        """The transcripts under `paths` (files or folders), or under the agents' default folders when none
        is given; only those of `agents` (default: every agent). With a store, the files it holds at their
        very size and time go to `unchanged` instead (only stat'ed: `memex.sources.files.Sieve`; not even
        that in the folders a live `tree` holds). `check_archive`: look at every archived copy now, and
        make pending those lost whose transcript is still on disk (`memex.archive.reader.mark_lost_copies`).
        `stored`: the store's `stored_streams` now, when the caller keeps them (`stored_streams_since`)."""
        from memex.ingest.indexer import default_roots, discover, sieve_known
        from memex.ingest.state import stored_streams, stored_streams_at
        from memex.sources import ADAPTERS
        from memex.sources.files import Skipped, safe_resolve

        started = time.perf_counter()
        chosen = list(agents) or sorted(ADAPTERS)
        if paths:
            roots = {agent: [safe_resolve(p) for p in paths] for agent in chosen}
        else:
            roots = default_roots(self.config, chosen)
        skipped: list[Skipped] = []
        conn = self._existing_conn()
        unchanged: dict[str, StoredStream] = {}
        if paths and not any(p.is_dir() for p in paths):
            if check_archive and conn is not None:
                # Every lost copy made pending: those of the files named are made in this run (an unchanged
                # file whose copy is pending gets it: `index_transcripts`), the others by the next run that
                # reads their files.
                self._mark_lost_copies(conn, thorough=True)
            # Files named (the Stop hook's, a re-index of one file): only their rows are read, by path; a
            # walk over the whole store's rows would cost more than reading the files.
            transcripts = discover(roots, skipped)
            known = stored_streams_at(conn, _stream_paths(transcripts)) if conn is not None else None
        else:
            # What the store holds: the files found as it holds them are counted, never read.
            known = (stored if stored is not None else stored_streams(conn)) if conn is not None else None
            if conn is not None and known:
                # Before the sieve: the transcripts of the copies lost are read to copy them.
                self._mark_lost_copies(conn, thorough=check_archive)
            archive = bool(self.config.archive_enabled)
            sieve = sieve_known(conn, known, archive) if conn is not None and known else None
            transcripts = discover(roots, skipped, sieve, unchanged, tree)
            if not paths:  # the agents' own folders: a transcript that moved there takes its stream's path
                for transcript in transcripts:
                    transcript.walked = True
        found = Discovery(roots, transcripts, skipped, [], defaults=not paths, unchanged=unchanged, known=known)
        found.seconds = time.perf_counter() - started
        # The files given by hand that no agent claimed (and that were not passed over as unreadable).
        if all(p.is_dir() for p in paths):  # folders only: nothing to refuse, no transcript path to resolve
            return found
        claimed = {safe_resolve(t.path) for t in transcripts} | {Path(p) for p in unchanged}
        claimed |= {safe_resolve(alias) for t in transcripts for alias in t.aliases}
        claimed |= {safe_resolve(s.path) for s in skipped}
        every = set(chosen) == set(ADAPTERS)
        reason = "not a transcript of any agent memex reads" if every else f"not a transcript of {' or '.join(chosen)}"
        found.refused = [Skipped(p, reason) for p in paths if not p.is_dir() and safe_resolve(p) not in claimed]
        return found

    def _mark_lost_copies(self, conn: sqlite3.Connection, *, thorough: bool) -> None:
        """Make pending the streams whose archived copy is lost (`memex.archive.reader.mark_lost_copies`)."""
        if self.config.archive_enabled and self.writable:
            from memex.archive.reader import mark_lost_copies

            try:
                mark_lost_copies(conn, self.config, thorough=thorough)
            except sqlite3.OperationalError as exc:  # locked past busy_timeout_ms, full, read-only
                raise self._cannot_write(exc) from None

    def _cannot_write(self, exc: sqlite3.OperationalError) -> StoreError:
        """The one-line error of a write the store refused (what was indexed before it is kept)."""
        kept = "the files indexed so far are kept; run again"
        return StoreError(f"cannot write to {self.config.db_path}: {exc} ({kept})")

    def index(
        self,
        found: Discovery | None = None,
        *,
        workers: int | None = None,
        on_file: Callable[[Transcript, FileReport], None] | None = None,
        on_total: Callable[[int], None] | None = None,
    ) -> IndexReport:
        """Ingest what `found` lists (default: every agent's default folders) incrementally: re-running reads
        only what changed. A file that fails is reported and the others are indexed; StoreError when the
        store cannot be written (what was indexed so far is kept)."""
        from memex.ingest.indexer import discover, index_transcripts
        from memex.sources.locations import PROJECT_AGENTS, project_roots
        from memex.store.queries import known_projects

        found = found or self.discover()
        # Over the default folders: also the transcripts the agents deleted whose archived copies must be
        # parsed again (a rebuilt store).
        restoring: contextlib.AbstractContextManager[list[Transcript]] = contextlib.nullcontext([])
        if found.defaults:  # the archive's reader (and the forgetting's queries) only then
            from memex.archive.reader import archived_sources

            restoring = archived_sources(self.conn, self.config, list(found.roots), found.transcripts, found.unchanged)
        try:
            with restoring as restored:
                report = index_transcripts(
                    self.conn,
                    self.config,
                    [*found.transcripts, *restored],
                    on_file=on_file,
                    workers=workers or self.config.index_workers,
                    skipped=found.skipped,
                    on_total=on_total,
                    unchanged=found.unchanged,
                    known=found.known,
                )
            # Agents that keep their histories in project folders (Aider, SpecStory) are looked for in the
            # folders memex knows once the other agents' sessions, which name those folders, are indexed.
            in_projects = [agent for agent in found.roots if agent in PROJECT_AGENTS] if found.defaults else []
            if in_projects:
                known = known_projects(self.conn)
                more = discover({agent: project_roots(agent, known) for agent in in_projects}, report.failed)
                found.transcripts.extend(more)
                if more:
                    report.merge(index_transcripts(self.conn, self.config, more, on_file=on_file, known=found.known))
        except sqlite3.OperationalError as exc:  # locked past busy_timeout_ms, full, read-only
            raise self._cannot_write(exc) from None
        report.refused.extend(found.refused)
        report.seconds += found.seconds  # the run's time is the walk's too, not only the reading's
        return report

    def follow_rename(self) -> dict[str, int]:
        """Move the local sessions stored under earlier names of this computer to its current name
        ({old name: sessions moved}); the other computers are told to forget the old names."""
        from memex.computers import follow_rename

        return follow_rename(self.conn, self.config)

    def embed(
        self,
        max_jobs: int | None = None,
        *,
        on_start: Callable[[int], None] | None = None,
        on_batch: Callable[[DrainReport, int], None] | None = None,
    ) -> DrainReport:
        """Compute the vectors semantic search needs (turns first, then sessions, then chunks), up to
        `max_jobs`; `on_start(jobs)` is told how many will be done, `on_batch` after each stored batch.
        EmbedBusy when another worker runs, EmbedderUnavailable without a model; resumable at any moment."""
        from memex.embed.worker import drain, pending_count, requeue_stale, worker_lock

        conn = self.conn  # the store first: a read-only one is refused before the lock file is written
        with worker_lock(self.config.home):
            if on_start is None:
                return drain(conn, self.config, max_jobs=max_jobs, on_batch=on_batch)
            requeue_stale(conn, self.config.model_version)
            waiting = pending_count(conn)
            on_start(waiting if max_jobs is None else min(max_jobs, waiting))
            return drain(conn, self.config, max_jobs=max_jobs, on_batch=on_batch)

    def embed_slice(self, seconds: float) -> int:
        """A bounded slice of embedding work for a long-running loop (the daemon runs one every pass): at most
        `seconds` of draining; 0 (nothing done) while another worker holds the lock. Returns vectors stored."""
        import time

        from memex.embed.worker import EmbedBusy, drain, worker_lock

        deadline = time.monotonic() + seconds
        try:
            with worker_lock(self.config.home):
                return drain(self.conn, self.config, should_stop=lambda: time.monotonic() > deadline).embedded
        except EmbedBusy:
            return 0

    def pending_embeds(self) -> int:
        """Texts waiting for their vector."""
        from memex.embed.worker import pending_count

        return pending_count(self.conn)

    def retry_embed_errors(self) -> int:
        """Give the jobs that failed for good a fresh start; how many."""
        from memex.embed.worker import retry_errors

        return retry_errors(self.conn)

    # --- search -------------------------------------------------------------------------------------

    def search(
        self,
        query: str,
        filters: Filters | None = None,
        *,
        limit: int = 10,
        mode: str = "hybrid",
        level: str | None = None,
        per_session: int = 1,
        computer: str | None = None,
        scope: str = "conversation",
        role: str | None = None,
    ) -> SearchResults:
        """Turns and session mirrors matching `query` (words, identifiers, meaning), best first.

        `filters.session` may be a unique prefix (UserError when it matches none or several). `computer`
        asks that computer's daemon instead: its own sessions, turn by turn. `scope` "tools" searches the
        output of the tools the turns ran instead of the conversation; `role` ("user" or "assistant") keeps
        to what that voice wrote. Both search by words only (`mode` semantic is refused). `scope` "all":
        the conversation (by `mode`) and tool output (by words), interleaved by rank."""
        from memex.results import SearchHit, SearchResults

        filters = filters or Filters()
        if not query.strip():
            raise UserError("the search query is empty")
        _check_scope(scope, role, mode, level)
        if computer:
            if filters.file or filters.pr is not None:
                raise UserError("--file and --pr are not available with --computer")
            conn = self._existing_conn()
            if computer == self.config.computer and conn is not None:  # this computer: no need for its daemon
                hits, notes = self._local_search(query, filters, limit, False, scope, role)
                return SearchResults(hits, notes=notes)
            from memex.sync.remote import remote_search

            answer = remote_search(self.config, computer, conn, query, filters, limit, scope=scope, role=role)
            found = answer.get("results") or []
            if scope == "tools" and any(hit.get("source") != "tool" for hit in found):
                raise UserError(f"the memex of {computer} cannot search tool output (it is older): upgrade it")
            notes = [f"{computer}: {note}" for note in answer.get("notes") or [] if isinstance(note, str)]
            return SearchResults([SearchHit.from_json(hit) for hit in found], notes=notes)
        if filters.session:  # one session: a prefix matching none or several is a mistake to report
            filters = filters.replace(session=self.resolve_session(filters.session, filters.agent))
        if scope == "tools" or role:
            rows = _scoped_search(self.conn, query, filters, limit, per_session, scope, role)
            return SearchResults([SearchHit.from_json(row) for row in rows], "lexical", [])
        from memex.search.hybrid import hybrid_search

        outcome = hybrid_search(self.conn, self.config, query, filters, limit, mode, level, per_session)
        results = outcome.results
        if scope == "all":  # the conversation (as asked) and tool output (by words), interleaved by rank
            results = self._with_tool_output(results, query, filters, limit, per_session, limit)
        hits = [SearchHit.from_json(row) for row in results]
        return SearchResults(hits, outcome.mode, outcome.levels, outcome.notes)

    def _local_search(
        self, query: str, filters: Filters, limit: int, redacted: bool, scope: str, role: str | None
    ) -> tuple[list[SearchHit], list[str]]:
        """This computer's own sessions matching `query` (others' mirrors left out), and what the search has
        to say of how it searched (no model, no vectors yet); `redacted`: fit to leave this computer (each
        piece redacted as part of its whole). `scope` and `role` as for `search`."""
        from memex.results import SearchHit
        from memex.search.hybrid import hybrid_search

        _check_scope(scope, role, "hybrid", None)
        notes: list[str] = []
        if scope == "tools" or role:
            found = _scoped_search(self.conn, query, filters, limit, 1, scope, role)
        else:
            outcome = hybrid_search(self.conn, self.config, query, filters, limit, local_only=True)
            found, notes = outcome.results, outcome.notes
            if scope == "all":
                found = self._with_tool_output(found, query, filters, limit, 1, limit)
        rows = [hit for hit in found if hit["computer"] == self.config.computer][:limit]
        if redacted:
            from memex.sync.outbound import redacted_hit

            rows = [redacted_hit(self.conn, hit, query) for hit in rows]
        return [SearchHit.from_json(row) for row in rows], notes

    def _with_tool_output(
        self, results: list[dict[str, Any]], query: str, filters: Filters, limit: int, per_session: int, keep: int
    ) -> list[dict[str, Any]]:
        """`results` of the conversation and the best `limit` of tool output (by words), interleaved by rank
        in their own list: the first `keep`, at most `per_session` per session."""
        from memex.search.scoped import interleaved, search_tool_outputs

        tools = search_tool_outputs(self.conn, query, filters, limit, per_session)
        return interleaved([results, tools], keep, per_session, self.config.search_rrf_k)

    def computer_search(
        self, query: str, filters: Filters, limit: int, *, scope: str = "conversation", role: str | None = None
    ) -> ComputerSearch:
        """What this computer answers another's `search --computer` (`GET /v1/search`)."""
        from memex.results import ComputerSearch

        return ComputerSearch(self.config.computer, *self._local_search(query, filters, limit, True, scope, role))

    def recall(
        self, prompt: str, *, session_id: str | None = None, project_dir: str | None = None, semantic: bool = False
    ) -> Recall:
        """What the prompt hook injects for `prompt`: turns of other sessions than `session_id`, within the
        hook's deadline and token budget (`semantic`: completed by meaning, for a process that keeps the
        model loaded). No gate: a door that answers every prompt asks `memex.context.gate` first."""
        from memex.context.answers import recall_answer
        from memex.results import Recall

        text, hits = recall_answer(self.conn, self.config, prompt, session_id, project_dir, semantic=semantic)
        return Recall(text, hits)

    def compaction_context(self, session_id: str | None, transcript_path: str | None = None) -> Injection | None:
        """The session's own last turns before its last compaction (what the summary condensed); None when
        the session (named by its transcript first, else its id) is not indexed."""
        from memex.context.answers import compacted_answer
        from memex.results import Injection
        from memex.store.queries import session_row

        session = session_row(self.conn, session_id, transcript_path)
        if session is None:
            return None
        return Injection(*compacted_answer(self.conn, self.config, session))

    def file_context(self, path: str, *, session_id: str | None = None, cwd: str | None = None) -> Injection:
        """Turns of sessions other than `session_id` that touched the file at absolute `path`, changes first
        (shown relative to `cwd` when it is inside)."""
        from memex.context.answers import file_history_answer
        from memex.results import Injection

        return Injection(*file_history_answer(self.conn, self.config, path, session_id, cwd))

    def recent_files_context(self, session_id: str | None, transcript_path: str | None = None) -> Injection | None:
        """The files the session's own turns touched, most recent first; None when it is not indexed."""
        from memex.context.answers import recent_files_answer
        from memex.results import Injection
        from memex.store.queries import session_row

        session = session_row(self.conn, session_id, transcript_path)
        if session is None:
            return None
        return Injection(*recent_files_answer(self.conn, self.config, session["session_id"]))

    # --- sessions -----------------------------------------------------------------------------------

    def resolve_session(self, prefix: str, agent: str | None = None) -> str:
        """The full id of the one session (indexed here, or known by its mirror) starting with `prefix`."""
        from memex.store.queries import resolve_session

        return resolve_session(self.conn, prefix, agent)

    def latest_session(self, folder: str) -> str:
        """The most recently active session of the project `folder` is in (UserError when there is none)."""
        from memex.store.queries import latest_session_in

        found = latest_session_in(self.conn, folder)
        if found is None:
            raise UserError(f"no indexed session of this project ({folder}): give a session id, or run `memex index`")
        return found

    def sessions(
        self, filters: Filters | None = None, limit: int = 20, *, computer: str | None = None, local: bool = False
    ) -> list[SessionSummary]:
        """Sessions newest first by start time, with their turn counts and pull requests: those indexed here
        and (unless `local`) those received from other computers as mirrors; `computer` keeps one computer's."""
        from memex.results import SessionSummary
        from memex.store.listing import all_sessions

        rows = all_sessions(self.conn, filters or Filters(), limit, self.config.computer, computer, local)
        return [SessionSummary(**row) for row in rows]

    def show(self, session: str, *, turns: bool = False, agent: str | None = None) -> SessionView:
        """A session (an id or unique prefix) as a conversation (its mirror), or with `turns` its full turns.

        A session indexed here without a stored mirror of its own (indexed before mirrors existed) gets one
        built now; a session of another computer is known only by its mirror (UserError with `turns`)."""
        from memex.reports import SessionView
        from memex.store.queries import get_session, session_turns

        session_id = self.resolve_session(session, agent)
        if not self.is_local(session_id):
            mirror = self._stored_mirror(session_id, self.config.computer)
            assert mirror is not None  # resolve_session found it in the mirrors
            if turns:
                raise UserError(
                    f"session {session_id} ran on {mirror.computer}: only its conversation is here (drop --turns, "
                    "or use --raw to fetch its transcript from there)"
                )
            return SessionView(_mirror_info(mirror), _mirror_json(mirror))
        info = get_session(self.conn, session_id)
        if turns:
            return SessionView(info, turns=session_turns(self.conn, session_id))
        mirror = self._mirror_of(info)
        return SessionView(info, _mirror_json(mirror) if mirror else None)

    def session_files(self, session_id: str) -> list[tuple[str, list[str]]]:
        """The files a session indexed here touched (its own turns), each with the tools that touched it, by
        path; none for a session known only by its mirror."""
        from memex.store.queries import session_file_tools

        tools: dict[str, set[str]] = {}
        for row in session_file_tools(self.conn, session_id):
            tools.setdefault(row["file_path"], set()).add(row["tool_name"] or "")
        return [(path, sorted(t for t in tools[path] if t)) for path in sorted(tools)]

    def raw(self, session: str, *, agent: str | None = None) -> Iterator[bytes]:
        """A session's transcript file as it is, in blocks: read here, or fetched from the computer it ran on."""

        session_id = self.resolve_session(session, agent)
        if not self.is_local(session_id):  # the transcript stays on its computer: ask that computer's daemon
            from memex.sync.remote import remote_raw

            mirror = self._stored_mirror(session_id, self.config.computer)
            assert mirror is not None
            return remote_raw(self.config, mirror.computer, self.conn, session_id)
        from memex.sources import raw_transcript

        agent, path = self.transcript_of(session_id)
        if path:
            try:  # the file, or (a session kept in an agent's database) its records as JSON lines
                blocks = raw_transcript(agent, Path(path))
                return itertools.chain([next(blocks, b"")], blocks)
            except (OSError, sqlite3.Error):
                pass
        copy = self.archived_copy(session_id)
        if copy is None:
            raise UserError(f"the transcript of {session_id} is not on this computer (and memex has no copy of it)")
        return _reader_blocks(copy)

    def archived_copy(self, session_id: str) -> ArchiveReader | None:
        """A reader of the archive's copy of a session's transcript (for when the agent deleted it), or None
        when memex holds none or it cannot be read."""
        from memex.archive.frames import ArchiveCorrupt
        from memex.archive.reader import open_copy

        try:
            return open_copy(self.conn, self.config, session_id)
        except (OSError, ArchiveCorrupt):
            return None

    def export(self, session: str, fmt: str = "md", *, redact: bool = True, agent: str | None = None) -> str:
        """A session's conversation (an id or unique prefix; here or another computer's mirror) as Markdown,
        JSON or a self-contained HTML page (`fmt`: md, json, html), secrets redacted unless `redact` is off."""
        from memex.export import conversation, render

        session_id = self.resolve_session(session, agent)
        return render(conversation(self.conn, session_id, self.config.computer, redact=redact), fmt)

    def session_mirror(self, session_id: str, *, redacted: bool = True) -> SessionView:
        """A session indexed here and its mirror, as another computer gets it (`GET /v1/sessions/<id>/mirror`):
        the session's main fields and, `redacted`, secrets taken out. UserError for any other session."""
        from memex.reports import SessionView
        from memex.store.queries import get_session

        session = get_session(self.conn, session_id)
        mirror = self._mirror_of(session)
        info = {k: session[k] for k in ("session_id", "agent", "computer", "project_dir", "title", "started_at")}
        if redacted:
            from memex.sync.redact import redact
            from memex.sync.wire import redact_mirror

            mirror = redact_mirror(mirror)[0] if mirror is not None else None
            info["title"] = redact(info["title"])[0] if info["title"] else None
        return SessionView(info, _mirror_json(mirror) if mirror else None)

    def transcript_of(self, session_id: str) -> tuple[str, str | None]:
        """(agent, transcript path) the store recorded for a session indexed here (UserError for others)."""
        from memex.store.queries import get_session

        session = get_session(self.conn, session_id)
        return session["agent"], session["transcript_path"]

    def is_local(self, session_id: str) -> bool:
        """True when the session is indexed here (not only known by another computer's mirror)."""
        from memex.store.queries import is_indexed

        return is_indexed(self.conn, session_id)

    def _stored_mirror(self, session_id: str, prefer: str) -> Mirror | None:
        from memex.mirrors.build import get_mirror

        return get_mirror(self.conn, session_id, prefer)

    def _mirror_of(self, session: dict[str, Any]) -> Mirror | None:
        """The mirror of a session indexed here: the stored one of its computer, or built now (a session
        indexed before mirrors existed). The one place this is decided."""
        from memex.mirrors.build import build_mirror

        mirror = self._stored_mirror(session["session_id"], session["computer"])
        if mirror is None or mirror.computer != session["computer"]:
            mirror = build_mirror(self.conn, session["session_id"])
        return mirror

    # --- related --------------------------------------------------------------------------------------

    def related_ready(self) -> bool:
        """True when find-related has nothing to store first: the vectors of the file paths and the
        sessions' centroids are current (a read-only face can then answer it)."""
        from memex.related.centroids import stale_sessions

        stale, seen, top = stale_sessions(self.conn, self.config.resource_model_version)
        return not stale and top == seen

    @property
    def writable(self) -> bool:
        """Whether this process may write the store (its folder, and the file when it exists)."""
        from memex.store.db import store_writable

        return store_writable(self.config.db_path)

    def related_sessions(
        self,
        session_id: str,
        filters: Filters | None = None,
        limit: int = 10,
        progress: ProgressFn | None = None,
        min_shared: int = 0,
    ) -> Related:
        """Sessions that worked on `session_id`'s files, those sharing rare files first (at least `min_shared`
        files in common), each with its score and the files behind it (memex.related.rarity)."""
        from memex.related import related_sessions
        from memex.reports import Related

        found = related_sessions(
            self.conn, self.config, session_id, filters or Filters(), limit, progress, min_shared=min_shared
        )
        return Related.from_json(found)

    def related_turns(
        self,
        session_id: str,
        filters: Filters | None = None,
        limit: int = 10,
        window: int | None = None,
        progress: ProgressFn | None = None,
        min_shared: int = 0,
    ) -> Related:
        """Stretches of `window` turns (default: related_window_turns) in other sessions that worked on the
        files of `session_id`'s last turns (at least `min_shared` of them), scored like related_sessions."""
        from memex.related import related_turns
        from memex.reports import Related

        size = window or self.config.related_window_turns
        found = related_turns(
            self.conn, self.config, session_id, filters or Filters(), limit, size, progress, min_shared=min_shared
        )
        return Related.from_json(found)

    # --- the store and the computers -------------------------------------------------------------------

    def stats(self) -> Stats:
        """What the store holds, its size, the agents' versions, format drift and embedding failures."""
        from memex.reports import Stats
        from memex.store.archive import archive_statistics
        from memex.store.queries import statistics

        return Stats(**statistics(self.conn, self.config.db_path), **archive_statistics(self.conn))

    # --- forgetting -----------------------------------------------------------------------------------

    def forget_targets(
        self,
        sessions: Sequence[str] = (),
        project: str | None = None,
        before: str | None = None,
        agent: str | None = None,
    ) -> list[Target]:
        """The sessions `forget` would remove: those named (ids or unique prefixes) that also meet every
        criterion given (project folder or name, started before a date, agent)."""
        from memex.store.forget import choose
        from memex.textutil import parse_when

        try:
            cutoff = parse_when(before) if before else None
        except ValueError as exc:
            raise UserError(str(exc)) from None
        ids = [self.resolve_session(prefix) for prefix in sessions]
        return choose(self.conn, ids, project, cutoff, agent)

    def forget(self, targets: list[Target]) -> tuple[ForgetReport, int, str | None]:
        """Forget `targets` for good (rows, vectors, mirrors, archived copies; a tombstone keeps re-indexing
        from bringing them back) and tell the other computers at once: (report, forgettings published, why
        not yet when Redis could not be told; the daemon tells them later)."""
        from memex.forget import forget
        from memex.sync.forgets import publish_now

        report = forget(self.conn, self.config, targets)
        published, problem = publish_now(self.conn, self.config)
        return report, published, problem

    def computer_to_forget(self, name: str) -> tuple[ComputerInfo | None, int]:
        """What is known here of computer `name`: its registry entry (None when it never announced itself)
        and how many of its mirrors this computer holds."""
        from memex.store.queries import mirror_count
        from memex.sync.remote import known_computers

        found, _ = known_computers(self.config, self.conn)
        return next((c for c in found if c.computer == name), None), mirror_count(self.conn, name)

    def forget_computer(self, name: str) -> tuple[int, int, str | None]:
        """Retire computer `name`: its mirrors and registry entry go here and on the other computers:
        (mirrors dropped, forgettings published, why not yet)."""
        from memex.computers import forget_computer
        from memex.sync.forgets import publish_now

        dropped = forget_computer(self.conn, self.config, name)
        published, problem = publish_now(self.conn, self.config)
        return dropped, published, problem

    def computers(self) -> ComputerList:
        """The computers sharing mirrors under this prefix (live: their daemon runs now), and this one."""
        from memex.reports import ComputerList, ComputerStatus
        from memex.store.queries import mirror_counts, session_count
        from memex.sync.remote import known_computers

        conn = self._existing_conn()
        found, problem = known_computers(self.config, conn)
        mirrors = mirror_counts(conn) if conn else {}
        rows: dict[str, Any] = {info.computer: info for info in found}
        rows.setdefault(self.config.computer, None)  # this computer, even before its daemon ever ran
        for computer in mirrors:
            rows.setdefault(computer, None)  # known only by its mirrors
        listing = []
        for computer in sorted(rows):
            info = rows[computer]
            status = "unknown" if info is None or info.live is None else ("live" if info.live else "stale")
            sessions = info.sessions if info else None
            if computer == self.config.computer:
                sessions = session_count(conn) if conn else 0  # counted here, not as last announced
            listing.append(
                ComputerStatus(
                    computer=computer,
                    this_computer=computer == self.config.computer,
                    status=status,
                    last_seen=info.last_seen if info else None,
                    sessions=sessions,
                    mirrors_here=mirrors.get(computer, 0),
                    version=info.version if info else None,
                    api_url=info.api_url if info else None,
                )
            )
        return ComputerList(listing, problem)


def _check_scope(scope: str, role: str | None, mode: str, level: str | None) -> None:
    """UserError for a search scope or role that does not exist, or that cannot go with `mode` or `level`."""
    from memex.search.scoped import ROLES, SCOPES

    if scope not in SCOPES:
        raise UserError(f"search in {scope!r}? choose one of: {', '.join(SCOPES)}")
    if role is not None and role not in ROLES:
        raise UserError(f"role {role!r}? choose one of: {', '.join(ROLES)}")
    # Said by every door (the CLI's options, the viewer's fields, the MCP tool's arguments): by their names.
    if scope != "conversation" and role:
        raise UserError("role keeps to a voice of the conversation: it does not apply to tool output")
    what = "tool output" if scope == "tools" else f"the {role}'s words" if role else None
    if what and mode == "semantic":
        raise UserError(f"{what} cannot be searched by meaning (no vectors hold it): search by words (mode lexical)")
    if what and level:
        raise UserError(f"level applies to conversation search, not to {what}")


def _scoped_search(
    conn: sqlite3.Connection,
    query: str,
    filters: Filters,
    limit: int,
    per_session: int,
    scope: str,
    role: str | None,
) -> list[dict[str, Any]]:
    """Result rows of a search in tool output, or in one voice of the conversation (by words)."""
    from memex.search.scoped import search_role, search_tool_outputs

    if scope == "tools":
        return search_tool_outputs(conn, query, filters, limit, per_session)
    assert role is not None
    return search_role(conn, query, filters, role, limit, per_session)


def _mirror_info(mirror: Mirror) -> dict[str, Any]:
    """What is known of a session seen only through its mirror, in the shape of a session row."""
    return {
        "session_id": mirror.session_id,
        "agent": mirror.agent,
        "computer": mirror.computer,
        "project_dir": mirror.project,
        "title": mirror.title,
        "started_at": mirror.timestamp_start,
        "ended_at": mirror.timestamp_end,
        "prs": [{"pr_number": n} for n in mirror.metadata.get("prs", [])],
        "subagents": [],
    }


def _mirror_json(mirror: Mirror) -> dict[str, Any]:
    """A mirror as `show --json` gives it: its fields, its metadata (less the message offsets) and its
    messages."""
    metadata = {k: v for k, v in mirror.metadata.items() if k != "messages"}
    fields = {k: v for k, v in mirror.as_dict().items() if k not in ("conversation_text", "metadata")}
    return {**fields, "metadata": metadata, "messages": mirror.messages()}


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _reader_blocks(reader: ArchiveReader) -> Iterator[bytes]:
    with reader:
        yield from iter(lambda: reader.read(1 << 16), b"")


def _stream_paths(transcripts: Sequence[Transcript]) -> list[str]:
    """The paths a store may hold these transcripts' streams under (their own, and their aliases')."""
    return [str(p) for t in transcripts for p in (t.path, *t.aliases)]
