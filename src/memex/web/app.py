"""The viewer's pages. Each parses its request, calls one `Memex` method on a face opened for that request
(read-only, but for forget) and renders a template; a `MemexError` becomes an error page."""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.resources import files
from typing import TYPE_CHECKING, Any

import jinja2
from starlette.applications import Starlette
from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from memex.api import Memex
from memex.config import Config
from memex.errors import MemexError, UserError
from memex.markdown import markdown
from memex.mirrors.model import LABELS
from memex.search.scoped import ROLES, SCOPES
from memex.store.queries import Filters
from memex.textutil import (
    counted,
    in_progress,
    plain_title,
    short_id,
    subagent_tally,
    subagent_title,
    turn_numbers,
)
from memex.web import render
from memex.web.folding import folded_markdown
from memex.web.guard import Guard

if TYPE_CHECKING:
    from memex.results import SearchResults

SEARCH_MODES = ("hybrid", "lexical", "semantic")
SEARCH_LEVELS = ("", "turn", "chunk", "session")
LIST_FILTERS = ("project", "agent", "since", "until", "pr")
SEARCH_FILTERS = ("project", "agent", "since", "until", "session", "file", "pr")
SESSIONS_LIMIT_MAX = 10_000  # the most sessions one page lists ("Show more" doubles up to it)


def _environment(config: Config) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("memex.web", "templates"),
        autoescape=True,  # every value a page shows is escaped (titles and transcripts are anyone's text)
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = render.short_time
    env.filters["project"] = render.project_name
    env.filters["plain"] = plain_title  # titles as plain text: no Markdown marks
    env.filters["short"] = lambda sid: short_id(sid or "")
    env.filters["counted"] = counted
    env.filters["touches"] = render.touches
    env.filters["markdown"] = markdown  # a message's Markdown, made safe (memex.markdown)
    env.globals["turn_numbers"] = turn_numbers
    env.tests["web_link"] = render.is_web_link
    env.globals["subagent_title"] = subagent_title  # `general-purpose "List project files" (a6464d48…)`
    env.globals["subagent_tally"] = subagent_tally  # `Explore ×2, general-purpose`
    env.globals["in_progress"] = in_progress  # a session's last turn, active within hours
    env.globals.update(marked=render.marked, folded=render.folded, labels=LABELS, this_computer=config.computer)
    env.globals["folded_markdown"] = folded_markdown
    return env


def _int(value: str | None, default: int, name: str, low: int = 1, high: int = 500) -> int:
    if not value:  # a form sends its empty fields too (`limit=`): the default then
        return default
    if not value.strip().isdecimal() or not low <= int(value) <= high:
        raise UserError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
    return int(value)


