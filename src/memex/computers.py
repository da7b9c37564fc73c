"""Renaming and retiring computers.

A changed `computer` setting used to strand every local session under the old name (and the daemon then
published nothing): `follow_rename` moves them to the new name, to be published again, and asks the other
computers to forget the old one. `forget_computer` retires a computer: its mirrors go here, and the other
computers are told to drop them too (`memex.sync.forgets` publishes it, and clears what Redis keeps of it).
"""

from __future__ import annotations

import sqlite3

from memex.config import Config
from memex.errors import UserError
from memex.store import computers as queries
from memex.store.db import transaction


def _now() -> str:
    from memex.forget import now_iso  # the forgetting machinery only when a name is forgotten

    return now_iso()


def follow_rename(conn: sqlite3.Connection, config: Config) -> dict[str, int]:
    """Move the local sessions stored under earlier names of this computer to its current name; returns
    {old name: sessions moved}. The other computers will forget the old names."""
    moved: dict[str, int] = {}
    old_names = queries.stranded(conn, config.computer)
    if not old_names:
        return moved
    with transaction(conn):
        for old in old_names:
            moved[old] = queries.rename_local(conn, old, config.computer)
            queries.add_computer_tombstone(conn, old, config.computer, _now())
    return moved


def rename_notes(moved: dict[str, int], computer: str) -> list[str]:
    """What `memex index` says of a rename `follow_rename` followed."""
    return [
        f"this computer was {old!r}, now {computer!r}: {count} sessions follow the new name"
        for old, count in moved.items()
    ]


def forget_computer(conn: sqlite3.Connection, config: Config, name: str) -> int:
    """Forget computer `name` here (its mirrors and registry entry) and queue telling the others; returns
    how many mirrors went. This computer cannot forget itself."""
    if name == config.computer:
        raise UserError(f"{name} is this computer: change the `computer` setting to rename it instead")
    with transaction(conn):
        dropped = queries.drop_computer(conn, name)
        queries.add_computer_tombstone(conn, name, config.computer, _now())
    return dropped


def apply_computer_forget(conn: sqlite3.Connection, config: Config, name: str, forgotten_at: str = "") -> bool:
    """Apply another computer's forgetting of computer `name`; True when something changed here.

    This computer itself was retired while its daemon was off, and it is back: the others dropped every
    mirror it had published before `forgotten_at`, so those are published again (without it they would stay
    unknown there until each session changed). Applying it twice changes nothing the second time."""
    if name == config.computer:
        if not forgotten_at:
            return False
        with transaction(conn):
            return queries.unpublish_before(conn, forgotten_at) > 0
    with transaction(conn):
        return queries.drop_computer(conn, name) > 0
