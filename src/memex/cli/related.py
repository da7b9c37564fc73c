"""`memex find-related sessions|turns [SESSION]`: earlier work on the same files."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import click
from rich.text import Text

from memex.api import Memex
from memex.cli.app import App, count_type
from memex.cli.options import build_filters, display_options, filter_options, json_option
from memex.cli.render import project_name, step_progress, title_text
from memex.errors import UserError
from memex.related.centroids import stale_sessions
from memex.reports import Related
from memex.store.db import store_writable
from memex.textutil import counted, short_id, shorten, subagent_label


@click.group("find-related")
def related_group() -> None:
    """Sessions and turns that worked on the same files as a session.

    SESSION is an id or a unique prefix; by default, the most recent session of the project the current
    folder is in. Results that share files with it come first; each file counts more the fewer sessions
    touched it (a README every session opens counts for nothing). The score adds the nearness of the file
    paths by meaning, so `src/cart/total.py` is near `src/cart/discount.py`: it orders the rest. File
    paths are embedded once (a progress bar shows a long first run).
    """


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = display_options(func)
    func = json_option(func)
    func = click.option(
        "--min-shared",
        type=count_type(0),
        default=0,
        show_default=True,
        help="Only results that touched at least N of the session's files.",
    )(func)
    func = click.option("--limit", type=count_type(), default=10, show_default=True)(func)
    func = filter_options("project", "agent")(func)
    return click.argument("session", required=False)(func)


@related_group.command("sessions")
@common_options
@click.pass_obj
def sessions_command(app: App, session: str | None, limit: int, min_shared: int, as_json: bool, **options: Any) -> None:
    """Sessions that worked on SESSION's files: those sharing rare files first, each with its reasons."""
    memex = open_store(app)
    session_id = query_session(memex, session)
    with step_progress(app.err) as progress:
        found = memex.related_sessions(session_id, build_filters(**options), limit, progress, min_shared=min_shared)
    if as_json:
        app.emit_json(found.to_json())
        return
    with app.paged():
        print_header(app, found)
        for number, hit in enumerate(found.results, 1):
            app.out.print(result_head(app, number, hit))
            if hit["title"]:
                app.out.print(Text("   " + title_text(hit["title"], 100), style="bold"))
            app.out.print(shared_line(hit))
            app.out.print(score_line(hit, app.config.related_shared_weight_pct))
            app.out.print()


@related_group.command("turns")
@common_options
@click.option(
    "--window",
    type=count_type(),
    help="Consecutive turns compared (default: the related_window_turns setting, 3 unless changed): this "
    "session's last N against every stretch of N turns of the nearest sessions.",
)
@click.pass_obj
def turns_command(
    app: App, session: str | None, limit: int, min_shared: int, as_json: bool, window: int | None, **options: Any
) -> None:
    """Stretches of turns in other sessions that worked on the files of SESSION's last turns."""
    memex = open_store(app)
    session_id = query_session(memex, session)
    with step_progress(app.err) as progress:
        found = memex.related_turns(
            session_id, build_filters(**options), limit, window, progress, min_shared=min_shared
        )
    if as_json:
        app.emit_json(found.to_json())
        return
    for warning in found.warnings:
        app.say("warning", warning)
    with app.paged():
        print_turns(app, found)


def print_turns(app: App, found: Related) -> None:
    print_header(app, found)
    for number, hit in enumerate(found.results, 1):
        head = result_head(app, number, hit)
        count = len(hit["turns"])
        head.append(f"  {count} turn{'' if count == 1 else 's'}", style="dim")
        app.out.print(head)
        for turn in hit["turns"]:
            line = Text(f"   › {app.when(turn['started_at'])} ", style="dim")
            if turn["agent_id"]:
                label = subagent_label(turn["agent_id"], turn.get("subagent_name"), turn.get("subagent_description"))
                line.append(label + " ", style="magenta")
            line.append(shorten(turn["prompt"], 110), style="default")
            app.out.print(line)
        app.out.print(shared_line(hit))
        app.out.print(score_line(hit, app.config.related_shared_weight_pct))
        app.out.print()


# --- shared by both commands ---------------------------------------------------------------------------


def open_store(app: App) -> Memex:
    """The store, read-write (the path vectors and centroids are cached in it); never a new empty one.

    A store this process cannot write serves find-related as long as its centroids are up to date; when
    they are not, that is said before any work is done (they are computed once, where it is writable)."""
    path = app.config.db_path
    if not path.exists():
        raise UserError(f"no memex database at {path} yet: run `memex index` first")
    if store_writable(path):
        return app.memex(readonly=False)
    memex = app.memex(readonly=True)
    stale, seen, top = stale_sessions(memex.conn, app.config.resource_model_version)
    if stale or top != seen:
        raise UserError(
            f"MEMEX_HOME {path.parent} is read-only and find-related must first store the vectors of new file "
            "paths and sessions there: run it once where the store can be written"
        )
    return memex


def query_session(memex: Memex, prefix: str | None) -> str:
    """The session given by id or prefix, or the latest one of the current folder's project."""
    if prefix is not None:
        return memex.resolve_session(prefix)
    return memex.latest_session(os.getcwd())


def print_header(app: App, found: Related) -> None:
    session = found.session
    head = Text("Related to ", style="bold")
    head.append(short_id(session["session_id"]), style="cyan")
    head.append(
        f"  {app.when(session['started_at'])} · {session['agent']} · {project_name(session['project_dir'])}"
        f" · {counted(session['file_count'], 'file')}",
        style="dim",
    )
    app.out.print(head)
    if session["title"]:
        app.out.print(Text(title_text(session["title"], 100), style="dim"))
    app.out.print()
    if not found.results:
        app.err.print("No other session touched files to compare with (under these filters).")


def result_head(app: App, number: int, hit: dict[str, Any]) -> Text:
    head = Text(f"{number}. ", style="bold")
    head.append(short_id(hit["session_id"]), style="cyan")
    head.append(f"  {app.when(hit['started_at'])} · {hit['agent']} · {project_name(hit['project_dir'])}", style="dim")
    head.append(f"  {hit['score']:.3f}", style="green")
    return head


def shared_line(hit: dict[str, Any]) -> Text:
    """The files in common, each with the number of sessions that touched it (fewer: rarer, weighs more)."""
    if not hit["shared_count"]:
        line = Text("   no file in common; nearest by name: ", style="dim")
        line.append(", ".join(hit["files"]) or "—")
        return line
    more = hit["shared_count"] - len(hit["shared"])
    line = Text(f"   shared ({hit['shared_count']}): ", style="dim")
    for number, item in enumerate(hit["shared"]):
        line.append(", " if number else "", style="dim")
        line.append(item["path"], style="yellow")
        line.append(f" ({item['sessions']} session{'' if item['sessions'] == 1 else 's'})", style="dim")
    if more > 0:
        line.append(f" (+{more} more)", style="dim")
    return line


def score_line(hit: dict[str, Any], weight_pct: int) -> Text:
    """How the score was made: `score 0.812 = 0.70 × shared 0.83 + 0.30 × similarity 0.94`."""
    weight = weight_pct / 100
    return Text(
        f"   score {hit['score']:.3f} = {weight:.2f} × shared {hit['shared_score']:.2f} + "
        f"{1 - weight:.2f} × similarity {hit['similarity']:.3f}",
        style="dim",
    )
