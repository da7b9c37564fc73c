"""`memex stats`: what the store holds."""

from __future__ import annotations

import click
from rich.text import Text

from memex.cli.app import App
from memex.cli.options import json_option
from memex.cli.render import print_summary


@click.command("stats")
@json_option
@click.pass_obj
def stats_command(app: App, as_json: bool) -> None:
    """Counts of sessions, turns, chunks… the database size, agent versions, and format drift (records of
    types an agent's adapter does not know, per agent and version)."""
    stats = app.memex(readonly=True).stats().to_json()
    if as_json:
        app.emit_json(stats)
        return
    rows = []
    errors = stats.pop("embed_errors")
    drift = stats.pop("unknown_record_types")
    versions = stats.pop("agent_versions")
    stats["agent_versions"] = "; ".join(
        f"{agent} " + ", ".join(f"{version} ({n})" for version, n in by_version.items())
        for agent, by_version in versions.items()
    )
    stats["unknown_record_types"] = sum(d["records"] for d in drift)
    for key, value in stats.items():
        if key in ("database_bytes", "archive_bytes", "archived_transcript_bytes"):
            value = f"{value / 1_048_576:.1f} MiB"
        elif isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items()) or "—"
        rows.append((key.replace("_", " "), str(value)))
    print_summary(app.out, "memex stats", rows)
    if drift:
        head = Text("format drift", style="bold")
        head.append(": records of types memex does not know (newest first)")
        app.out.print(head)
        for item in drift:
            app.out.print(
                Text(
                    f"  {item['agent']} {item['version'] or 'unknown version'}: "
                    f"{item['record_type']} ×{item['records']} in {item['sessions']} session(s), "
                    f"last {item['last_seen'] or '?'}"
                )
            )
    for error in errors:
        line = Text("embedding failed", style="red")
        line.append(
            f" ({error['status']}, {error['attempts']} attempts) {error['level']} {error['owner_id']}: "
            f"{error['last_error']}"
        )
        app.out.print(line)
