"""The `memex` command: a thin click group; each command group lives in its own module."""

from __future__ import annotations

from typing import Any

import click

from memex import __version__
from memex.cli.app import App
from memex.cli.computers import computers_command
from memex.cli.daemon import daemon_command
from memex.cli.hooks import hook_command, hooks_group
from memex.cli.index import index_command
from memex.cli.search import search_command
from memex.cli.sessions import sessions_group
from memex.cli.show import show_command
from memex.cli.stats import stats_command
from memex.errors import MemexError


class Failure(click.ClickException):
    """A MemexError as click reports it: one line on stderr, the error's exit code."""

    def __init__(self, error: MemexError) -> None:
        super().__init__(str(error))
        self.exit_code = error.exit_code

    def show(self, file: Any = None) -> None:
        click.echo(f"memex: error: {self.format_message()}", err=True)


class MemexGroup(click.Group):
    """A click group that turns memex's own errors into one clear line instead of a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemexError as error:
            raise Failure(error) from None


@click.group(cls=MemexGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memex")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """memex: recall for AI coding agents (Claude Code, Codex CLI, Gemini CLI)."""
    app = App()
    ctx.obj = app
    ctx.call_on_close(app.close)


for command in (index_command, search_command, sessions_group, show_command, stats_command, hooks_group, hook_command):
    cli.add_command(command)
for command in (daemon_command, computers_command):
    cli.add_command(command)


def main() -> None:
    """Console entry point."""
    cli(prog_name="memex")
