"""`memex computers forget NAME`: retire a computer (its mirrors go, here and on the others)."""

from __future__ import annotations

import click
from rich.text import Text

from memex.cli.app import App
from memex.cli.options import json_option
from memex.errors import UserError


@click.command("forget")
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (scripts).")
@json_option
@click.pass_obj
def forget_computer_command(app: App, name: str, yes: bool, as_json: bool) -> None:
    """Forget computer NAME: the mirrors received from it and its registry entry go, here and on your
    other computers (its own store is not touched). Refused while its daemon is running."""
    import sys

    from memex.computers import forget_computer
    from memex.store.computers import received_mirrors
    from memex.sync.forgets import publish_now
    from memex.sync.remote import known_computers

    conn = app.db()
    found, _ = known_computers(app.config, conn)
    info = next((c for c in found if c.computer == name), None)
    mirrors = received_mirrors(conn, name)
    if info is None and not mirrors and name != app.config.computer:
        raise UserError(f"no computer named {name!r} is known here (see `memex computers`)")
    if info is not None and info.live:
        raise UserError(f"{name}'s daemon is running: stop it there first (it would publish its mirrors again)")
    if not yes and name != app.config.computer:
        if not sys.stdin.isatty():
            raise UserError(f"forgetting computer {name} needs confirmation: add --yes")
        if not click.confirm(f"Forget {name} and its {mirrors} mirrors, on every computer?", default=False, err=True):
            raise UserError("nothing forgotten")
    dropped = forget_computer(conn, app.config, name)
    published, problem = publish_now(conn, app.config)
    if as_json:
        app.emit_json({"computer": name, "mirrors": dropped, "published": bool(published), "note": problem})
        return
    app.out.print(Text(f"Forgot {name} ({dropped} mirrors)."))
    if problem:
        app.err.print(Text(f"Not told to your other computers yet: {problem}; the daemon tells them when it can."))
