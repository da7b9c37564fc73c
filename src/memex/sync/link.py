"""The daemon's connection to Redis: it reconnects after an outage, says so once, and notices a Redis
that lost its data.

Redis may be down, restarting, or unreachable from a laptop on the move; none of that may stop the
daemon. `client()` answers None while Redis is away (and tries again every `retry_seconds`); callers
report a failed command with `failed()`. The outage is logged when it starts and when it ends, never in
between. On each (re)connection the link reads the data generation (`epoch`): a Redis restarted without
persistence comes back empty, and everything it held must be published again.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from memex.sync.keys import Keys

log = logging.getLogger("memex.daemon")

# Errors that mean "Redis is not there" (as opposed to a command Redis refused).
OUTAGE_ERRORS: tuple[type[Exception], ...] = (redis.ConnectionError, redis.TimeoutError)
# A computer that cannot reach Redis learns it within this time, and not at every command.
CONNECT_TIMEOUT_S = 2.0
# Longer than the consumer's blocking read (1 s), so a quiet stream is not mistaken for an outage.
SOCKET_TIMEOUT_S = 10.0


def display_url(url: str) -> str:
    """`url` fit for a log or a message: a password in it is replaced by `***`."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


def connect_redis(url: str, connect_timeout_s: float = CONNECT_TIMEOUT_S) -> redis.Redis:
    """A Redis client for `url` that retries a command once on a fresh connection (a restarted Redis
    leaves dead connections in the pool), and no more: outages are the link's business."""
    return redis.Redis.from_url(
        url,
        socket_connect_timeout=connect_timeout_s,
        socket_timeout=SOCKET_TIMEOUT_S,
        retry=Retry(NoBackoff(), 1),
        health_check_interval=0,
    )


class RedisLink:
    """One process's connection to Redis, with its outage state and the data generation it last saw."""

    def __init__(self, url: str, keys: Keys, clock: Callable[[], float], retry_seconds: float) -> None:
        self.url = display_url(url)  # for messages; the client keeps the real one
        self.keys = keys
        self.clock = clock
        self.retry_seconds = retry_seconds
        self.redis = connect_redis(url)
        self.up = False
        self.epoch: str | None = None
        # Incremented at every (re)connection: the consumer re-reads its pending entries then.
        self.connections = 0
        self._down_since: float | None = None
        self._next_try = 0.0
        self._outage_logged = False

    def client(self) -> redis.Redis | None:
        """The client while Redis is reachable (reconnecting when it is time to try again), else None."""
        if self.up:
            return self.redis
        now = self.clock()
        if now < self._next_try:
            return None
        try:
            self.redis.ping()
            self.refresh_epoch()
        except OUTAGE_ERRORS as exc:
            self.failed(exc)
            return None
        self.up = True
        self.connections += 1
        if self._outage_logged:
            lasted = now - (self._down_since or now)
            log.warning("Redis at %s is reachable again (after %.0f s)", self.url, lasted)
        elif self.connections == 1:
            log.info("connected to Redis at %s (prefix %r)", self.url, self.keys.prefix)
        self._down_since = None
        self._outage_logged = False
        return self.redis

    def failed(self, error: Exception) -> None:
        """Record that a command failed because Redis is away; logs only the start of an outage."""
        now = self.clock()
        self.up = False
        self._next_try = now + self.retry_seconds
        if self._down_since is None:
            self._down_since = now
        if not self._outage_logged:
            self._outage_logged = True
            log.warning(
                "Redis at %s is unreachable (%s); mirrors wait in the outbox, retrying every %g s",
                self.url,
                error,
                self.retry_seconds,
            )

    def refresh_epoch(self) -> bool:
        """Read (creating if missing) the data generation; True when it differs from the one seen before."""
        self.redis.set(self.keys.epoch, secrets.token_hex(8), nx=True)
        value = self.redis.get(self.keys.epoch)
        epoch = value.decode() if isinstance(value, bytes) else str(value)
        changed = self.epoch is not None and epoch != self.epoch
        if changed:
            log.warning("Redis lost its data (new epoch %s): this computer's mirrors will be published again", epoch)
        self.epoch = epoch
        return changed

    def close(self) -> None:
        self.redis.close()
