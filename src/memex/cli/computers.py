"""`memex computers`: the computers sharing mirrors under this prefix, live or stale."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click
from rich.table import Table

from memex.cli.app import App
from memex.cli.options import json_option
from memex.cli.render import short_time, styled


@click.group("computers", invoke_without_command=True)
@json_option
@click.pass_context
def computers_command(ctx: click.Context, as_json: bool) -> None:
    """List the computers that announced themselves (live: their daemon runs now), when each was last
    seen, how many sessions it has, and how many of its mirrors this computer holds.
    `memex computers forget NAME` retires one."""
    if ctx.invoked_subcommand is not None:
        return
    app: App = ctx.obj
    found = app.memex(readonly=True).computers()
    if as_json:
        app.emit_json(found.to_json())
        return
    if found.note:
        app.err.print(f"{found.note}: showing what this computer's daemon last saw.")
    table = Table(box=None)
    for column in ("computer", "status", "last seen", "sessions", "mirrors here", "API"):
        table.add_column(column, justify="right" if column in ("sessions", "mirrors here") else "left")
    for row in found.computers:
        name = row.computer + (" (this computer)" if row.this_computer else "")
        style = {"live": "green", "stale": "yellow"}.get(row.status, "dim")
        table.add_row(
            name,
            styled(row.status, style),
            _ago(row.last_seen, app.utc),
            "—" if row.sessions is None else str(row.sessions),
            str(row.mirrors_here),
            row.api_url or "—",
        )
    app.out.print(table)


def _ago(timestamp: Any, utc: bool) -> str:
    """`2026-05-03 00:20 (3 min ago)`."""
    if not timestamp:
        return "—"
    try:
        then = datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    except ValueError:
        return str(timestamp)
    seconds = max(0, int((datetime.now(UTC) - then).total_seconds()))
    for unit, size in (("d", 86_400), ("h", 3_600), ("min", 60)):
        if seconds >= size:
            return f"{short_time(str(timestamp), utc)} ({seconds // size} {unit} ago)"
    return f"{short_time(str(timestamp), utc)} ({seconds} s ago)"


def _add_subcommands() -> None:
    from memex.cli.computers_forget import forget_computer_command

    computers_command.add_command(forget_computer_command)


_add_subcommands()
