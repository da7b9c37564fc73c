"""Options shared by the read commands, and their conversion to store filters."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from memex.cli.app import App
from memex.sources import ADAPTERS
from memex.store.queries import Filters


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON (a stable contract).")(func)


def _set_on_app(name: str) -> Callable[[click.Context, click.Parameter, bool], None]:
    def callback(ctx: click.Context, param: click.Parameter, value: bool) -> None:
        app = ctx.find_object(App)
        if value and app is not None:
            setattr(app, name, name == "utc")  # --utc sets utc; --no-pager clears pager

    return callback


def display_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--utc` and `--no-pager` on a command that prints (also accepted before the command: `memex --utc …`)."""
    func = click.option(
        "--no-pager",
        is_flag=True,
        expose_value=False,
        callback=_set_on_app("pager"),
        help="Never page long output (default: through $MEMEX_PAGER, $PAGER or less, on a terminal).",
    )(func)
    return click.option(
        "--utc",
        is_flag=True,
        expose_value=False,
        callback=_set_on_app("utc"),
        help="Show times in UTC (default: local time, with its zone). JSON is always UTC.",
    )(func)


def filter_options(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add the named filter options (project, agent, since, until, session, file, pr) to a command."""
    available = {
        "project": click.option("--project", help="A project folder (and below) or a project name."),
        "agent": click.option("--agent", type=click.Choice(sorted(ADAPTERS)), help="Only sessions of this agent."),
        "since": click.option("--since", help="From this date: 2026-05-01, ISO time, or 7d / 12h / 2w ago."),
        "until": click.option("--until", help="Up to this date (a bare date includes the whole day)."),
        "session": click.option("--session", help="Only this session (id or unique prefix)."),
        "file": click.option("--file", "file_path", help="Only turns that touched this file."),
        "pr": click.option(
            "--pr", type=click.IntRange(1, 2**63 - 1), help="Only sessions linked to this pull request number."
        ),
    }

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        for name in reversed(names):
            func = available[name](func)
        return func

    return decorate


def build_filters(**options: Any) -> Filters:
    """Store filters from the command's filter options (dates parsed, with one clear error)."""
    return Filters.parse({**options, "file": options.get("file_path")})
