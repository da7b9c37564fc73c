"""`print_line` and `print_table` write what rich would print, byte for byte: straight to the file for a
plain console and printable characters (wide and combining ones too), through rich otherwise (a terminal,
colours, tabs, control characters)."""

from __future__ import annotations

import io

from hypothesis import example, given
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table
from rich.text import Text

from memex.cli.render import TableColumn, fit_last_column, print_line, print_summary, print_table

# Words and runs of spaces (where wrapping decides), wide and combining characters, tabs and control ones.
PIECES = ["abc", "defghij", "x" * 12, "-./", " ", "   ", "…", "·", "é", "e\u0301", "界", "界界界", "👍", "❤\ufe0f"]
PIECES += ["\t", "\x07", "\u200b"]
WORDS = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


def console(file: io.StringIO, width: int, terminal: bool = False) -> Console:
    """A console as `App.out` makes it: strings printed as they are."""
    return Console(file=file, width=width, force_terminal=terminal, highlight=False, markup=False, emoji=False)


def printed(text: str | Text, width: int, terminal: bool = False) -> tuple[str, str]:
    """(rich's output, print_line's) for `text` on a console `width` columns wide."""
    outputs = []
    for write in (Console.print, print_line):
        file = io.StringIO()
        write(console(file, width, terminal), text)
        outputs.append(file.getvalue())
    return outputs[0], outputs[1]


@given(WORDS, st.integers(min_value=1, max_value=40), st.booleans())
def test_print_line_writes_what_rich_prints(words: str, width: int, styled: bool) -> None:
    text: str | Text = Text("   " + words, style="bold") if styled else "   " + words
    if styled:
        text.stylize("yellow", 2, 5)  # type: ignore[union-attr]
    rich, ours = printed(text, width)
    assert ours == rich


def test_print_line_on_a_terminal_keeps_the_styles() -> None:
    rich, ours = printed(Text("a bold word", style="bold"), 20, terminal=True)
    assert ours == rich and "\x1b[1m" in ours


def test_print_line_wraps_a_long_excerpt_as_rich_does() -> None:
    excerpt = "   " + " ".join(f"word{n}" for n in range(60)) + "   " + "x" * 200
    rich, ours = printed(excerpt, 160)
    assert ours == rich and len(ours.splitlines()) > 3


def tabled(columns: list[TableColumn], rows: list[list[str | Text]], width: int, terminal: bool = False) -> str:
    file = io.StringIO()
    print_table(console(file, width, terminal), columns, rows)
    return file.getvalue()


def cell_text(cell: str | Text) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def rich_table(columns: list[TableColumn], rows: list[list[str | Text]], width: int, terminal: bool = False) -> str:
    """The table as `memex sessions list` printed it before, with rich.table.Table (the last column's
    width fitted to the room the others leave, as `print_table` does)."""
    from rich.table import Table

    cells = [[header for header, _, _ in columns], *[[cell_text(cell) for cell in row] for row in rows]]
    table = Table(box=None, header_style="bold")
    for header, least, most in fit_last_column(columns, cells, width):
        table.add_column(header, no_wrap=True, min_width=least, max_width=most, overflow="ellipsis")
    for row in rows:
        table.add_row(*row)
    file = io.StringIO()
    console(file, width, terminal).print(table)
    return file.getvalue()


COLUMNS: list[TableColumn] = [("session", 8, None), ("started", 21, None), ("agent", 6, None)]
COLUMNS += [("project", 12, 24), ("turns", 5, None), ("title", None, None)]
CELLS = st.lists(st.sampled_from(PIECES[:-3]), max_size=12).map("".join)  # printable: laid out by memex


@given(
    st.lists(st.tuples(CELLS, CELLS, CELLS, st.booleans()), min_size=1, max_size=6),
    st.integers(min_value=1, max_value=200),
    st.lists(st.one_of(st.none(), st.integers(min_value=0, max_value=30)), min_size=6, max_size=6),
)
def test_print_table_lays_out_what_rich_does(
    cells: list[tuple[str, str, str, bool]], width: int, least: list[int | None]
) -> None:
    """Any cells (long titles that make the table too wide, wide characters, empty ones), any width, any
    minimum widths of the columns."""
    columns = [(header, least[i] if i != 1 else 21, most) for i, (header, _, most) in enumerate(COLUMNS)]
    rows: list[list[str | Text]] = []
    for project, title, agent, styled in cells:
        short = Text("5e55e55e", style="cyan")
        name = Text(title, style="bold") if styled else title
        rows.append([short, "2026-05-03 02:20 CEST", agent, project, "12", name])
    assert tabled(columns, rows, width) == rich_table(columns, rows, width)


def test_print_table_cuts_a_long_project_and_title_as_rich_does() -> None:
    rows: list[list[str | Text]] = [
        [
            Text("2969822b", style="cyan"),
            "2026-05-03 00:20 UTC",
            "claude",
            "Personal_AI_Infrastructure",
            "2",
            "T " * 90,
        ],
        [Text("d3d4e0f8", style="cyan"), "2025-12-17 02:09 UTC", "codex", "slay", "—", "界" * 70],
    ]
    for width in (160, 80, 30):
        ours = tabled(COLUMNS, rows, width)
        assert ours == rich_table(COLUMNS, rows, width)
        assert all(len(line) <= width for line in ours.splitlines())
        assert "…" in ours or width < 40  # narrower, rich leaves out the columns that no longer fit
    styled = tabled(COLUMNS, rows, 80, terminal=True)  # a terminal gets rich's styled table
    assert "\x1b[" in styled and styled == rich_table(COLUMNS, rows, 80, terminal=True)
    rows[1][5] = "a title\nover two lines\twith a tab"  # rich's layout, left to rich
    assert tabled(COLUMNS, rows, 80) == rich_table(COLUMNS, rows, 80)


CELL = st.lists(st.sampled_from(PIECES), max_size=6).map("".join)


@given(st.lists(st.tuples(CELL, CELL), max_size=6), CELL, st.integers(min_value=1, max_value=60), st.booleans())
@example(rows=[("", "abc")], title="abc ", width=7, terminal=False)  # rich centres the title without its spaces
def test_print_summary_writes_what_rich_prints(
    rows: list[tuple[str, str]], title: str, width: int, terminal: bool
) -> None:
    outputs = []
    for plain in (False, True):
        file = io.StringIO()
        if plain:
            print_summary(console(file, width, terminal), title, rows)
        else:
            table = Table(title=title, show_header=False, box=None)
            table.add_column(style="bold")
            table.add_column(justify="right")
            for label, value in rows:
                table.add_row(label, value)
            console(file, width, terminal).print(table)
        outputs.append(file.getvalue())
    assert outputs[1] == outputs[0]


def test_print_summary_lays_out_the_index_summary_itself() -> None:
    rows = [("files", "20000"), ("changed", "0"), ("bad lines skipped", "0"), ("seconds", "0.048")]
    file = io.StringIO()
    print_summary(console(file, 160), "memex index", rows)
    assert file.getvalue().splitlines() == [
        "       memex index        ",
        " files              20000 ",
        " changed                0 ",
        " bad lines skipped      0 ",
        " seconds            0.048 ",
    ]
