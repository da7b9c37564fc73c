"""`memex index`: ingest transcripts incrementally (the command line; the run is `memex.cli.indexing`)."""

from __future__ import annotations

from pathlib import Path

import click

from memex.cli.app import App, count_type
from memex.cli.indexing import run_index
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
    status = run_index(app, paths, agents, everything, workers, no_embed, check_archive, as_json)
    if status:
        raise click.exceptions.Exit(status)
