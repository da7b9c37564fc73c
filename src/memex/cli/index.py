"""`memex index`: ingest transcripts incrementally."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import click
from rich.table import Table
from rich.text import Text

from memex.archive.reader import archived_sources
from memex.cli.app import App
from memex.cli.embed import report_dict, run_embed
from memex.cli.render import byte_progress
from memex.computers import follow_rename
from memex.embed.model import EmbedderUnavailable
from memex.embed.worker import EmbedBusy, pending_count
from memex.errors import StoreError, UserError
from memex.ingest.indexer import IndexReport, default_roots, discover, index_transcripts
from memex.sources import ADAPTERS
from memex.sources.files import Skipped, safe_resolve
from memex.sources.model import Transcript

# `memex index` exit statuses (README, "Use").
EXIT_SOME_FAILED = 1


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
    help="Backfill every agent's default folders (configurable: claude_dir, codex_dir, gemini_dir).",
)
@click.option(
    "--workers", type=click.IntRange(1), help="Processes parsing transcripts in a backfill (default: index_workers)."
)
@click.option("--no-embed", is_flag=True, help="Only index; leave the vectors to `memex embed` (or the daemon).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_obj
def index_command(
    app: App,
    paths: tuple[Path, ...],
    agents: tuple[str, ...],
    everything: bool,
    workers: int | None,
    no_embed: bool,
    as_json: bool,
) -> None:
    """Index transcripts: the agents' default folders, or the files and folders given as PATHS.

    Re-running reads only what changed; an interrupted run resumes where it stopped. The embedding queue
    is drained at the end (sessions first), unless --no-embed.

    A file that cannot be read (no permission, not a regular file, a link loop) or parsed is reported
    with its reason and every other file is indexed; a file given as PATH that is no agent's transcript
    is refused. Exit status: 0 every file was indexed; 1 some files failed or were refused (listed on
    stderr, and under "failed" and "refused" with --json), the others were indexed; 2 a usage error.
    """
    if everything and (paths or agents):
        raise UserError("--all indexes every agent's default folders: give it no PATHS and no --agent")
    chosen = list(agents) or sorted(ADAPTERS)
    if paths:
        roots = {agent: [safe_resolve(p) for p in paths] for agent in chosen}
    else:
        roots = default_roots(app.config, chosen)
    skipped: list[Skipped] = []
    transcripts = discover(roots, skipped)
    refused = _refused(paths, transcripts, skipped, chosen)
    conn = app.db()
    for old, moved in follow_rename(conn, app.config).items():
        app.say("note", f"this computer was {old!r}, now {app.config.computer!r}: {moved} sessions follow the new name")
    # Without PATHS: also the transcripts the agents deleted that the archive must parse again (a rebuilt store).
    restoring = archived_sources(conn, app.config, chosen, transcripts) if not paths else contextlib.nullcontext([])
    with restoring as restored:
        transcripts = [*transcripts, *restored]
        report = _index(app, conn, transcripts, workers, skipped)
    report.refused.extend(refused)
    for warning in report.warnings:
        app.say("warning", warning)
    _print_failures(app, report)
    embedded = None if no_embed or not app.config.index_embeds else _embed(app)
    if as_json:
        app.emit_json({**report.as_dict(), "embed": embedded})
        _exit_status(report)
        return
    if not transcripts and not report.failed and not report.refused:
        where = ", ".join(str(p) for ps in roots.values() for p in ps)
        app.err.print(f"No transcripts found under {where}.")
    table = Table(title="memex index", show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(justify="right")
    rows = report.as_dict()
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
    ]:
        table.add_row(label, str(rows[key]))
    if embedded is not None:
        table.add_row("vectors computed", str(embedded["embedded"]))
        table.add_row("still to embed", str(embedded["queued"]))
    app.out.print(table)
    _exit_status(report)


def _index(
    app: App, conn: sqlite3.Connection, transcripts: list[Transcript], workers: int | None, skipped: list[Skipped]
) -> IndexReport:
    """Index `transcripts` with a progress bar of the bytes read."""
    total = sum(_size(t.read_path) for t in transcripts)
    with byte_progress(app.err, total, "Indexing") as progress:
        task = progress.task_ids[0]

        def advance(transcript, _report) -> None:  # type: ignore[no-untyped-def]
            progress.update(
                task, advance=_size(transcript.read_path), current=f"{transcript.agent} {transcript.path.name}"
            )

        try:
            return index_transcripts(
                conn,
                app.config,
                transcripts,
                on_file=advance,
                workers=workers or app.config.index_workers,
                skipped=skipped,
            )
        except sqlite3.OperationalError as exc:  # locked past busy_timeout_ms, full, read-only
            raise StoreError(
                f"cannot write to {app.config.db_path}: {exc} (the files indexed so far are kept; run again)"
            ) from None


def _refused(
    paths: tuple[Path, ...], transcripts: list[Transcript], skipped: list[Skipped], agents: list[str]
) -> list[Skipped]:
    """The files given by hand that no agent claimed (and that were not passed over as unreadable)."""
    claimed = {safe_resolve(t.path) for t in transcripts}
    claimed |= {safe_resolve(alias) for t in transcripts for alias in t.aliases}
    claimed |= {safe_resolve(s.path) for s in skipped}
    reason = f"not a transcript of {' or '.join(agents)}"
    return [Skipped(p, reason) for p in paths if not p.is_dir() and safe_resolve(p) not in claimed]


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
    try:
        report = run_embed(app)
    except (EmbedBusy, EmbedderUnavailable) as exc:
        app.say("warning", f"vectors not computed: {exc}")
        return None
    return report_dict(report, pending_count(app.db()))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
