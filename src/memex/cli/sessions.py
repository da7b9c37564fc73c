"""`memex sessions …`: list indexed sessions."""

from __future__ import annotations

from typing import Any

import click
from rich.text import Text, TextType

from memex.cli.app import App, count_type
from memex.cli.options import build_filters, display_options, filter_options, json_option
from memex.cli.render import TableColumn, print_table, project_name, title_text
from memex.textutil import counted, short_id


@click.group("sessions")
def sessions_group() -> None:
    """Browse indexed sessions."""


@sessions_group.command("list")
@filter_options("project", "agent", "since", "until", "pr")
@click.option("--computer", help="Only the sessions of this computer (received as mirrors, or this one's).")
@click.option("--local", "local_only", is_flag=True, help="Only the sessions indexed on this computer.")
@click.option("--limit", type=count_type(), default=20, show_default=True)
@json_option
@display_options
@click.pass_obj
def list_command(app: App, limit: int, as_json: bool, computer: str | None, local_only: bool, **options: Any) -> None:
    """Sessions, newest first by start time: this computer's and those received from your other computers
    (marked with their computer)."""
    sessions = app.memex(readonly=True).sessions(build_filters(**options), limit, computer=computer, local=local_only)
    if as_json:
        app.emit_json([s.to_json() for s in sessions])
        return
    if not sessions:
        app.err.print("No sessions match.")
        return
    started = [app.when(s.started_at) for s in sessions]
    widest = max(len(when) for when in started)  # a time is never cut: `2026-05-03 02:20 CEST`
    ids = [short_id(s.session_id) for s in sessions]
    longest = max(len(sid) for sid in ids)  # nor an id: `specstory-4b54246d` cut to `specstory-…` finds nothing
    columns: list[TableColumn] = [("session", longest, None), ("started", widest, None), ("agent", 6, None)]
    columns += [("project", 12, 24), ("turns", 5, None), ("title", None, None)]
    rows: list[list[TextType]] = []
    for s, when, sid in zip(sessions, started, ids, strict=True):
        extra = []
        if s.subagents:
            extra.append(f"+{counted(s.subagents, 'subagent')}")
        if s.prs:
            extra.append("PR " + ", ".join(f"#{n}" for n in s.prs))
        if s.source == "mirror":
            extra.append(f"on {s.computer}")
        title = Text(title_text(s.title))
        if extra:
            title.append(f" ({'; '.join(extra)})", style="dim")
        cells: list[TextType] = [Text(sid, style="cyan"), when, s.agent, project_name(s.project_dir)]
        rows.append([*cells, "—" if s.turns is None else str(s.turns), title])
    with app.paged():
        print_table(app.out, columns, rows)
