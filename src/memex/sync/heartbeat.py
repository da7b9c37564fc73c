"""Heartbeats: each daemon announces its computer (name, version, API address, sessions) under a key
with a TTL, and in a registry without one, so stale computers stay listed with the time they were last
seen. The daemon keeps a copy of the registry in its store (`computers`): `--computer` and `--raw` find
an API address there when Redis is away.
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import orjson
import redis

from memex.store import computers as store_computers
from memex.store.db import transaction
from memex.sync.keys import Keys


@dataclass
class ComputerInfo:
    """What a computer announces, and whether its announcement is alive (None: unknown, Redis away)."""

    computer: str
    version: str | None = None
    api_url: str | None = None
    sessions: int | None = None
    started_at: str | None = None
    last_seen: str | None = None
    live: bool | None = None

    def announcement(self) -> bytes:
        fields = asdict(self)
        fields.pop("live")
        return orjson.dumps(fields)


def iso(seconds: float) -> str:
    """A Unix time as the store writes times (UTC, milliseconds)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def announce(client: redis.Redis, keys: Keys, info: ComputerInfo, ttl_seconds: int) -> None:
    """Write this computer's heartbeat (expiring after `ttl_seconds`) and its registry entry."""
    data = info.announcement()
    pipe = client.pipeline(transaction=True)
    pipe.set(keys.heartbeat(info.computer), data, ex=max(1, ttl_seconds))
    pipe.hset(keys.computers, info.computer, data)
    pipe.execute()


def withdraw(client: redis.Redis, keys: Keys, computer: str) -> None:
    """Remove this computer's heartbeat (a clean stop: others see it as stale at once)."""
    client.delete(keys.heartbeat(computer))


def _parse(raw: Any, computer: str) -> ComputerInfo:
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    fields = {name: data.get(name) for name in ("version", "api_url", "sessions", "started_at", "last_seen")}
    return ComputerInfo(computer=computer, **fields)


def registry(client: redis.Redis, keys: Keys) -> list[ComputerInfo]:
    """Every computer that ever announced itself under this prefix, live or not, by name."""
    entries = client.hgetall(keys.computers)
    names = sorted(name.decode() if isinstance(name, bytes) else str(name) for name in entries)
    if not names:
        return []
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.get(keys.heartbeat(name))
    beats = pipe.execute()
    found = []
    for name, beat in zip(names, beats, strict=True):
        raw = entries.get(name.encode(), entries.get(name))
        info = _parse(beat if beat is not None else raw, name)
        info.live = beat is not None
        found.append(info)
    return found


def remember(conn: sqlite3.Connection, computers: list[ComputerInfo]) -> None:
    """Keep the registry in the store (for when Redis is away)."""
    with transaction(conn):
        for info in computers:
            if info.last_seen:
                store_computers.remember(conn, asdict(info))


def remembered(conn: sqlite3.Connection) -> list[ComputerInfo]:
    """The registry as this computer's daemon last saw it (liveness unknown)."""
    return [ComputerInfo(**dict(row)) for row in store_computers.remembered(conn)]
