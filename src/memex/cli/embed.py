"""`memex embed`: drain the embedding queue (resumable; safe to interrupt at any moment)."""

from __future__ import annotations

import contextlib

import click

from memex.cli.app import App, count_type
from memex.cli.plain import Bar
from memex.cli.render import count_progress, print_summary
from memex.embed.worker import DrainReport, EmbedBusy


def run_embed(app: App, max_jobs: int | None = None) -> DrainReport:
    """Drain the queue with a progress bar on the terminal; the report of what was done. Stopped by
    Ctrl-C, the command says how many vectors were stored and how many wait (`App.on_interrupt`)."""
    memex = app.memex(readonly=False)
    stored = [0]  # vectors in the batches stored so far (the batch in hand is not)

    def interrupted() -> str:
        return (
            f"{stored[0]} vector{'' if stored[0] == 1 else 's'} computed and stored, {memex.pending_embeds()} "
            "texts still queued; run "
            "`memex embed` to continue (search works meanwhile)"
        )

    app.on_interrupt = interrupted
    with contextlib.ExitStack() as stack:
        bars: list[Bar] = []

        def start(total: int) -> None:
            bars.append(stack.enter_context(count_progress(app.err, total, "Embedding")))

        def advance(report: DrainReport, jobs: int) -> None:
            stored[0] = report.embedded
            rate = f"{report.per_second:.1f}/s" if report.embedded else ""
            bars[0].update(bars[0].task_ids[0], advance=jobs, current=rate)

        return memex.embed(max_jobs, on_start=start, on_batch=advance)


def drain_quietly(app: App, max_jobs: int | None = None) -> DrainReport:
    """Drain the queue without output (a background worker)."""
    return app.memex(readonly=False).embed(max_jobs)


def print_report(app: App, report: DrainReport, waiting: int) -> None:
    rows = [
        (label, str(value))
        for label, value in [
            ("embedded", report.embedded),
            *((f"  {level}", n) for level, n in report.by_level.items()),
            ("already embedded", report.reused),
            ("sessions taken from their turns", report.from_turns),
            ("failed (will retry)", report.failed),
            ("still queued", waiting),
            ("per second", f"{report.per_second:.1f}"),
            ("seconds", f"{report.seconds:.1f}"),
        ]
    ]
    print_summary(app.out, "memex embed", rows)


def report_dict(report: DrainReport, waiting: int) -> dict[str, object]:
    return {
        "embedded": report.embedded,
        "by_level": report.by_level,
        "reused": report.reused,
        "from_turns": report.from_turns,
        "failed": report.failed,
        "queued": waiting,
        "seconds": round(report.seconds, 3),
    }


@click.command("embed")
@click.option("--limit", "max_jobs", type=count_type(), help="Stop after this many jobs.")
@click.option("--retry-errors", is_flag=True, help="First give the jobs that failed for good a fresh start.")
@click.option("--quiet", is_flag=True, help="Print nothing (for background runs); exit quietly if a worker runs.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.pass_obj
def embed_command(app: App, max_jobs: int | None, retry_errors: bool, quiet: bool, as_json: bool) -> None:
    """Compute the vectors semantic search needs (turns first, then sessions, then chunks).

    `memex index` does this at its end; run it alone to resume an interrupted run. Safe to stop at any
    moment: the next run continues where this one stopped.
    """
    if retry_errors:
        app.err.print(f"{app.memex(readonly=False).retry_embed_errors()} failed jobs queued again.")
    if quiet:
        with contextlib.suppress(EmbedBusy):
            drain_quietly(app, max_jobs)
        return
    report = run_embed(app, max_jobs)
    waiting = app.memex().pending_embeds()
    if as_json:
        app.emit_json(report_dict(report, waiting))
    else:
        print_report(app, report, waiting)
