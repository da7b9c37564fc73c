"""`memex stats`: what the store holds."""

from __future__ import annotations

import click
from rich.markup import escape
from rich.table import Table

from memex.cli.app import App
from memex.cli.options import json_option
from memex.store.queries import statistics


@click.command("stats")
@json_option
@click.pass_obj
def stats_command(app: App, as_json: bool) -> None:
    """Counts of sessions, turns, chunks… and the database size."""
    stats = statistics(app.db_readonly(), app.config.db_path)
    if as_json:
        app.emit_json(stats)
        return
    table = Table(title="memex stats", show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(justify="right")
    errors = stats.pop("embed_errors")
    for key, value in stats.items():
        if key == "database_bytes":
            value = f"{value / 1_048_576:.1f} MiB"
        elif isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items()) or "—"
        table.add_row(key.replace("_", " "), str(value))
    app.out.print(table)
    for error in errors:
        app.out.print(
            f"[red]embedding failed[/] ({error['status']}, {error['attempts']} attempts) {error['level']} "
            f"{error['owner_id']}: {escape(str(error['last_error']))}",
            markup=True,
        )
