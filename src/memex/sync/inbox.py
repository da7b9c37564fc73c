"""Receiving other computers' mirrors: this computer's consumer group, catch-up, idempotent upsert.

Each computer reads the stream through a consumer group of its own name, writes what it read to its
`mirrors` table, commits, and only then acknowledges: an entry read but not committed stays pending and
is read again (from id 0) after a restart or a reconnection. Applying a mirror is idempotent: the stored
version of (session, computer) is replaced only by a newer one, so a duplicate changes nothing.

A computer joining late, or whose unread entries were trimmed from the stream while it was away, reads
the latest mirror of every session from the per-computer hashes instead (catch-up). Its group is created
before that read, so a mirror published meanwhile arrives by the stream if the read missed it.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import redis

from memex.config import Config
from memex.mirrors.build import store_mirror
from memex.store.db import transaction
from memex.store.forget import is_forgotten
from memex.store.queries import mirror_version
from memex.sync import forgets
from memex.sync.keys import Keys
from memex.sync.wire import Envelope, WireError, decode

log = logging.getLogger("memex.daemon")


def receive(conn: sqlite3.Connection, envelope: Envelope, computer: str) -> bool:
    """Store a received mirror unless this computer's own, or the stored one is as new; True if written."""
    mirror = envelope.mirror
    if mirror.computer == computer or is_forgotten(conn, mirror.session_id, mirror.computer):
        return False
    row = mirror_version(conn, mirror.session_id, mirror.computer)
    if row is not None and (row["content_hash"] == mirror.content_hash or row["updated_at"] > envelope.updated_at):
        return False
    return store_mirror(conn, mirror, envelope.updated_at)


def apply_payloads(conn: sqlite3.Connection, payloads: Iterable[bytes | None], computer: str) -> int:
    """Decode and store mirrors in one transaction; unreadable payloads are skipped. Returns how many
    mirrors were written."""
    written = 0
    with transaction(conn):
        for payload in payloads:
            if payload is None:
                continue
            try:
                envelope = decode(payload)
            except WireError as exc:
                log.warning("skipped a mirror: %s", exc)
                continue
            written += receive(conn, envelope, computer)
    return written


@dataclass
class StepResult:
    """What one read of the stream did."""

    read: int = 0
    written: int = 0


def _id_key(entry_id: bytes | str) -> tuple[int, int]:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    millis, _, seq = text.partition("-")
    return int(millis), int(seq or 0)


