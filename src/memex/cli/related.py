"""`memex find-related sessions|turns [SESSION]`: earlier work on the same files."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

import click
from rich.progress import Progress
from rich.text import Text

from memex.api import Memex
from memex.cli.app import App
from memex.cli.options import build_filters, filter_options, json_option
from memex.cli.render import count_progress, project_name, short_time, subagent_label
from memex.errors import UserError
from memex.results import Related
from memex.search.related.centroids import stale_sessions
from memex.search.related.resources import ProgressFn
from memex.store.db import store_writable
from memex.textutil import shorten


@click.group("find-related")
def related_group() -> None:
    """Sessions and turns that worked on the same files as a session.

    SESSION is an id or a unique prefix; by default, the most recent session of the project the current
    folder is in. File paths are embedded once (a progress bar shows a long first run) and compared by
    meaning, so `src/cart/total.py` is near `src/cart/discount.py`.
    """


def common_options(func: Callable[..., Any]) -> Callable[..., Any]:
    func = json_option(func)
    func = click.option("--limit", type=click.IntRange(1), default=10, show_default=True)(func)
    func = filter_options("project", "agent")(func)
    return click.argument("session", required=False)(func)


@related_group.command("sessions")
@common_options
@click.pass_obj
def sessions_command(app: App, session: str | None, limit: int, as_json: bool, **options: Any) -> None:
    """Sessions whose files resemble SESSION's most, with the files they share."""
    memex = open_store(app)
    session_id = query_session(memex, session)
    with embedding_progress(app) as progress:
        found = memex.related_sessions(session_id, build_filters(**options), limit, progress)
    if as_json:
        app.emit_json(found.to_json())
        return
    print_header(app, found)
    for number, hit in enumerate(found.results, 1):
        app.out.print(result_head(number, hit))
        if hit["title"]:
            app.out.print(Text("   " + shorten(hit["title"], 100), style="bold"))
        app.out.print(shared_line(hit))
        app.out.print()


@related_group.command("turns")
@common_options
@click.option(
    "--window",
    type=click.IntRange(1),
    help="Consecutive turns compared (default: the related_window_turns setting, 3 unless changed): this "
    "session's last N against every stretch of N turns of the nearest sessions.",
)
@click.pass_obj
def turns_command(app: App, session: str | None, limit: int, as_json: bool, window: int | None, **options: Any) -> None:
    """Stretches of turns in other sessions that worked on the files of SESSION's last turns."""
    memex = open_store(app)
    session_id = query_session(memex, session)
    with embedding_progress(app) as progress:
        found = memex.related_turns(session_id, build_filters(**options), limit, window, progress)
    if as_json:
        app.emit_json(found.to_json())
        return
    for warning in found.warnings:
        app.say("warning", warning)
    print_header(app, found)
    for number, hit in enumerate(found.results, 1):
        head = result_head(number, hit)
        count = len(hit["turns"])
        head.append(f"  {count} turn{'' if count == 1 else 's'}", style="dim")
        app.out.print(head)
        for turn in hit["turns"]:
            line = Text(f"   › {short_time(turn['started_at'])} ", style="dim")
            if turn["agent_id"]:
                line.append(subagent_label(turn["agent_id"]) + " ", style="magenta")
            line.append(shorten(turn["prompt"], 110), style="default")
            app.out.print(line)
        app.out.print(shared_line(hit))
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


@contextlib.contextmanager
def embedding_progress(app: App) -> Iterator[ProgressFn]:
    """A (done, total) callback that shows a bar on stderr (terminal only) once many paths wait to be embedded."""
    with contextlib.ExitStack() as stack:
        bars: list[Progress] = []

        def update(done: int, total: int) -> None:
            if not bars:
                if total < app.config.related_progress_min_paths:
                    return
                bars.append(stack.enter_context(count_progress(app.err, total, "Embedding file paths")))
            bars[0].update(bars[0].task_ids[0], completed=done)

        yield update


def print_header(app: App, found: Related) -> None:
    session = found.session
    head = Text("Related to ", style="bold")
    head.append(session["session_id"][:8], style="cyan")
    head.append(
        f"  {short_time(session['started_at'])} · {session['agent']} · {project_name(session['project_dir'])}"
        f" · {session['file_count']} files",
        style="dim",
    )
    app.out.print(head)
    if session["title"]:
        app.out.print(Text(shorten(session["title"], 100), style="dim"))
    app.out.print()
    if not found.results:
        app.err.print("No other session touched files to compare with (under these filters).")


def result_head(number: int, hit: dict[str, Any]) -> Text:
    head = Text(f"{number}. ", style="bold")
    head.append(hit["session_id"][:8], style="cyan")
    head.append(f"  {short_time(hit['started_at'])} · {hit['agent']} · {project_name(hit['project_dir'])}", style="dim")
    head.append(f"  {hit['score']:.3f}", style="green")
    return head


def shared_line(hit: dict[str, Any]) -> Text:
    if not hit["shared_count"]:
        line = Text("   no file in common; nearest by name: ", style="dim")
        line.append(", ".join(hit["files"]) or "—")
        return line
    more = hit["shared_count"] - len(hit["shared_files"])
    line = Text(f"   shared ({hit['shared_count']}): ", style="dim")
    line.append(", ".join(hit["shared_files"]) + (f" (+{more} more)" if more > 0 else ""), style="yellow")
    return line
