"""`memex sessions …`: list indexed sessions."""

from __future__ import annotations

from typing import Any

import click
from rich.text import Text, TextType

from memex.cli.app import App, count_type
from memex.cli.options import build_filters, display_options, filter_options, json_option
from memex.cli.render import (
    TableColumn,
    cell_width,
    fit_last_column,
    print_table,
    project_name,
    shorten_to_cells,
    title_text,
)
from memex.textutil import counted, short_id, subagent_tally


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
    extras: list[str] = []
    for s, when, sid in zip(sessions, started, ids, strict=True):
        notes = []
        if s.subagents:
            names = subagent_tally(s.subagent_names)
            notes.append(f"+{counted(s.subagents, 'subagent')}" + (f": {names}" if names else ""))
        if s.prs:
            notes.append("PR " + ", ".join(f"#{n}" for n in s.prs))
        if s.source == "mirror":
            notes.append(f"on {s.computer}")
        extras.append(f" ({'; '.join(notes)})" if notes else "")
        cells: list[TextType] = [Text(sid, style="cyan"), when, s.agent, project_name(s.project_dir)]
        rows.append([*cells, "—" if s.turns is None else str(s.turns), title_text(s.title)])
    with app.paged():
        out = app.out
        # The room the title gets; a title cut to it keeps its subagents, PRs and computer.
        plain = [[header for header, _, _ in columns], *[[str(cell) for cell in row] for row in rows]]
        room = fit_last_column(columns, plain, out.width)[-1][2]
        for row, extra in zip(rows, extras, strict=True):
            title = str(row[-1])
            if room is not None and cell_width(title) + cell_width(extra) > room:
                title = shorten_to_cells(title, max(room - cell_width(extra), 1))
            shown = Text(title)
            if extra:
                shown.append(extra, style="dim")
            row[-1] = shown
        print_table(out, columns, rows)
