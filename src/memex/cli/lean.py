"""`memex index` without click or rich: the run a hook, a script or cron makes (output to no terminal).

click, rich and the CLI's own modules cost a run that finds one transcript changed among 20,000 about a
fifth of its CPU; such a run prints a summary (or JSON) that needs neither. A command line of `index` and
the flags `--no-embed` and `--json` only, with stdout and stderr no terminal (and no variable making rich
treat them as one), and nothing to embed after it (`--no-embed`, or `index_embeds = 0`), runs here; any other
goes through click. What it prints besides the summary (a warning, a failed file, an error) is printed as the
click command prints it: the CLI is imported then.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, TextIO

from memex.cli.indexing import run_index
from memex.cli.plain import PIPE_WIDTH, Bar, Hidden, summary_lines, write_json
from memex.config import Config, load_config

if TYPE_CHECKING:
    from rich.console import Console

    from memex.api import Memex
    from memex.cli.app import App

# The flags a lean run takes (any other argument, a path, --agent, --workers…, goes through click).
FLAGS = frozenset({"--no-embed", "--json"})
# Variables that make rich treat a pipe as a terminal (colours, a progress bar): click's run then.
TERMINAL_VARIABLES = ("FORCE_COLOR", "TTY_COMPATIBLE")


def applies(argv: Sequence[str], stdout: TextIO, stderr: TextIO, environ: Mapping[str, str]) -> bool:
    """Whether `memex ARGV…` is a lean run: `index` and lean flags only, printing to no terminal."""
    if argv[:1] != ["index"] or not set(argv[1:]) <= FLAGS:
        return False
    if any(name in environ for name in TERMINAL_VARIABLES):
        return False
    return not any(_is_terminal(stream) for stream in (stdout, stderr))


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no stream, or a closed one: rich takes it for no terminal
        return False


class LeanApp:
    """The `memex.cli.app.App` of a lean run: the configuration and the store; the real App (click, rich)
    is made when something is printed besides the summary or JSON."""

    def __init__(self, config: Config, stdout: TextIO, stderr: TextIO) -> None:
        self.config = config
        self.stdout = stdout
        self.stderr = stderr
        self._memex: Memex | None = None
        self._app: App | None = None

    def memex(self, readonly: bool = True) -> Memex:
        if self._memex is None:
            from memex.api import Memex  # not for a run the warm server makes: it opens no store here

            self._memex = Memex(self.config, readonly=readonly)
        return self._memex

    def full(self) -> App:
        """The click command's App, over this run's store."""
        if self._app is None:
            from memex.cli.app import App

            self._app = App(self.config, self.stdout, self.stderr, _memex=self._memex)
        return self._app

    @property
    def err(self) -> Console:
        return self.full().err

    def say(self, label: str, message: str) -> None:
        self.full().say(label, message)

    def emit_json(self, value: Any) -> None:
        write_json(self.stdout, value)

    def summary(self, title: str, rows: Sequence[tuple[str, str]]) -> None:
        lines = summary_lines(title, rows, PIPE_WIDTH)
        if lines is None:
            self.full().summary(title, rows)
        else:
            self.stdout.write("".join(line + "\n" for line in lines))

    def byte_progress(self, description: str) -> AbstractContextManager[Bar]:
        return nullcontext(Hidden())  # stderr is no terminal

    def close(self) -> None:
        if self._memex is not None:
            self._memex.close()
            self._memex = None


def run(argv: Sequence[str]) -> int | None:
    """Run `memex ARGV…` here if it is a lean run (returns its exit status, the store closed); None when
    it is not (nothing was done: click runs it)."""
    if not applies(argv, sys.stdout, sys.stderr, os.environ):
        return None
    try:
        config = load_config()
        if "--no-embed" not in argv and config.index_embeds:  # the model's run is click's
            return None
        app = LeanApp(config, sys.stdout, sys.stderr)
        try:
            return run_index(app, no_embed="--no-embed" in argv, as_json="--json" in argv)
        finally:
            app.close()
    except (KeyboardInterrupt, Exception) as error:
        from memex.cli.main import ended_by

        return ended_by(error, "index")
