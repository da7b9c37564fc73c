"""What the CLI asks other computers: where a computer's API is, its search, a session's raw transcript.

A computer is found by its heartbeat in Redis; when Redis cannot be reached, by the copy of the
registry the local daemon keeps in the store. Nothing here needs the local daemon to be running.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import redis

from memex.config import Config
from memex.errors import UnknownComputer
from memex.store.queries import Filters
from memex.sync.client import ApiClient
from memex.sync.heartbeat import ComputerInfo, registry, remembered
from memex.sync.keys import Keys
from memex.sync.link import OUTAGE_ERRORS, connect_redis, display_url
from memex.sync.token import read_token

# The CLI gives Redis this long to answer before using the store's copy of the registry.
REGISTRY_TIMEOUT_S = 1.5


def known_computers(config: Config, conn: sqlite3.Connection | None) -> tuple[list[ComputerInfo], str | None]:
    """Every computer known under this prefix, and why Redis was not asked (None when it was)."""
    if config.redis_url:
        client = None
        try:
            client = connect_redis(config.redis_url, REGISTRY_TIMEOUT_S)
            return registry(client, Keys(config.redis_prefix)), None
        except OUTAGE_ERRORS as exc:
            problem = f"Redis at {display_url(config.redis_url)} is unreachable ({exc})"
        except redis.RedisError as exc:
            problem = f"Redis at {display_url(config.redis_url)} refused the request ({exc})"
        finally:
            if client is not None:
                client.close()
    else:
        problem = "redis_url is empty: this computer does not share with others"
    return (remembered(conn) if conn is not None else []), problem


def locate(config: Config, name: str, conn: sqlite3.Connection | None) -> ComputerInfo:
    """The registry entry of computer `name` (UnknownComputer when there is none, or no API address)."""
    computers, problem = known_computers(config, conn)
    for info in computers:
        if info.computer == name:
            if not info.api_url:
                raise UnknownComputer(f"computer {name!r} announced no API address")
            return info
    names = ", ".join(info.computer for info in computers) or "none"
    hint = f"; {problem}" if problem else ""
    raise UnknownComputer(f"unknown computer {name!r} (known: {names}){hint}")


def client_for(config: Config, name: str, conn: sqlite3.Connection | None) -> ApiClient:
    """A client of computer `name`'s API, carrying this computer's copy of the shared token."""
    info = locate(config, name, conn)
    label = name if info.live is not False else f"{name} (last seen {info.last_seen or 'never'})"
    return ApiClient(info.api_url or "", read_token(config), config.api_timeout_seconds, name=label)


def remote_search(
    config: Config,
    name: str,
    conn: sqlite3.Connection | None,
    query: str,
    filters: Filters,
    limit: int,
    *,
    scope: str = "conversation",
    role: str | None = None,
) -> dict[str, Any]:
    """`memex search --computer NAME`: that computer's answer (its own sessions matching `query`, and its
    notes), asked of its daemon (in tool output with `scope` "tools"; in one voice with `role`)."""
    client = client_for(config, name, conn)
    return client.search(
        query,
        limit,
        **{"in": scope if scope != "conversation" else None},
        role=role,
        project=filters.project,
        agent=filters.agent,
        since=filters.since,
        until=filters.until,
        session=filters.session,
    )


def remote_raw(config: Config, name: str, conn: sqlite3.Connection | None, session_id: str) -> Iterator[bytes]:
    """`memex show SESSION --raw` for a session of another computer: its transcript, streamed."""
    return client_for(config, name, conn).raw(session_id)
