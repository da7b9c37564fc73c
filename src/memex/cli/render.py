"""Shared terminal rendering: dates, session labels, plain lines, and progress bars."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from itertools import pairwise
from typing import TYPE_CHECKING

from rich.text import Text

from memex.textutil import display_time, plain_title, shorten

# Progress bars are imported by the commands that draw them (rich.progress costs a read command's start).
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, ProgressColumn, TaskID
    from rich.text import TextType


def short_time(timestamp: str | None, utc: bool = False) -> str:
    """A stored timestamp as shown: local time with its zone, or UTC (memex.textutil.display_time)."""
    return display_time(timestamp, utc)


def title_text(title: str | None, limit: int | None = None, empty: str = "—") -> str:
    """A session's title as plain text on one line (Markdown dropped: titles stored before memex did so at
    ingest, or received from another computer, may hold it), cut to `limit` characters."""
    plain = plain_title(title) if title else ""
    if not plain:
        return empty
    return shorten(plain, limit) if limit else plain


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


def print_line(console: Console, text: TextType = "") -> None:
    """`console.print(text)`, written straight to its file when rich would print the text's characters
    unchanged: no styles (a pipe or a file: what an agent reads) and printable characters, wrapped at the
    console's width where rich wraps them. Rich's render costs a quick command's start as much as its search."""
    plain = text.plain if isinstance(text, Text) else text
    settings = (text.justify, text.overflow, text.no_wrap, text.end) if isinstance(text, Text) else None
    styled = console.is_terminal or console.color_system is not None
    # Tabs and control characters: rich expands or drops them; a Text's own settings change its layout.
    if styled or not plain.isprintable() or settings not in (None, (None, None, None, "\n")):
        console.print(text)
    else:
        console.file.write("\n".join(_wrapped(plain, console.width)) + "\n")


def _wrapped(plain: str, width: int) -> list[str]:
    """A line of printable characters cut as `rich.text.Text.wrap` cuts it: words kept whole, a longer one
    folded, whitespace beyond the width dropped, and each line cut to the width (in terminal cells)."""
    from rich.cells import cell_len, set_cell_size

    if plain.isascii() and len(plain) <= width:  # most lines
        return [plain]
    lines = [plain]
    if cell_len(plain) > width:
        from rich._wrap import divide_line

        offsets = [0, *divide_line(plain, width, fold=True), len(plain)]
        lines = [plain[start:end] for start, end in pairwise(offsets)]
    cut = []
    for line in lines:
        if len(line) > width:  # `Text.rstrip_end` (counts characters)
            spaces = len(line) - len(line.rstrip())
            line = line[: len(line) - min(spaces, len(line) - width)]
        cut.append(set_cell_size(line, width) if cell_len(line) > width else line)  # `Text.truncate`
    return cut


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


@contextmanager
def step_progress(console: Console) -> Iterator[Callable[[str, int, int | None], None]]:
    """A callback `(step, done, total)` that shows the current step as a bar on the console (a terminal only,
    from the first call): a pulsing bar while the step cannot be counted (`total` None), then n/total."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    with progress:
        current: dict[str, TaskID] = {}  # the step shown, and its task

        def update(step: str, done: int, total: int | None) -> None:
            if step not in current:  # a new step: its own bar (and clock)
                for task in current.values():
                    progress.remove_task(task)
                current.clear()
                current[step] = progress.add_task(step, total=total, completed=done)
                progress.refresh()  # shown now, not at the next tick
            else:
                progress.update(current[step], completed=done, total=total)

        yield update
