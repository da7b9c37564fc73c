"""What `memex index` does once its command line is read: shared by the click command (`memex.cli.index`)
and the lean run that writes to no terminal (`memex.cli.lean`). Neither click nor rich is imported here:
what prints does, through the app."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from memex.collector import Paused
from memex.errors import UserError
from memex.ingest.live import ask_index, walked
from memex.ingest.report import IDLE

if TYPE_CHECKING:
    from rich.console import Console

    from memex.api import Memex
    from memex.cli.app import App
    from memex.cli.plain import Bar
    from memex.config import Config
    from memex.ingest.indexer import IndexReport
    from memex.ingest.report import FileReport
    from memex.sources.model import Transcript

# `memex index` exit statuses (README, "Use").
EXIT_SOME_FAILED = 1
# Unchanged files move the progress bar in steps of this many bytes (one update per file costs more than
# deciding that the file is unchanged).
PROGRESS_STEP_BYTES = 4 * 1_048_576
# The last run's discovery and report, kept to the process's end: `memex index` ends with `os._exit`
# (`memex.cli.entry.exit_at_once`), which frees nothing, while freeing their tens of thousands of rows and
# paths one by one on the run's return cost ~5 ms at 20,000 transcripts.
_last_run: list[object] = []


class IndexApp(Protocol):
    """What an index run needs of its app (`memex.cli.app.App`, or `memex.cli.lean.LeanApp`)."""

    @property
    def config(self) -> Config: ...

    @property
    def err(self) -> Console: ...

    def memex(self, readonly: bool = True) -> Memex: ...

    def say(self, label: str, message: str) -> None: ...

    def emit_json(self, value: Any) -> None: ...

    def summary(self, title: str, rows: Sequence[tuple[str, str]]) -> None: ...

    def byte_progress(self, description: str) -> AbstractContextManager[Bar]: ...


def run_index(
    app: IndexApp,
    paths: Sequence[Path] = (),
    agents: Sequence[str] = (),
    everything: bool = False,
    workers: int | None = None,
    no_embed: bool = False,
    check_archive: bool = False,
    as_json: bool = False,
) -> int:
    """Index transcripts (`memex index`'s options) and print what was done; returns the exit status."""
    if everything and (paths or agents):
        raise UserError("--all indexes every agent's default folders: give it no PATHS and no --agent")
    # Over the default folders, the warm server's live tree answers without a walk (`memex.ingest.live`);
    # this process then never opens the store.
    answer = None if paths or check_archive else ask_index(app.config, agents)
    if answer is not None:
        for note in answer.get("notes") or ():
            app.say("note", str(note))
        rows: dict[str, Any] = answer["report"]
        nothing, where = bool(answer.get("nothing")), str(answer.get("where") or "")
    else:
        from memex.computers import rename_notes

        memex = app.memex(readonly=False)
        for note in rename_notes(memex.follow_rename(), app.config.computer):
            app.say("note", note)
        if check_archive and not app.config.archive_enabled:
            app.say("note", "the archive is turned off (archive_enabled = 0): --check-archive has no copies to look at")
        report, nothing, where = _index_here(app, memex, paths, agents, workers, check_archive)
        rows = report.to_json()
        if not paths:
            walked(app.config)
    for warning in rows["warnings"]:
        app.say("warning", warning)
    _print_failures(app, rows)
    embedded = None if no_embed or not app.config.index_embeds else _embed(app)
    status = EXIT_SOME_FAILED if rows["failed"] or rows["refused"] else 0
    if as_json:
        app.emit_json({**rows, "warm": answer is not None, "embed": embedded})
        return status
    if nothing:
        app.err.print(f"No transcripts found under {where}.")
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
    if rows["tool_output_streams"]:  # once, after the upgrade that made tool output searchable
        summary.append(("tool output read from earlier files", str(rows["tool_output_streams"])))
    if embedded is not None:
        summary.append(("vectors computed", str(embedded["embedded"])))
        summary.append(("still to embed", str(embedded["queued"])))
    app.summary("memex index", summary)
    return status


def _index_here(
    app: IndexApp,
    memex: Memex,
    paths: Sequence[Path],
    agents: Sequence[str],
    workers: int | None,
    check_archive: bool,
) -> tuple[IndexReport, bool, str]:
    """Walk and index in this process, with a progress bar; the report, whether nothing at all was found,
    and where it was looked for."""
    # Discovery makes tens of thousands of objects that hold no cycle and live till the end (the stored
    # streams' rows, the paths found unchanged): the collector, which ran ~30 times over them (~5 ms at
    # 20,000 transcripts), is off meanwhile, and they are frozen once made, with everything before them
    # (the imports: the entry point froze them already), so the collections the run's reading triggers
    # never walk them.
    with Paused():
        found = memex.discover(paths, agents, check_archive=check_archive)
    with app.byte_progress("Indexing") as progress:
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
    _last_run[:] = [found, report]
    return report, found.found_nothing(report), found.where


def _print_failures(app: IndexApp, rows: dict[str, Any]) -> None:
    """Name every file that was not indexed, and why, on stderr (from `IndexReport.to_json()`)."""
    if rows["failed"]:
        from rich.text import Text

        count = len(rows["failed"])
        app.err.print(Text(f"{count} file{'s' if count != 1 else ''} could not be indexed:", style="red"))
        for item in rows["failed"]:
            app.err.print(Text(f"  {item['path']}: {item['reason']}"), soft_wrap=True)
    for item in rows["refused"]:
        app.say("warning", f"{item['path']}: {item['reason']}; not indexed")


def _embed(app: IndexApp) -> dict[str, object] | None:
    """Drain the embedding queue; a missing model or a busy worker is a warning, not a failure."""
    from memex.cli.embed import report_dict, run_embed  # not imported by `memex index --no-embed`
    from memex.embed.model import EmbedderUnavailable
    from memex.embed.worker import EmbedBusy

    try:
        report = run_embed(cast("App", app))  # the lean run leaves embedding to the click command
    except (EmbedBusy, EmbedderUnavailable) as exc:
        app.say("warning", f"vectors not computed: {exc}")
        return None
    return report_dict(report, app.memex().pending_embeds())