class Pages:
    """The routes, over one configuration."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.env = _environment(config)
        self.secret = secrets.token_urlsafe(24)  # the forget form's: a page of another site cannot know it

    @contextmanager
    def memex(self, readonly: bool = True) -> Iterator[Memex]:
        with Memex(self.config, readonly=readonly) as face:
            yield face

    def page(self, name: str, status: int = 200, **values: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(**values), status)

    # --- pages ----------------------------------------------------------------------------------------

    def sessions(self, request: Request) -> Response:
        params = request.query_params
        try:
            listed = self._sessions(params)
        except MemexError as exc:  # a mistyped filter: said above the form, which keeps what was typed
            return self.page("sessions.html", _status(exc), params=params, error=str(exc), **_NOTHING_LISTED)
        return self.page("sessions.html", params=params, error=None, **listed)

    def _sessions(self, params: QueryParams) -> dict[str, Any]:
        limit = _int(params.get("limit"), 100, "limit", high=SESSIONS_LIMIT_MAX)
        # A form sends its empty fields too (`pr=`): an empty value filters nothing.
        filters = Filters.parse({name: params.get(name) or None for name in LIST_FILTERS})
        computer, local = params.get("computer") or None, bool(params.get("local"))
        if not self.config.db_path.exists():  # the first run (the viewer creates no store)
            return {**_NOTHING_LISTED, "empty": NOTHING_INDEXED}
        with self.memex() as memex:  # one more than shown: whether "Show more" would show more
            found = memex.sessions(filters, limit + 1, computer=computer, local=local)
        cut = len(found) > limit
        more = min(limit * 2, SESSIONS_LIMIT_MAX) if cut and limit < SESSIONS_LIMIT_MAX else None
        return {"sessions": found[:limit], "limit": limit, "more": more, "cut": cut, "empty": "No sessions match."}

    def show(self, request: Request) -> Response:
        turns = bool(request.query_params.get("turns"))
        with self.memex() as memex:
            view = memex.show(request.path_params["session"], turns=turns)
            session_id = view.session["session_id"]
            local = memex.is_local(session_id)
            files_touched = memex.session_files(session_id) if local else []
        return self.page("show.html", view=view, local=local, files=files_touched, turns=turns)

    def search(self, request: Request) -> Response:
        params = request.query_params
        query = (params.get("q") or "").strip()
        status, error, found = 200, None, None
        try:
            found = self._search(params, query) if query else None
        except MemexError as exc:  # a mistyped filter: said above the form, which keeps what was typed
            status, error = _status(exc), str(exc)
        return self.page(
            "search.html",
            status,
            found=found,
            error=error,
            query=query,
            params=params,
            modes=SEARCH_MODES,
            levels=SEARCH_LEVELS,
            scopes=SCOPES,
            roles=("", *ROLES),
        )

    def _search(self, params: QueryParams, query: str) -> SearchResults:
        mode = params.get("mode") or "hybrid"
        level = params.get("level") or ""
        if mode not in SEARCH_MODES or level not in SEARCH_LEVELS:
            raise UserError(f"unknown search mode or level: {mode!r}, {level!r}")
        filters = Filters.parse({name: params.get(name) or None for name in SEARCH_FILTERS})
        with self.memex() as memex:
            return memex.search(
                query,
                filters,
                limit=_int(params.get("limit"), 20, "limit"),
                mode=mode,
                level=level or None,
                per_session=_int(params.get("per_session"), 1, "per_session", high=50),
                scope=params.get("in") or "conversation",
                role=params.get("role") or None,
            )

    def related(self, request: Request) -> Response:
        with self.memex() as memex:
            session_id = memex.resolve_session(request.path_params["session"])
            if not memex.related_ready():  # computing the file vectors would write: the CLI does that once
                return self.page("related.html", session_id=session_id, found=None, problem=None)
            params = request.query_params
            try:
                found = memex.related_sessions(
                    session_id,
                    limit=_int(params.get("limit"), 10, "limit"),
                    min_shared=_int(params.get("min_shared"), 0, "min_shared", low=0),
                )
            except MemexError as exc:  # it touched no file: said on the page the session's link opened
                return self.page("related.html", _status(exc), session_id=session_id, found=None, problem=str(exc))
        weight = memex.config.related_shared_weight_pct / 100
        return self.page("related.html", session_id=session_id, found=found, weight=weight, problem=None)

    def forget_confirm(self, request: Request) -> Response:
        with self.memex() as memex:
            targets = memex.forget_targets([request.path_params["session"]])
        return self.page("forget.html", targets=targets, secret=self.secret, report=None)

    async def forget(self, request: Request) -> Response:
        form = await request.form()
        given = str(form.get("secret", ""))
        if not hmac.compare_digest(given.encode(), self.secret.encode()):
            raise UserError("this form is stale or not from this viewer: open the session's forget page again")
        session = request.path_params["session"]
        return await _in_thread(lambda: self._forget(session))

    def _forget(self, session: str) -> Response:
        with self.memex(readonly=False) as memex:
            targets = memex.forget_targets([session])
            report, published, problem = memex.forget(targets)
        return self.page("forget.html", targets=targets, secret="", report=report, published=published, note=problem)

    async def failure(self, request: Request, exc: Exception) -> Response:
        return self.page("error.html", _status(exc), message=str(exc))


_NOTHING_LISTED: dict[str, Any] = {"sessions": [], "limit": 0, "more": None, "cut": False, "empty": ""}
NOTHING_INDEXED = "Nothing is indexed yet: run `memex index` (or start `memex daemon`), then reload."


def _status(exc: Exception) -> int:
    """An error page's status: 404 for a session that is not there, else 400 (the request was wrong)."""
    return 404 if str(exc).startswith("no session") else 400


async def _in_thread(work: Callable[[], Response]) -> Response:
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(work)


def build_app(config: Config, token: str | None = None) -> Guard:
    """The viewer as an ASGI app; `token` (served beyond loopback) is then required on every request: it,
    or the token in the token file once that changes (as the daemon's API, `LiveToken`)."""
    from memex.sync.token import LiveToken

    pages = Pages(config)
    static = StaticFiles(directory=str(files("memex.web") / "static"))
    app = Starlette(
        routes=[
            Route("/", pages.sessions),
            Route("/search", pages.search),
            Route("/s/{session}", pages.show),
            Route("/s/{session}/related", pages.related),
            Route("/s/{session}/forget", pages.forget_confirm, methods=["GET"]),
            Route("/s/{session}/forget", pages.forget, methods=["POST"]),
            Mount("/static", static, name="static"),
        ],
        exception_handlers={MemexError: pages.failure},
    )
    return Guard(app, LiveToken(config, token) if token else None)
