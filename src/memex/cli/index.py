"""`memex index`: ingest transcripts incrementally."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.text import Text

from memex.cli.app import App, count_type
from memex.cli.render import byte_progress, print_summary
from memex.collector import Paused
from memex.errors import UserError
from memex.ingest.report import IDLE
from memex.sources import ADAPTERS

if TYPE_CHECKING:
    from memex.ingest.indexer import IndexReport
    from memex.ingest.report import FileReport
    from memex.sources.model import Transcript

# `memex index` exit statuses (README, "Use").
EXIT_SOME_FAILED = 1
# Unchanged files move the progress bar in steps of this many bytes (one update per file costs more than
# deciding that the file is unchanged).
PROGRESS_STEP_BYTES = 4 * 1_048_576


@click.command("index")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--agent",
    "agents",
    multiple=True,
    type=click.Choice(sorted(ADAPTERS)),
    help="Only this agent's transcripts (repeatable). Default: every agent.",
)
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Backfill every agent's default folders (configurable: claude_dir, codex_dir, … ; README, Agents).",
)
@click.option(
    "--workers", type=count_type(), help="Processes parsing transcripts in a backfill (default: index_workers)."
)
@click.option("--no-embed", is_flag=True, help="Only index; leave the vectors to `memex embed` (or the daemon).")
@click.option(
    "--check-archive",
    is_flag=True,
    help="Look at every archived copy and copy again those lost whose transcript is still on disk "
    "(otherwise done once a day, or when an archive folder changed).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_obj
def index_command(
    app: App,
    paths: tuple[Path, ...],
    agents: tuple[str, ...],
    everything: bool,
    workers: int | None,
    no_embed: bool,
    check_archive: bool,
    as_json: bool,
) -> None:
    """Index transcripts: the agents' default folders, or the files and folders given as PATHS.

    Re-running reads only what changed; an interrupted run resumes where it stopped. The embedding queue
    is drained at the end (turns first), unless --no-embed.

    A file that cannot be read (no permission, not a regular file, a link loop) or parsed is reported
    with its reason and every other file is indexed; a file given as PATH that is no agent's transcript
    is refused. Exit status: 0 every file was indexed; 1 some files failed or were refused (listed on
    stderr, and under "failed" and "refused" with --json), the others were indexed; 2 a usage error.
    """
    if everything and (paths or agents):
        raise UserError("--all indexes every agent's default folders: give it no PATHS and no --agent")
    # What was imported lives as long as the process: the collector need not walk it again each time the
    # tens of thousands of rows and file states a run holds trigger a collection.
    gc.freeze()
    memex = app.memex(readonly=False)
    for old, moved in memex.follow_rename().items():
        app.say("note", f"this computer was {old!r}, now {app.config.computer!r}: {moved} sessions follow the new name")
    if check_archive and not app.config.archive_enabled:
        app.say("note", "the archive is turned off (archive_enabled = 0): --check-archive has no copies to look at")
    # Discovery makes tens of thousands of objects that hold no cycle and live till the end (the stored
    # streams' rows, the paths found unchanged): the collector, which ran ~30 times over them (~5 ms at
    # 20,000 transcripts), is off meanwhile, and they are frozen with the imports once made.
    with Paused():
        found = memex.discover(paths, agents, check_archive=check_archive)
    with byte_progress(app.err, 0, "Indexing") as progress:
        task = progress.task_ids[0]
        unchanged = [0]  # bytes of unchanged files not yet shown: they move the bar in steps

        def advance(transcript: Transcript, report: FileReport) -> None:
            if report.status in IDLE and unchanged[0] < PROGRESS_STEP_BYTES:
                unchanged[0] += report.size
                return
            step, unchanged[0] = unchanged[0] + report.size, 0
            progress.update(task, advance=step, current=f"{transcript.agent} {transcript.path.name}")

        report = memex.index(
            found, workers=workers, on_file=advance, on_total=lambda total: progress.update(task, total=total)
        )
    for warning in report.warnings:
        app.say("warning", warning)
    _print_failures(app, report)
    embedded = None if no_embed or not app.config.index_embeds else _embed(app)
    if as_json:
        app.emit_json({**report.to_json(), "embed": embedded})
        _exit_status(report)
        return
    if not found.transcripts and not found.unchanged and not report.failed and not report.refused:
        where = ", ".join(str(p) for ps in found.roots.values() for p in ps)
        app.err.print(f"No transcripts found under {where}.")
    rows = report.to_json()
    summary = [
        (label, str(rows[key]))
        for label, key in [
            ("files", "files"),
            ("changed", "files_changed"),
            ("sessions", "sessions"),
            ("subagents", "subagents"),
            ("turns written", "turns"),
            ("lines read", "lines"),
            ("bad lines skipped", "bad_lines"),
            ("missing files", "missing_files"),
            ("failed files", "failed_files"),
            ("mirrors written", "mirrors"),
            ("seconds", "seconds"),
        ]
    ]
    if report.tool_output_streams:  # once, after the upgrade that made tool output searchable
        summary.append(("tool output read from earlier files", str(report.tool_output_streams)))
    if embedded is not None:
        summary.append(("vectors computed", str(embedded["embedded"])))
        summary.append(("still to embed", str(embedded["queued"])))
    print_summary(app.out, "memex index", summary)
    _exit_status(report)


def _print_failures(app: App, report: IndexReport) -> None:
    """Name every file that was not indexed, and why, on stderr."""
    if report.failed:
        count = len(report.failed)
        app.err.print(Text(f"{count} file{'s' if count != 1 else ''} could not be indexed:", style="red"))
        for item in report.failed:
            app.err.print(Text(f"  {item.path}: {item.reason}"), soft_wrap=True)
    for item in report.refused:
        app.say("warning", f"{item.path}: {item.reason}; not indexed")


def _exit_status(report: IndexReport) -> None:
    """Exit 1 when any file failed or was refused (the others are indexed and summarised already)."""
    if report.failed or report.refused:
        raise click.exceptions.Exit(EXIT_SOME_FAILED)


def _embed(app: App) -> dict[str, object] | None:
    """Drain the embedding queue; a missing model or a busy worker is a warning, not a failure."""
    from memex.cli.embed import report_dict, run_embed  # not imported by `memex index --no-embed`
    from memex.embed.model import EmbedderUnavailable
    from memex.embed.worker import EmbedBusy

    try:
        report = run_embed(app)
    except (EmbedBusy, EmbedderUnavailable) as exc:
        app.say("warning", f"vectors not computed: {exc}")
        return None
    return report_dict(report, app.memex().pending_embeds())
