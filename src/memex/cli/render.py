"""Shared terminal rendering: dates, session labels, plain lines, and progress bars."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from itertools import pairwise
from typing import TYPE_CHECKING

from rich.text import Text, TextType

from memex.cli.plain import Bar, Hidden, cell_width, summary_lines
from memex.textutil import display_time, plain_title, shorten

# Progress bars are imported by the commands that draw them (rich.progress costs a read command's start).
if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import TaskID


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
    from rich.cells import set_cell_size

    if plain.isascii() and len(plain) <= width:  # most lines
        return [plain]
    lines = [plain]
    if cell_width(plain) > width:
        from rich._wrap import divide_line

        offsets = [0, *divide_line(plain, width, fold=True), len(plain)]
        lines = [plain[start:end] for start, end in pairwise(offsets)]
    cut = []
    for line in lines:
        if len(line) > width:  # `Text.rstrip_end` (counts characters)
            spaces = len(line) - len(line.rstrip())
            line = line[: len(line) - min(spaces, len(line) - width)]
        cut.append(set_cell_size(line, width) if cell_width(line) > width else line)  # `Text.truncate`
    return cut


def shorten_to_cells(text: str, width: int) -> str:
    """`text` cut (as `textutil.shorten` cuts) to at most `width` terminal cells: a wide character (CJK, most
    emoji) takes two."""
    from memex.textutil import shorten

    limit = width
    cut = shorten(text, limit)
    while limit > 1 and cell_width(cut) > width:
        limit -= max(1, (cell_width(cut) - width) // 2)
        cut = shorten(text, limit)
    return cut


# A column of `print_table`: its header, and its width bounds (None: none) not counting the cell padding.
TableColumn = tuple[str, int | None, int | None]


def print_table(console: Console, columns: Sequence[TableColumn], rows: Sequence[Sequence[TextType]]) -> None:
    """A table of one-line cells as `rich.table.Table(box=None, header_style="bold")` prints it on a console
    that prints strings as they are (`App.out`): a space either side of every cell, a cell too wide for its
    column cut with an ellipsis. Without styles (a pipe, a file), with printable cells, its lines are laid out
    here and written straight: rich measures and renders every cell, a sixth of `memex sessions list`.

    The last column (a title) gives up its width first (`fit_last_column`)."""
    cells = [[header for header, _, _ in columns], *[[_plain(cell) for cell in row] for row in rows]]
    columns = fit_last_column(columns, cells, console.width)
    styled = console.is_terminal or console.color_system is not None
    printable = all(cell.isprintable() for row in cells for cell in row)
    lines = None if styled or not printable else _table_lines(cells, columns, console.width)
    if lines is not None:
        console.file.write("".join(line + "\n" for line in lines))
        return
    from rich.table import Table

    table = Table(box=None, header_style="bold")
    for header, least, most in columns:
        table.add_column(header, no_wrap=True, min_width=least, max_width=most, overflow="ellipsis")
    for row in rows:
        table.add_row(*row)
    console.print(table)


def print_summary(console: Console, title: str, rows: Sequence[tuple[str, str]]) -> None:
    """A command's summary: a title over labels (bold) and values (right-aligned), as
    `rich.table.Table(title=title, show_header=False, box=None)` prints it on a console that prints strings
    as they are. Laid out here and written straight when rich would print the characters unchanged (as
    `print_table`, `memex.cli.plain.summary_lines`)."""
    styled = console.is_terminal or console.color_system is not None
    lines = None if styled else summary_lines(title, rows, console.width)
    if lines is not None:
        console.file.write("".join(line + "\n" for line in lines))
        return
    from rich.table import Table

    table = Table(title=title, show_header=False, box=None)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for label, value in rows:
        table.add_row(label, value)
    console.print(table)


LAST_COLUMN_LEAST = 10  # below this the last column stops giving way: rich narrows every column alike
LAST_COLUMN_WANTED = 20  # the columns with a maximum (a project) give way to leave the last this much


def fit_last_column(columns: Sequence[TableColumn], cells: Sequence[Sequence[str]], width: int) -> list[TableColumn]:
    """`columns` with the last one's maximum width set to the room the others leave on a console `width`
    cells wide (at least `LAST_COLUMN_LEAST`); to leave it `LAST_COLUMN_WANTED`, the columns with a maximum
    (a project) give way first, down to their minimum. Rich narrows every column of a table too wide alike:
    a long title cut `opencode` to `openc…` and, on a terminal of 80 to 140 columns, left the agent and
    turns columns out whole."""
    fitted = list(columns)
    if not fitted or not cells:
        return fitted
    widths = []
    for index, (_, least, most) in enumerate(fitted[:-1]):
        widest = max(cell_width(row[index]) for row in cells)
        widest = widest if least is None else max(widest, least)
        widths.append(widest if most is None else min(widest, most))
    header, least, most = fitted[-1]
    short = LAST_COLUMN_WANTED - (width - sum(w + 2 for w in widths) - 2)  # a space either side of each
    for index, (name, low, high) in enumerate(fitted[:-1]):
        if short > 0 and high is not None and widths[index] > (low or 1):
            given = min(short, widths[index] - (low or 1))
            widths[index] -= given
            short -= given
            fitted[index] = (name, low, widths[index])
    room = max(width - sum(w + 2 for w in widths) - 2, least or 0, LAST_COLUMN_LEAST)
    fitted[-1] = (header, least, room if most is None else min(most, room))
    return fitted


def _plain(cell: TextType) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _table_lines(cells: list[list[str]], columns: Sequence[TableColumn], width: int) -> list[str] | None:
    """The lines of `print_table`'s table on a console `width` cells wide, laid out as rich lays it out
    (`Table._calculate_column_widths`: each column as wide as its widest cell within its bounds; when the
    table is too wide, every column narrowed alike, then measured again in its narrower width). None when
    a column ends narrower than its padding and one cell (rich's layout is then left to rich)."""
    from rich.cells import set_cell_size

    lengths = [[cell_width(cell) for cell in row] for row in cells]

    def measured(index: int, room: int) -> int:  # rich's Measurement of a padded column: its maximum
        if room < 1:
            return 0
        widest = min(max(room if room < 3 else min(min(row[index], room) + 2, room) for row in lengths), room)
        _, least, most = columns[index]
        widest = widest if least is None else max(widest, least + 2)
        return widest if most is None else min(widest, most + 2)

    widths = [measured(index, width) or 1 for index in range(len(columns))]
    if sum(widths) > width:
        narrower = _reduce_evenly(sum(widths) - width, widths)
        widths = [measured(index, room) for index, room in enumerate(narrower)]
    if min(widths) < 3:
        return None
    lines = []
    for row, row_lengths in zip(cells, lengths, strict=True):
        line = ""
        for cell, length, room in zip(row, row_lengths, widths, strict=True):
            inner = room - 2
            shown = set_cell_size(cell, inner - 1) + "…" if length > inner else cell + " " * (inner - length)
            line += f" {shown} "
        lines.append(set_cell_size(line, width) if cell_width(line) > width else line)
    return lines


def _reduce_evenly(excess: int, widths: list[int]) -> list[int]:
    """`rich._ratio.ratio_reduce` with equal ratios: `excess` cells taken from the columns in turn."""
    result = []
    remaining, columns_left = excess, sum(1 for width in widths if width)
    for width in widths:
        if width and columns_left > 0:
            taken = min(width, round(remaining / columns_left))
            result.append(width - taken)
            remaining -= taken
            columns_left -= 1
        else:
            result.append(width)
    return result


@contextmanager
def _progress(console: Console, total: int, description: str, counter: str) -> Iterator[Bar]:
    """A progress bar on the console (none when it is not a terminal), with a `current` field; `counter`
    names the rich.progress column that counts."""
    if not console.is_terminal:
        yield Hidden()
        return
    from rich import progress as bars

    progress = bars.Progress(
        bars.TextColumn("[bold]{task.description}"),
        bars.BarColumn(),
        getattr(bars, counter)(),
        bars.TimeRemainingColumn(),
        bars.TextColumn("{task.fields[current]}", style="dim", markup=False),  # a file name, as it is
        console=console,
        transient=True,
    )
    with progress:
        progress.add_task(description, total=total, current="")
        yield progress


def byte_progress(console: Console, total: int, description: str) -> AbstractContextManager[Bar]:
    """A progress bar over bytes."""
    return _progress(console, total, description, "DownloadColumn")


def count_progress(console: Console, total: int, description: str) -> AbstractContextManager[Bar]:
    """A progress bar over items (n/total, time left)."""
    return _progress(console, total, description, "MofNCompleteColumn")


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
