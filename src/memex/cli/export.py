"""`memex export SESSION --format md|json|html`: one conversation, for sharing."""

from __future__ import annotations

from pathlib import Path

import click

from memex.cli.app import App
from memex.errors import UserError
from memex.export import FORMATS
from memex.sources import ADAPTERS
from memex.store.db import open_private


@click.command("export")
@click.argument("session")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="md", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), help="Write to this file.")
@click.option("--no-redact", is_flag=True, help="Keep secrets as they were (they are redacted by default).")
@click.option("--agent", type=click.Choice(sorted(ADAPTERS)), help="Only a session of this agent.")
@click.pass_obj
def export_command(app: App, session: str, fmt: str, output: Path | None, no_redact: bool, agent: str | None) -> None:
    """Export a session's conversation (SESSION: an id or a unique prefix) as Markdown, JSON or HTML.

    Only what the user and the assistant said (no tools, no thinking); API keys, tokens and private keys
    are redacted unless --no-redact.
    """
    text = app.memex(readonly=True).export(session, fmt, redact=not no_redact, agent=agent)
    if output is None:
        app.stdout.write(text)
        return
    import os

    try:
        with os.fdopen(open_private(output, os.O_WRONLY | os.O_TRUNC), "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:  # a missing folder, no permission, a full disk
        raise UserError(f"cannot write {output}: {exc.strerror or exc}") from None
    app.say("exported", f"{session} to {output}")