class Consumer:
    """This computer's reader of the mirror stream."""

    def __init__(
        self, conn: sqlite3.Connection, keys: Keys, computer: str, batch: int, config: Config | None = None
    ) -> None:
        self.conn = conn
        self.config = config  # to apply forgettings (their archive copies are files); None: mirrors only
        self.keys = keys
        self.computer = computer
        self.group = computer
        self.batch = batch
        self._prepared_for: int | None = None  # the link connection the group was checked on
        self._pending_from: str | None = "0"  # read pending entries from here first; None: new ones
        self.caught_up = 0  # mirrors written by catch-ups (tests and the daemon's log)

    def prepare(self, client: redis.Redis) -> None:
        """Make sure the group exists; catch up when it is new or entries it never read were trimmed; then
        read this consumer's pending entries before new ones."""
        created = self._ensure_group(client)
        if created or self._missed_trimmed(client):
            self.caught_up += self.catch_up(client)
        self._pending_from = "0"

    def _ensure_group(self, client: redis.Redis) -> bool:
        try:
            client.xgroup_create(self.keys.stream, self.group, id="$", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" in str(exc):
                return False
            raise
        log.info("joined the mirror stream %s as group %r", self.keys.stream, self.group)
        return True

    def _missed_trimmed(self, client: redis.Redis) -> bool:
        """True when entries this group never read may have been trimmed from the stream."""
        info = client.xinfo_stream(self.keys.stream)
        added = info.get("entries-added")  # Redis 7 and later; older ones get the cautious answer below
        if added is not None and added <= info.get("length", 0):
            return False  # nothing was ever removed
        group = next((g for g in client.xinfo_groups(self.keys.stream) if _text(g.get("name")) == self.group), None)
        if group is None:
            return True
        # Not the group's `lag`: after trimming, Redis 7.0 estimates it from the entries it still has. An
        # entry this group never got may have been trimmed when the first entry left is past its last one
        # (or, the stream emptied, when the last entry ever added is).
        delivered = _id_key(group["last-delivered-id"])
        first = info.get("first-entry")
        if first is None:
            return delivered < _id_key(info.get("last-generated-id") or "0-0")
        return delivered < _id_key(first[0])

    def catch_up(self, client: redis.Redis) -> int:
        """Read the latest mirror of every session of every other computer; returns how many were written."""
        written = 0
        if self.config is not None:
            written += forgets.catch_up(self.conn, self.config, client, self.keys)
        for member in sorted(_text(m) for m in client.smembers(self.keys.publishers)):
            if member == self.computer:
                continue
            cursor = 0
            while True:
                cursor, page = client.hscan(self.keys.latest(member), cursor, count=self.batch)
                written += apply_payloads(self.conn, cast(dict[bytes, bytes], page).values(), self.computer)
                if int(cursor) == 0:
                    break
        if written:
            log.info("caught up %d mirrors from the latest-mirror store", written)
        return written

    @property
    def reading_pending(self) -> bool:
        """True while this consumer's pending entries (read before, never acknowledged) are re-read."""
        return self._pending_from is not None

    def step(self, client: redis.Redis, connection: int, block_ms: int | None = None) -> StepResult:
        """Read one batch (pending entries first), store it, then acknowledge it.

        `connection` is the link's connection counter: after a reconnection the group is checked again
        (Redis may have lost it) and pending entries are read again. `block_ms` waits for new entries.
        """
        if self._prepared_for != connection:
            self.prepare(client)
            self._prepared_for = connection
        if self._pending_from is not None:
            entries = self._read(client, self._pending_from, None)
            if entries:
                self._pending_from = _text(entries[-1][0])
                return self._apply(client, entries)
            if entries is None:
                return StepResult()
            self._pending_from = None  # all pending entries are done: on to new ones
        entries = self._read(client, ">", block_ms)
        return self._apply(client, entries) if entries else StepResult()

    def _read(self, client: redis.Redis, start: str, block_ms: int | None) -> list[tuple[Any, Any]] | None:
        """Entries after `start` (`>`: never delivered); None when the group vanished."""
        try:
            reply = client.xreadgroup(
                self.group, self.computer, {self.keys.stream: start}, count=self.batch, block=block_ms
            )
        except redis.ResponseError as exc:
            if "NOGROUP" in str(exc):  # the stream or the group vanished (Redis lost its data)
                self._prepared_for = None
                return None
            raise
        return cast(list[Any], reply)[0][1] if reply else []

    def _apply(self, client: redis.Redis, entries: list[tuple[Any, Any]]) -> StepResult:
        """Store the entries' mirrors in one transaction, then acknowledge them all."""
        payloads: list[Any] = []
        written = 0
        for _entry_id, fields in entries:
            if not fields:  # a pending entry trimmed away: nothing to apply
                continue
            if _text(fields.get(b"computer", b"")) == self.computer:
                continue  # this computer's own mirror
            if forgets.is_forget(fields):  # in stream order: the mirrors read before it first
                written += apply_payloads(self.conn, payloads, self.computer)
                payloads = []
                if self.config is not None:
                    written += forgets.receive(self.conn, self.config, fields)
                continue
            payloads.append(fields.get(b"mirror"))
        written += apply_payloads(self.conn, payloads, self.computer)
        client.xack(self.keys.stream, self.group, *[entry_id for entry_id, _ in entries])
        return StepResult(read=len(entries), written=written)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
