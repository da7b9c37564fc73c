"""The `memex` command: a thin click group; each command group lives in its own module."""

from __future__ import annotations

import errno
import importlib
import signal
import sys
from typing import Any

import click

from memex import __version__
from memex.cli.app import App
from memex.cli.entry import exit_at_once, no_pool
from memex.errors import MemexError, interrupt_behind

# Exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED_EXIT = 130
# What an interrupted command kept, and how to go on, for the commands that write (`App.on_interrupt`
# refines it while a command runs); a command that only reads has nothing to keep.
INTERRUPT_NOTES = {
    "index": "every transcript indexed before the interrupt is kept; run `memex index` again to continue",
    "embed": "every batch of vectors stored before the interrupt is kept; run `memex embed` to continue",
    "find-related": "the path vectors and centroids stored so far are kept; the next find-related continues",
    "daemon": "what the daemon indexed is kept, and mirrors not sent yet wait in the outbox; `memex daemon` "
    "continues from there",
}

# Each command's module is imported only when that command runs, so `memex search` does not pay for the
# daemon's Redis client nor `memex sessions list` for numpy: name -> "module:attribute".
COMMANDS = {
    "index": "memex.cli.index:index_command",
    "embed": "memex.cli.embed:embed_command",
    "search": "memex.cli.search:search_command",
    "sessions": "memex.cli.sessions:sessions_group",
    "show": "memex.cli.show:show_command",
    "find-related": "memex.cli.related:related_group",
    "stats": "memex.cli.stats:stats_command",
    "hooks": "memex.cli.hooks:hooks_group",
    "hook": "memex.cli.hooks:hook_command",
    "daemon": "memex.cli.daemon:daemon_command",
    "computers": "memex.cli.computers:computers_command",
    "mcp": "memex.cli.mcp:mcp_command",
    "forget": "memex.cli.forget:forget_command",
    "doctor": "memex.cli.doctor:doctor_command",
    "export": "memex.cli.export:export_command",
    "web": "memex.cli.web:web_command",
}


# Commands that end with `os._exit` once click has closed their connection (every write committed) and their
# output is flushed: interpreter teardown (freeing ~200 modules) is a sixth of a quick command's work, and
# after `memex index` also the tens of thousands of stored streams' rows it held (~4 ms at 20,000).
FAST_EXIT = frozenset({"index", "search", "sessions", "show", "stats"})


class Failure(click.ClickException):
    """A MemexError as click reports it: one line on stderr, the error's exit code."""

    def __init__(self, error: MemexError) -> None:
        super().__init__(str(error))
        self.exit_code = error.exit_code  # type: ignore[misc]  # click reads it per instance

    def show(self, file: Any = None) -> None:
        click.echo(f"memex: error: {self.format_message()}", err=True)


class UsageFailure(click.UsageError):
    """A mistyped command line as one line on stderr (click's default adds the usage and a hint line)."""

    def show(self, file: Any = None) -> None:
        where = f" (see '{self.ctx.command_path} --help')" if self.ctx is not None else ""
        click.echo(f"memex: error: {self.format_message()}{where}", err=True)


class Interrupted(click.ClickException):
    """Ctrl-C: one line saying what was kept and how to continue, exit status 130 (no `Aborted!`)."""

    exit_code = INTERRUPTED_EXIT

    def show(self, file: Any = None) -> None:
        click.echo(f"memex: interrupted{': ' if self.message else ''}{self.message}", err=True)


def _interrupt_note(ctx: click.Context) -> str:
    """What the interrupted command says it kept (its own account when it gave one)."""
    app = ctx.obj if isinstance(ctx.obj, App) else None
    if app is not None and app.on_interrupt is not None:
        try:
            return app.on_interrupt()
        except Exception:  # the account is a courtesy: the interrupt itself must still be reported
            pass
    name = ctx.invoked_subcommand or ""
    return INTERRUPT_NOTES.get(name, "")


# `memex` or `memex sessions` alone print their help (click raises it as a usage error).
_HELP_ERROR = getattr(click.exceptions, "NoArgsIsHelpError", ())  # click >= 8.2


def _one_line(error: click.UsageError) -> click.UsageError:
    if isinstance(error, (UsageFailure, _HELP_ERROR)):
        return error
    return UsageFailure(error.format_message(), error.ctx)


class MemexGroup(click.Group):
    """A click group that turns memex's own errors, and command-line mistakes, into one clear line, and
    imports the commands of `lazy_commands` when they are used."""

    lazy_commands: dict[str, str] = {}  # noqa: RUF012 - replaced per instance, never mutated

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in self.lazy_commands and name not in self.commands:
            module, attribute = self.lazy_commands[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attribute), name)
        return super().get_command(ctx, name)

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
        except click.exceptions.Exit:
            raise
        except (KeyboardInterrupt, Exception) as error:
            # A Ctrl-C, also one that the code it landed in re-raised as another error (a class being
            # created while a module was imported): an interrupt, reported as one, not a traceback.
            if interrupt_behind(error) is None:
                raise
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut the report short
            raise Interrupted(_interrupt_note(ctx)) from None


@click.group(cls=MemexGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="memex")
@click.option("--utc", is_flag=True, help="Show times in UTC (default: local time, with its zone).")
@click.option("--no-pager", is_flag=True, help="Never page long output (default: as git, on a terminal).")
@click.pass_context
def cli(ctx: click.Context, utc: bool, no_pager: bool) -> None:
    """memex: recall for AI coding agents (Claude Code, Codex CLI, Gemini CLI)."""
    app = App(utc=utc, pager=not no_pager)
    ctx.obj = app
    ctx.call_on_close(app.close)


cli.lazy_commands = COMMANDS


def main() -> None:
    """Console entry point."""
    try:
        cli(prog_name="memex")
    except SystemExit as end:  # click ends every run so, its context (and the store) closed by then
        if _command(sys.argv[1:]) in FAST_EXIT and (end.code is None or isinstance(end.code, int)) and no_pool():
            exit_at_once(end.code or 0)
        raise


def ended_by(error: BaseException, command: str) -> int:
    """How `memex COMMAND` run without click (`memex.cli.lean`) ends on `error`, as click's command would:
    memex's own error in one line, a Ctrl-C as an interrupt (what was kept, exit status 130), a closed pipe
    silently (status 1); the exit status. Any other error is raised again (a traceback)."""
    if isinstance(error, MemexError):
        failure: click.ClickException = Failure(error)
    elif isinstance(error, OSError) and error.errno == errno.EPIPE:
        return 1
    elif interrupt_behind(error) is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C does not cut the report short
        failure = Interrupted(INTERRUPT_NOTES.get(command, ""))
    else:
        raise error
    failure.show()
    return failure.exit_code


def _command(args: list[str]) -> str | None:
    """The command a command line runs (the group's own options are flags: none takes a value)."""
    return next((arg for arg in args if not arg.startswith("-")), None)
