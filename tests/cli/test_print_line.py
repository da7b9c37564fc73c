"""`print_line` writes what rich would print, byte for byte: straight to the file for a plain console and
printable characters (wide and combining ones too), through rich otherwise (a terminal, colours, tabs,
control characters)."""

from __future__ import annotations

import io

from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text

from memex.cli.render import print_line

# Words and runs of spaces (where wrapping decides), wide and combining characters, tabs and control ones.
PIECES = ["abc", "defghij", "x" * 12, "-./", " ", "   ", "…", "·", "é", "e\u0301", "界", "界界界"]
PIECES += ["\t", "\x07", "\u200b"]
WORDS = st.lists(st.sampled_from(PIECES), max_size=30).map("".join)


def printed(text: str | Text, width: int, terminal: bool = False) -> tuple[str, str]:
    """(rich's output, print_line's) for `text` on a console `width` columns wide."""
    outputs = []
    for write in (Console.print, print_line):
        file = io.StringIO()
        console = Console(file=file, width=width, force_terminal=terminal, highlight=False, markup=False, emoji=False)
        write(console, text)
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
