"""What the daemon's HTTP API answers: search over this computer's store, a session's mirror, the file
of its raw transcript. Plain functions that parse a request, call one `Memex` method over a read-only
connection and return its JSON (`memex.results` documents the shapes); `sync/server.py` serves them.

| route | answers |
| --- | --- |
| `GET /health` (no token) | `{"ok": true, "computer", "version"}` |
| `GET /v1/search?q=…&limit=&agent=&project=&since=&until=&session=&in=&role=` | `{"computer", "results"}`: |
| | this computer's own sessions, as `memex search --json` gives them (`in=tools`: tool output, `in=all`: |
| | both; `role=user` or `assistant`: one voice of the conversation) |
| `GET /v1/sessions/<id>/mirror` | `{"session", "mirror"}` of a session indexed here |
| `GET /v1/sessions/<id>/raw` | the transcript file of a session indexed here (or its archived copy) |

Every route but health needs `Authorization: Bearer <token>` (401 otherwise, before anything else is
looked at). A session is named only by its id, checked against a strict pattern and looked up in the
store: the file served is the one the store recorded for that session, never a path from the request.
Search results and mirrors are redacted like published mirrors; a raw transcript is sent as it is (the
user asked for it, with the token). Bad input is a 4xx with a one-line `{"error"}`: a missing or too
long query, a NUL byte in any parameter, an unknown agent, a date or limit that does not parse.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memex.api import Memex
from memex.config import Config
from memex.errors import ApiFailure, UserError
from memex.search.scoped import ROLES, SCOPES
from memex.store.queries import Filters

if TYPE_CHECKING:
    from memex.archive.reader import ArchiveReader

# Session ids are UUIDs, Codex and Gemini ids, or `<id>-<hash>`: letters, digits, `-` and `_`.
SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
MAX_LIMIT = 100
# Longer than any question a person types; a query of thousands of words costs the FTS and the model
# time that nobody asked for.
MAX_QUERY_CHARS = 1000
SEARCH_PARAMETERS = ("q", "limit", "agent", "project", "since", "until", "session", "in", "role")


@dataclass(frozen=True)
class SearchRequest:
    """What a `/v1/search` request asks."""

    text: str
    filters: Filters
    limit: int
    scope: str = "conversation"
    role: str | None = None


def parse_address(address: str) -> tuple[str, int]:
    """`host:port` (or `[v6]:port`) as a (host, port) pair; UserError when malformed."""
    host, _, port = address.strip().rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdecimal() or not 0 <= int(port) <= 65535:
        raise UserError(f"api_address must be host:port, got {address!r}")
    return host, int(port)


def advertised_url(config: Config, host: str, port: int) -> str:
    """The URL other computers should use: `api_url`, else derived from where the server listens."""
    if config.api_url:
        return config.api_url.rstrip("/")
    if host in ("0.0.0.0", "::", ""):
        host = config.computer
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def search_request(query: Mapping[str, str]) -> SearchRequest:
    """The query text, filters, limit, scope and role of a `/v1/search` request (ApiFailure 400 when one is
    bad)."""
    for name in SEARCH_PARAMETERS:
        if "\x00" in query.get(name, ""):
            raise ApiFailure(400, f"{name} contains a NUL byte")
    text = query.get("q", "").strip()
    if not text:
        raise ApiFailure(400, "q (the query) is required")
    if len(text) > MAX_QUERY_CHARS:
        raise ApiFailure(400, f"q is longer than {MAX_QUERY_CHARS} characters")
    raw_limit = query.get("limit", "10")
    if not re.fullmatch(r"\s*-?[0-9]+\s*", raw_limit):
        raise ApiFailure(400, f"limit must be a whole number, got {raw_limit!r}")
    limit = min(MAX_LIMIT, max(1, int(raw_limit)))
    try:
        filters = Filters.parse({name: query.get(name) for name in ("project", "agent", "since", "until", "session")})
    except UserError as exc:
        raise ApiFailure(400, str(exc)) from None
    scope, role = query.get("in") or "conversation", query.get("role") or None
    if scope not in SCOPES:
        raise ApiFailure(400, f"in must be one of {', '.join(SCOPES)}")
    if role is not None and role not in ROLES:
        raise ApiFailure(400, f"role must be one of {', '.join(ROLES)}")
    if scope != "conversation" and role:
        raise ApiFailure(400, "role does not apply to tool output")
    return SearchRequest(text, filters, limit, scope, role)


def search(conn: sqlite3.Connection, config: Config, request: SearchRequest) -> dict[str, Any]:
    """The body of `/v1/search`."""
    memex = Memex(config, conn)
    found = memex.computer_search(request.text, request.filters, request.limit, scope=request.scope, role=request.role)
    return found.to_json()


def checked_session_id(session_id: str) -> str:
    """`session_id` when it has the shape of one (ApiFailure 404 otherwise: it names nothing here)."""
    if not SESSION_ID.fullmatch(session_id):
        raise ApiFailure(404, "no such session")
    return session_id


def mirror(conn: sqlite3.Connection, config: Config, session_id: str) -> dict[str, Any]:
    """The body of `/v1/sessions/<id>/mirror`: the session and its mirror, redacted."""
    try:
        return Memex(config, conn).session_mirror(session_id).to_json()
    except UserError:
        raise ApiFailure(404, "no such session") from None


def transcript_of(conn: sqlite3.Connection, config: Config, session_id: str) -> tuple[str, str | None]:
    """(agent, transcript path) of a session indexed here (ApiFailure 404 for others)."""
    try:
        return Memex(config, conn).transcript_of(session_id)
    except UserError:
        raise ApiFailure(404, "no such session") from None


def archived_transcript(conn: sqlite3.Connection, config: Config, session_id: str) -> ArchiveReader | None:
    """A reader of the archive's copy of a session's transcript (its file is gone), or None."""
    return Memex(config, conn).archived_copy(session_id)
