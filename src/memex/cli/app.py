"""The runtime a command works with: configuration, database connections, and output streams."""

from __future__ import annotations

import contextlib
import io
import os
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, TextIO

import click
from rich.console import Console

from memex.api import Memex
from memex.cli.pager import page, pager_command, terminal_lines
from memex.cli.plain import PIPE_WIDTH, Bar, write_json
from memex.cli.render import byte_progress, labelled, print_summary, short_time
from memex.config import Config, load_config
from memex.plain import Record

# The largest number a count option takes (results, runs, workers, seconds): more is a mistake, told in one
# line (far above it, SQLite's integers and Python's sizes overflow with a traceback).
MAX_COUNT = 1_000_000


def count_type(minimum: int = 1) -> click.IntRange:
    """A whole number from `minimum` to MAX_COUNT, for a count option."""
    return click.IntRange(minimum, MAX_COUNT)


class App(Record):
    """Wires configuration, the store and the terminal together; commands receive it from click."""

    __slots__ = ("_memex", "_page", "_page_width", "config", "on_interrupt", "pager", "stderr", "stdout", "utc")

    config: Config
    stdout: TextIO
    stderr: TextIO
    _memex: Memex | None
    # Set by a command that writes: what it kept so far and how to continue, said when Ctrl-C stops it.
    on_interrupt: Callable[[], str] | None
    # Times in UTC rather than local time (`--utc`), and whether long output may go through a pager.
    utc: bool
    pager: bool
    _page: io.StringIO | None  # output kept for the pager while `paged` runs
    _page_width: int

    def __init__(
        self,
        config: Config | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        _memex: Memex | None = None,
        on_interrupt: Callable[[], str] | None = None,
        utc: bool = False,
        pager: bool = True,
        _page: io.StringIO | None = None,
        _page_width: int = 0,
    ) -> None:
        self.config = load_config() if config is None else config
        self.stdout = sys.stdout if stdout is None else stdout
        self.stderr = sys.stderr if stderr is None else stderr
        self._memex = _memex
        self.on_interrupt = on_interrupt
        self.utc = utc
        self.pager = pager
        self._page = _page
        self._page_width = _page_width

    @property
    def out(self) -> Console:
        """Rich console on stdout: colour on a terminal, plain text (and wide lines) in a pipe.

        Strings are printed as they are: no markup (a prompt holding `[/]` is text, not a closing tag),
        no emoji codes, no highlighting. Styles come from `rich.text.Text` objects only.
        """
        if self._page is not None:  # kept for the pager: rendered as for the terminal it will reach
            return Console(
                file=self._page, force_terminal=True, width=self._page_width, highlight=False, markup=False, emoji=False
            )
        console = Console(file=self.stdout, highlight=False, markup=False, emoji=False)
        if not console.is_terminal:
            console.width = PIPE_WIDTH
        return console

    def when(self, timestamp: str | None) -> str:
        """A stored (UTC) timestamp as the user reads it: local time with its zone, or UTC with `--utc`."""
        return short_time(timestamp, utc=self.utc)

    def stdout_is_terminal(self) -> bool:
        isatty = getattr(self.stdout, "isatty", None)
        return bool(isatty is not None and isatty())

    @contextlib.contextmanager
    def paged(self) -> Iterator[None]:
        """What `out` prints inside goes through a pager when stdout is a terminal and it is longer than the
        screen, as git does (memex.cli.pager: $MEMEX_PAGER, else $PAGER, else `less -FRX`); never in a pipe,
        with `--no-pager`, or for JSON (commands do not page it)."""
        command = pager_command(os.environ) if self.pager and self._page is None else None
        if command is None or not self.stdout_is_terminal():
            yield
            return
        width = Console(file=self.stdout).width
        kept = self._page = io.StringIO()
        self._page_width = width
        try:
            yield
        except BaseException:  # an error or Ctrl-C: what was printed so far is shown as it is
            self._page = None
            self.stdout.write(kept.getvalue())
            raise
        self._page = None
        text = kept.getvalue()
        if text.count("\n") < terminal_lines(self.stdout) or not page(command, text):
            self.stdout.write(text)
        self.stdout.flush()

    @property
    def err(self) -> Console:
        """Rich console on stderr, printing strings as they are (see `out`)."""
        return Console(file=self.stderr, highlight=False, markup=False, emoji=False)

    def say(self, label: str, message: str) -> None:
        """One line on stderr, `label: message`, the message as it is (a path is never cut or read as markup)."""
        self.err.print(labelled(label, message), soft_wrap=True)

    def memex(self, readonly: bool = True) -> Memex:
        """The library's face over the store, shared by the whole command: read-only for commands that only
        read (the first call decides; its connection opens on first use)."""
        if self._memex is None:
            self._memex = Memex(self.config, readonly=readonly)
        return self._memex

    def db(self) -> sqlite3.Connection:
        """A read-write connection (created and migrated on first use)."""
        return self.memex(readonly=False).conn

    def db_readonly(self) -> sqlite3.Connection:
        """A read-only connection for commands that only read."""
        return self.memex(readonly=True).conn

    def emit_json(self, value: Any) -> None:
        """Write `value` as indented JSON on stdout (the stable contract for scripts and agents)."""
        write_json(self.stdout, value)

    def summary(self, title: str, rows: Sequence[tuple[str, str]]) -> None:
        """A command's summary on stdout: a title over labels and values (`print_summary`)."""
        print_summary(self.out, title, rows)

    def byte_progress(self, description: str) -> AbstractContextManager[Bar]:
        """A progress bar over bytes on stderr (drawn on a terminal only; its total is set later)."""
        return byte_progress(self.err, 0, description)

    def close(self) -> None:
        if self._memex is not None:
            self._memex.close()
            self._memex = None
