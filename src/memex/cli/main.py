"""The `memex` command: a thin click group; each command group lives in its own module."""

from __future__ import annotations

from typing import Any

import click

from memex import __version__
from memex.cli.app import App
from memex.cli.computers import computers_command
from memex.cli.daemon import daemon_command
from memex.cli.embed import embed_command
from memex.cli.hooks import hook_command, hooks_group
from memex.cli.index import index_command
from memex.cli.related import related_group
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


class UsageFailure(click.UsageError):
    """A mistyped command line as one line on stderr (click's default adds the usage and a hint line)."""

    def show(self, file: Any = None) -> None:
        where = f" (see '{self.ctx.command_path} --help')" if self.ctx is not None else ""
        click.echo(f"memex: error: {self.format_message()}{where}", err=True)


# `memex` or `memex sessions` alone print their help (click raises it as a usage error).
_HELP_ERROR = getattr(click.exceptions, "NoArgsIsHelpError", ())  # click >= 8.2


def _one_line(error: click.UsageError) -> click.UsageError:
    if isinstance(error, (UsageFailure, _HELP_ERROR)):
        return error
    return UsageFailure(error.format_message(), error.ctx)


class MemexGroup(click.Group):
    """A click group that turns memex's own errors, and command-line mistakes, into one clear line."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as error:
            raise _one_line(error) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemexError as error:
            raise Failure(error) from None
        except click.UsageError as error:
            raise _one_line(error) from None


@click.group(cls=MemexGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memex")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """memex: recall for AI coding agents (Claude Code, Codex CLI, Gemini CLI)."""
    app = App()
    ctx.obj = app
    ctx.call_on_close(app.close)


for command in (
    index_command,
    embed_command,
    search_command,
    sessions_group,
    show_command,
    related_group,
    stats_command,
    hooks_group,
    hook_command,
    daemon_command,
    computers_command,
):
    cli.add_command(command)


def main() -> None:
    """Console entry point."""
    cli(prog_name="memex")
