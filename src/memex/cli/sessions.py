"""`memex sessions …`: list indexed sessions."""

from __future__ import annotations

from typing import Any

import click
from rich.table import Table
from rich.text import Text

from memex.cli.app import App
from memex.cli.options import build_filters, filter_options, json_option
from memex.cli.render import project_name, short_time


@click.group("sessions")
def sessions_group() -> None:
    """Browse indexed sessions."""


@sessions_group.command("list")
@filter_options("project", "agent", "since", "until", "pr")
@click.option("--limit", type=click.IntRange(1), default=20, show_default=True)
@json_option
@click.pass_obj
def list_command(app: App, limit: int, as_json: bool, **options: Any) -> None:
    """Sessions, newest first by start time."""
    sessions = app.memex(readonly=True).sessions(build_filters(**options), limit)
    if as_json:
        app.emit_json([s.to_json() for s in sessions])
        return
    if not sessions:
        app.err.print("No sessions match.")
        return
    table = Table(box=None, header_style="bold")
    for column, width in (("session", 8), ("started", 16), ("agent", 6), ("project", 12), ("turns", 5)):
        table.add_column(column, no_wrap=True, min_width=width, max_width=24 if column == "project" else None)
    table.add_column("title", no_wrap=True, overflow="ellipsis")
    for s in sessions:
        extra = []
        if s.subagents:
            extra.append(f"+{s.subagents} subagents")
        if s.prs:
            extra.append("PR " + ", ".join(f"#{n}" for n in s.prs))
        title = Text(s.title or "—")
        if extra:
            title.append(f" ({'; '.join(extra)})", style="dim")
        table.add_row(
            Text(s.session_id[:8], style="cyan"),
            short_time(s.started_at),
            s.agent,
            project_name(s.project_dir),
            str(s.turns),
            title,
        )
    app.out.print(table)
