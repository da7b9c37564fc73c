"""`memex doctor`: one screen of checks (store, hooks, servers, Redis, archive, disk, agents' cleanup)."""

from __future__ import annotations

import click
from rich.text import Text

from memex.cli.app import App
from memex.cli.options import json_option

_STYLES = {"ok": "green", "info": "dim", "warn": "yellow", "fail": "red"}


@click.command("doctor")
@json_option
@click.pass_obj
def doctor_command(app: App, as_json: bool) -> None:
    """Check the store, hooks, warm server, daemon, Redis, archive and disk use, and warn when an agent's
    own cleanup is about to delete transcripts memex has no copy of. Exit status 1 when a check fails."""
    from memex.doctor import diagnose

    checks = diagnose(app.config)
    if as_json:
        app.emit_json({"checks": [c.to_json() for c in checks], "ok": not any(c.status == "fail" for c in checks)})
    else:
        width = max(len(c.name) for c in checks)
        for check in checks:
            line = Text(f"{check.status:>4} ", style=_STYLES[check.status])
            line.append(f"{check.name:<{width}}  ", style="bold")
            line.append(check.detail)
            if check.fix:
                line.append(f"  → {check.fix}", style="cyan")
            app.out.print(line, soft_wrap=True)
    if any(c.status == "fail" for c in checks):
        raise click.exceptions.Exit(1)
