"""Shared terminal rendering: dates, session labels, and progress bars."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from rich.text import Text

# Progress bars are imported by the commands that draw them (rich.progress costs a read command's start).
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, ProgressColumn


def short_time(timestamp: str | None) -> str:
    """`2026-05-03 00:20` from a stored timestamp (UTC)."""
    if not timestamp:
        return "—"
    return timestamp[:16].replace("T", " ")


def project_name(project_dir: str | None) -> str:
    """The last folder of a project path."""
    if not project_dir:
        return "—"
    return project_dir.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1] or project_dir


def subagent_label(agent_id: str | None) -> str:
    return f"[Subagent: {agent_id}]" if agent_id else ""


def labelled(label: str, message: str, style: str = "yellow") -> Text:
    """`label: message` with the label styled and the message as plain text (never read as markup)."""
    text = Text(f"{label}:", style=style)
    text.append(" " + message)
    return text


def styled(value: str, style: str) -> Text:
    """A table cell or a fragment in one style, its text taken literally."""
    return Text(value, style=style)


@contextmanager
def _progress(console: Console, total: int, description: str, counter: ProgressColumn) -> Iterator[Progress]:
    """A progress bar on the console (hidden when it is not a terminal), with a `current` field."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        counter,
        TimeRemainingColumn(),
        TextColumn("{task.fields[current]}", style="dim", markup=False),  # a file name, as it is
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    with progress:
        progress.add_task(description, total=total, current="")
        yield progress


def byte_progress(console: Console, total: int, description: str) -> AbstractContextManager[Progress]:
    """A progress bar over bytes."""
    from rich.progress import DownloadColumn

    return _progress(console, total, description, DownloadColumn())


def count_progress(console: Console, total: int, description: str) -> AbstractContextManager[Progress]:
    """A progress bar over items (n/total, time left)."""
    from rich.progress import MofNCompleteColumn

    return _progress(console, total, description, MofNCompleteColumn())
