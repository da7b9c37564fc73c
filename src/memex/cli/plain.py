"""Output that needs neither rich nor click: what a command prints to a pipe or a file, as rich would.

`memex index` writing to no terminal (a hook, a script, cron) prints only these (`memex.cli.lean`), so
it never imports rich; `memex.cli.render` uses them too, and falls back to rich for the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TextIO

import orjson

# Lines are not wrapped at 80 columns when output goes to a pipe or a file.
PIPE_WIDTH = 160


class Bar(Protocol):
    """What a command does with a progress bar (`rich.progress.Progress`, or `Hidden` off a terminal)."""

    @property
    def task_ids(self) -> Sequence[Any]: ...

    def update(
        self, task_id: Any, *, total: float | None = None, advance: float | None = None, **fields: Any
    ) -> None: ...


class Hidden:
    """The bar of a console that is not a terminal: nothing is drawn, so rich.progress is not imported
    (7 ms of a `memex index` run by a hook or a script)."""

    task_ids: Sequence[Any] = (0,)

    def update(self, task_id: Any, *, total: float | None = None, advance: float | None = None, **fields: Any) -> None:
        pass


def cell_width(text: str) -> int:
    """`rich.cells.cell_len` of printable text, each distinct wide or narrow character measured once (rich
    measures every character of a text holding one, in Python: an excerpt's `…` made it a quarter of `memex
    search`'s output)."""
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    if "\u200d" in text or "\ufe0f" in text:  # joined graphemes: rich's own count
        return cell_len(text)
    return len(text) + sum((cell_len(char) - 1) * text.count(char) for char in set(text) if not char.isascii())


def summary_lines(title: str, rows: Sequence[tuple[str, str]], width: int) -> list[str] | None:
    """A command's summary (a title over labels and right-aligned values) as
    `rich.table.Table(title=title, show_header=False, box=None)` prints it without styles on a console
    `width` wide; None when rich would print it otherwise (a cell or title rich would change, too wide)."""
    # (rich centres a title without its outer spaces: such a title, never memex's own, is left to rich)
    plain_title = title.isprintable() and title == title.strip()
    # (and a cell with outer spaces, which rich trims before it aligns: memex's summaries have none)
    if (
        not rows
        or not plain_title
        or not all(cell.isprintable() and cell == cell.strip() for row in rows for cell in row)
    ):
        return None
    labels, values = max(cell_width(label) for label, _ in rows), max(cell_width(value) for _, value in rows)
    inner = labels + values + 4  # a space either side of every cell
    if inner > width or cell_width(title) > inner:
        return None
    left = (inner - cell_width(title)) // 2
    lines = [" " * left + title + " " * (inner - cell_width(title) - left)] if title else []
    for label, value in rows:
        lines.append(f" {label}{' ' * (labels - cell_width(label))}  {' ' * (values - cell_width(value))}{value} ")
    return lines


def write_json(stream: TextIO, value: Any) -> None:
    """Write `value` as indented JSON on `stream` (the stable contract for scripts and agents)."""
    data = orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS, default=str)
    stream.write(data.decode() + "\n")
