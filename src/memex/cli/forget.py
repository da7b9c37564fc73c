"""`memex forget`: remove sessions for good, here and on the user's other computers."""

from __future__ import annotations

import sys

import click
from rich.text import Text

from memex.cli.app import App
from memex.cli.options import json_option
from memex.cli.render import project_name, title_text
from memex.errors import UserError
from memex.sources import ADAPTERS
from memex.store.forget import Target
from memex.textutil import short_id


@click.command("forget")
@click.argument("sessions", nargs=-1)
@click.option("--project", help="Every session of this project folder (and below) or project name.")
@click.option("--before", help="Every session started before this date: 2026-05-01, ISO time, or 30d ago.")
@click.option("--agent", type=click.Choice(sorted(ADAPTERS)), help="Every session of this agent.")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (scripts).")
@json_option
@click.pass_obj
def forget_command(
    app: App,
    sessions: tuple[str, ...],
    project: str | None,
    before: str | None,
    agent: str | None,
    yes: bool,
    as_json: bool,
) -> None:
    """Forget sessions for good: their rows, vectors, mirrors and archived copies go, a tombstone keeps
    re-indexing from bringing them back, and your other computers drop their mirrors too.

    SESSION: ids or unique prefixes. Criteria combine (all must hold). Asks before forgetting on a
    terminal; elsewhere --yes is required.
    """
    if not (sessions or project or before or agent):
        raise UserError("say what to forget: SESSION ids, --project, --before or --agent")
    memex = app.memex(readonly=False)
    targets = memex.forget_targets(sessions, project, before, agent)
    if not targets:
        if as_json:
            app.emit_json({"forgotten": [], "sessions": 0, "archive_files": 0, "published": 0, "note": None})
        else:
            app.err.print("No sessions match: nothing forgotten.")
        return
    if not yes:
        _confirm(app, targets)
    report, published, problem = memex.forget(targets)
    if as_json:
        app.emit_json({**report.to_json(), "published": published, "note": problem})
        return
    count = len(report.sessions)
    app.out.print(
        Text(f"Forgot {count} session{'s' if count != 1 else ''} ({report.archive_files} archived copies removed).")
    )
    if problem:
        app.err.print(Text(f"Not told to your other computers yet: {problem}; the daemon tells them when it can."))
    elif published:
        app.out.print(Text(f"Your other computers were told ({published}): their daemons drop their mirrors."))


def _confirm(app: App, targets: list[Target]) -> None:
    """List what would be forgotten and ask; only on a terminal (a script must say --yes)."""
    count = len(targets)
    if not sys.stdin.isatty():
        raise UserError(f"forgetting {count} session{'s' if count != 1 else ''} needs confirmation: add --yes")
    for target in targets[:20]:
        where = "" if target.computer == app.config.computer else f" (on {target.computer})"
        line = f"  {short_id(target.session_id)}  {app.when(target.started_at)}  {target.agent}  "
        app.err.print(Text(f"{line}{project_name(target.project)}  {title_text(target.title)}{where}"), soft_wrap=True)
    if count > 20:
        app.err.print(Text(f"  … and {count - 20} more"))
    if not click.confirm(f"Forget these {count} sessions for good, on every computer?", default=False, err=True):
        raise UserError("nothing forgotten")
