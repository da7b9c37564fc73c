"""Telling the other computers what the user forgot, and applying what they were told.

A forgetting asked here (a tombstone in `forgotten` with this computer as its origin and no
`published_at`) goes to Redis in one MULTI: an entry on the mirror stream (`kind` = `forget`), the
session's latest mirror removed from its computer's hash (a late joiner's catch-up must not bring it
back), the stream's entries that carry its mirrors deleted (its conversation stays nowhere in Redis),
and a field in the `forgotten` hash (a computer that returns after the entry was trimmed reads it there).
Receivers apply it with `memex.forget.apply_forget`: their mirror of the session goes, and the computer
the session ran on forgets it entirely. Delivery is at-least-once; applying twice changes nothing.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Mapping
from typing import Any, cast

import redis

from memex.computers import apply_computer_forget
from memex.config import Config
from memex.forget import apply_forget, now_iso
from memex.store.computers import EVERY_SESSION
from memex.store.db import transaction
from memex.store.forget import mark_published, unpublished_tombstones
from memex.sync.keys import Keys
from memex.sync.link import OUTAGE_ERRORS, connect_redis, display_url

# `memex forget` gives Redis this long before leaving the publication to the daemon.
PUBLISH_TIMEOUT_S = 1.5

log = logging.getLogger("memex.daemon")
KIND = "forget"

# Deletes the stream entries carrying a mirror of the forgotten sessions, given as pairs (ARGV: computer,
# session, computer, session…; EVERY_SESSION as the session: all of that computer's); returns how many. Run
# by Redis, a page at a time, so no payload crosses the network, and once for a whole batch of forgettings:
# one pass over the stream however many sessions were forgotten.
_DROP_MIRRORS = """
local wanted = {}
for i = 1, #ARGV, 2 do
  wanted[ARGV[i]] = wanted[ARGV[i]] or {}
  wanted[ARGV[i]][ARGV[i + 1]] = true
end
local deleted, start = 0, '-'
while true do
  local entries = redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', 500)
  local ids = {}
  for _, entry in ipairs(entries) do
    local fields, found = entry[2], {}
    for i = 1, #fields, 2 do found[fields[i]] = fields[i + 1] end
    local sessions = found['mirror'] and found['computer'] and wanted[found['computer']]
    if sessions and (sessions['*'] or (found['session_id'] and sessions[found['session_id']])) then
      ids[#ids + 1] = entry[1]
    end
  end
  if #ids > 0 then deleted = deleted + redis.call('XDEL', KEYS[1], unpack(ids)) end
  if #entries < 500 then return deleted end
  start = '(' .. entries[#entries][1]
end
"""


def publish(
    conn: sqlite3.Connection, client: redis.Redis, keys: Keys, computer: str, max_len: int, batch: int = 200
) -> int:
    """Publish the forgettings asked here that were not yet; returns how many. A Redis error propagates
    (they stay unpublished, and are sent again next time)."""
    items = unpublished_tombstones(conn)[:batch]
    if not items:
        return 0
    pipe = client.pipeline(transaction=True)
    pipe.eval(_DROP_MIRRORS, 1, keys.stream, *(part for session_id, owner, _ in items for part in (owner, session_id)))
    for session_id, owner, forgotten_at in items:
        fields = {"computer": computer, "kind": KIND, "session_id": session_id, "owner": owner, "at": forgotten_at}
        pipe.xadd(keys.stream, fields, maxlen=max_len, approximate=True)  # type: ignore[arg-type]
        if session_id == EVERY_SESSION:  # a whole computer: what Redis keeps of it goes
            pipe.delete(keys.latest(owner), keys.heartbeat(owner))
            pipe.srem(keys.publishers, owner)
            pipe.hdel(keys.computers, owner)
        else:
            pipe.hdel(keys.latest(owner), session_id)
        pipe.hset(keys.forgotten, f"{owner}\t{session_id}", f"{computer}\t{forgotten_at}")
    pipe.execute()
    with transaction(conn):
        mark_published(conn, items, now_iso())
    return len(items)


def is_forget(fields: Mapping[bytes, Any]) -> bool:
    """Whether a stream entry is a forgetting (not a mirror)."""
    return fields.get(b"kind") == KIND.encode()


def receive(conn: sqlite3.Connection, config: Config, fields: Mapping[bytes, Any]) -> bool:
    """Apply a forgetting read from the stream; True when it removed something new."""
    session_id, owner, origin, at = (_text(fields.get(k)) for k in (b"session_id", b"owner", b"computer", b"at"))
    if not session_id or not owner:
        log.warning("skipped a forgetting without its session or computer")
        return False
    return _apply(conn, config, session_id, owner, origin or owner, at)


def _apply(conn: sqlite3.Connection, config: Config, session_id: str, owner: str, origin: str, at: str = "") -> bool:
    if session_id == EVERY_SESSION:
        changed = apply_computer_forget(conn, config, owner, at)
        if changed and owner == config.computer:
            log.warning("this computer was retired (`memex computers forget`) while away: publishing its mirrors again")
        return changed
    return apply_forget(conn, config, session_id, owner, origin)


def catch_up(conn: sqlite3.Connection, config: Config, client: redis.Redis, keys: Keys) -> int:
    """Apply every forgetting recorded in Redis (a computer that was away); returns how many were new."""
    applied = 0
    cursor = 0
    while True:
        cursor, page = client.hscan(keys.forgotten, cursor, count=500)
        for key, value in cast(dict[Any, Any], page).items():
            owner, _, session_id = _text(key).partition("\t")
            origin, _, at = _text(value).partition("\t")
            if owner and session_id and origin != config.computer:
                applied += _apply(conn, config, session_id, owner, origin or owner, at)
        if int(cursor) == 0:
            return applied


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode() if isinstance(value, bytes) else str(value)


def publish_now(conn: sqlite3.Connection, config: Config) -> tuple[int, str | None]:
    """Publish this computer's unpublished forgettings at once (no daemon needed): (how many, None), or
    (0, why not) when Redis cannot be reached (the daemon sends them later). Without a Redis (redis_url
    empty) there is no other computer to tell: (0, None), and they wait for one to be configured."""
    if not config.redis_url:
        return 0, None
    client = None
    try:
        client = connect_redis(config.redis_url, PUBLISH_TIMEOUT_S)
        return publish(conn, client, Keys(config.redis_prefix), config.computer, config.stream_max_entries), None
    except OUTAGE_ERRORS as exc:
        return 0, f"Redis at {display_url(config.redis_url)} is unreachable ({exc})"
    except redis.RedisError as exc:
        return 0, f"Redis at {display_url(config.redis_url)} refused the request ({exc})"
    finally:
        if client is not None:
            client.close()
