"""`memex index`: ingest transcripts incrementally."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from memex.cli.app import App
from memex.cli.embed import report_dict, run_embed
from memex.cli.render import byte_progress
from memex.embed.model import EmbedderUnavailable
from memex.embed.worker import EmbedBusy, pending_count
from memex.errors import UserError
from memex.ingest.indexer import default_roots, discover, index_transcripts
from memex.sources import ADAPTERS


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
    """
    if everything and (paths or agents):
        raise UserError("--all indexes every agent's default folders: give it no PATHS and no --agent")
    chosen = list(agents) or sorted(ADAPTERS)
    if paths:
        roots = {agent: [p.resolve() for p in paths] for agent in chosen}
    else:
        roots = default_roots(app.config, chosen)
    transcripts = discover(roots)
    conn = app.db()
    total = sum(_size(t.path) for t in transcripts)
    with byte_progress(app.err, total, "Indexing") as progress:
        task = progress.task_ids[0]

        def advance(transcript, _report) -> None:  # type: ignore[no-untyped-def]
            progress.update(task, advance=_size(transcript.path), current=f"{transcript.agent} {transcript.path.name}")

        report = index_transcripts(
            conn, app.config, transcripts, on_file=advance, workers=workers or app.config.index_workers
        )
    for warning in report.warnings:
        app.err.print(f"[yellow]warning:[/] {warning}", markup=True, highlight=False)
    embedded = None if no_embed or not app.config.index_embeds else _embed(app)
    if as_json:
        app.emit_json({**report.as_dict(), "embed": embedded})
        return
    if not transcripts:
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
        ("mirrors written", "mirrors"),
        ("seconds", "seconds"),
    ]:
        table.add_row(label, str(rows[key]))
    if embedded is not None:
        table.add_row("vectors computed", str(embedded["embedded"]))
        table.add_row("still to embed", str(embedded["queued"]))
    app.out.print(table)


def _embed(app: App) -> dict[str, object] | None:
    """Drain the embedding queue; a missing model or a busy worker is a warning, not a failure."""
    try:
        report = run_embed(app)
    except (EmbedBusy, EmbedderUnavailable) as exc:
        app.err.print(f"[yellow]warning:[/] vectors not computed: {exc}", markup=True, highlight=False)
        return None
    except KeyboardInterrupt:
        app.err.print("Embedding interrupted: `memex embed` continues where it stopped.")
        return None
    return report_dict(report, pending_count(app.db()))


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
