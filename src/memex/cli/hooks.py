"""`memex hooks …`: install memex into Claude Code, see what runs; `memex hook EVENT` is what Claude Code calls."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from memex.cli.app import App, count_type
from memex.cli.options import json_option
from memex.cli.render import styled
from memex.errors import UserError
from memex.hooks import installer, log, warm

RUNS_SHOWN = 15


def _scope_options(func: Any) -> Any:
    func = click.option(
        "--settings",
        "settings_file",
        type=click.Path(dir_okay=False, path_type=Path),
        help="This settings file instead of the scope's.",
    )(func)
    func = click.option(
        "--project-dir",
        type=click.Path(file_okay=False, path_type=Path),
        help="The project whose .claude/ folder is meant (default: the current folder).",
    )(func)
    return click.option(
        "--scope",
        type=click.Choice(installer.SCOPES),
        default="user",
        show_default=True,
        help="user: ~/.claude/settings.json; project: .claude/settings.json; local: .claude/settings.local.json.",
    )(func)


def _target(scope: str, project_dir: Path | None, settings_file: Path | None) -> Path:
    return settings_file.expanduser().absolute() if settings_file else installer.settings_path(scope, project_dir)


def _report(app: App, change: installer.Change, verb: str, as_json: bool) -> None:
    if as_json:
        app.emit_json(
            {"settings": str(change.path), "changed": change.changed, "backup": change.backup, "events": change.events}
        )
        return
    if not change.changed:
        message = "already installed" if verb == "installed" else "nothing to remove"
        app.out.print(f"{change.path}: {message} ({', '.join(change.events) or 'no memex hooks'}).")
        return
    app.out.print(f"{change.path}: {verb} memex hooks for {', '.join(change.events)}.")
    if change.backup:
        app.out.print(f"Backup of the previous file: {change.backup}")


@click.group("hooks")
def hooks_group() -> None:
    """Claude Code integration: ingest on Stop, recall on every prompt."""


@hooks_group.command("install")
@_scope_options
@click.option("--command", "command", help="How Claude Code should run memex (default: this memex's absolute path).")
@json_option
@click.pass_obj
def install_command(
    app: App, scope: str, project_dir: Path | None, settings_file: Path | None, command: str | None, as_json: bool
) -> None:
    """Add memex's hooks to Claude Code's settings (other settings and hooks are left as they are)."""
    change = installer.install(app.config, _target(scope, project_dir, settings_file), command)
    _report(app, change, "installed", as_json)
    user = installer.settings_path("user")
    with contextlib.suppress(UserError):
        if not as_json and installer.plugin_enabled(installer.SettingsFile.read(user).data):
            app.out.print(
                "The memex plugin is enabled too: its hooks stand aside for these (no double recall); "
                "`memex hooks uninstall` hands the work back to it."
            )


@hooks_group.command("uninstall")
@_scope_options
@json_option
@click.pass_obj
def uninstall_command(
    app: App, scope: str, project_dir: Path | None, settings_file: Path | None, as_json: bool
) -> None:
    """Remove memex's hooks (and nothing else) from Claude Code's settings."""
    change = installer.uninstall(_target(scope, project_dir, settings_file))
    _report(app, change, "removed", as_json)


@hooks_group.command("status")
@click.option("--project-dir", type=click.Path(file_okay=False, path_type=Path), help="The project to inspect.")
@click.option("--settings", "settings_file", type=click.Path(dir_okay=False, path_type=Path), help="Also this file.")
@click.option("--runs", type=count_type(0), default=RUNS_SHOWN, show_default=True, help="Last hook runs shown.")
@json_option
@click.pass_obj
def status_command(app: App, project_dir: Path | None, settings_file: Path | None, runs: int, as_json: bool) -> None:
    """Where memex's hooks are installed, the warm server, and the last hook runs."""
    files = [(scope, installer.settings_path(scope, project_dir)) for scope in installer.SCOPES]
    if settings_file:
        files.append(("file", settings_file.expanduser().absolute()))
    places: list[dict[str, Any]] = []
    for scope, path in files:
        try:
            data = installer.SettingsFile.read(path).data
            events, error = installer.installed(data), None
        except Exception as exc:  # status reports an unreadable file, it does not fail on it
            events, error = {}, str(exc)
        places.append(
            {"scope": scope, "settings": str(path), "exists": path.exists(), "events": events, "error": error}
        )
    key = warm.server_key(app.config)
    live = warm.servers(app.config.home)
    pid = live.get(key)
    socket_path = str(warm.socket_path(app.config.home, key))
    # This shell's settings' server first; others serve shells or agents run with other MEMEX_* settings.
    others = [
        {"pid": other, "socket": str(warm.socket_path(app.config.home, k))} for k, other in live.items() if k != key
    ]
    server = {"running": pid is not None, "pid": pid, "socket": socket_path, "others": others}
    recent = log.recent(app.config.home, runs) if runs else []
    if as_json:
        app.emit_json(
            {"installed": places, "warm_server": server, "log": str(log.log_path(app.config.home)), "runs": recent}
        )
        return
    out = app.out
    table = Table(title="memex hooks", box=None, header_style="bold")
    for column in ("scope", "settings", "memex hooks"):
        table.add_column(column, overflow="fold")
    for place in places:
        if place["error"]:
            state = styled(f"unreadable: {place['error']}", "red")
        elif place["events"]:
            state = Text(", ".join(place["events"]))
        else:
            state = styled("none" if place["exists"] else "no file", "dim")
        table.add_row(place["scope"], place["settings"], state)
    out.print(table)
    commands = sorted({c for place in places for cs in place["events"].values() for c in cs})
    for command in commands:
        out.print(f"command: {command}")
    server_state = f"running (pid {pid})" if pid else "not running (starts on the next prompt)"
    out.print(f"warm server: {server_state} · socket {server['socket']}")
    if others:
        pids = ", ".join(str(other["pid"]) for other in others)
        out.print(f"other warm servers (other MEMEX_* settings): {len(others)} (pid {pids})")
    if not recent:
        out.print(styled("No hook runs logged yet.", "dim"))
        return
    runs_table = Table(title=f"last hook runs ({log.log_path(app.config.home)})", box=None, header_style="bold")
    for column in ("at", "event", "session", "status", "ms", "detail"):
        runs_table.add_column(column, overflow="fold", justify="right" if column == "ms" else "left")
    for run in recent:
        extras = [f"{key}={run[key]}" for key in ("path", "hits", "turns", "files", "chars", "warm") if key in run]
        detail = " ".join([*extras, str(run.get("detail") or "")]).strip()
        style = "red" if run.get("status") == "error" else ""
        runs_table.add_row(
            str(run.get("at", ""))[:19].replace("T", " "),
            str(run.get("event", "")),
            str(run.get("session", "")),
            styled(str(run.get("status", "")), style),
            str(run.get("ms", "")),
            detail,
        )
    out.print(runs_table)


@hooks_group.command("serve")
@click.option("--idle", type=count_type(0), help="Exit after this many idle seconds (default: warm_idle_seconds).")
@click.option("--for-index", is_flag=True, hidden=True, help="List the folders at start, not load the model.")
@click.pass_obj
def serve_command(app: App, idle: int | None, for_index: bool) -> None:
    """Run the warm recall server in the foreground (hooks start it on demand; this is for inspection)."""
    server = warm.WarmServer(app.config, idle, for_index=for_index)
    if not server.serve():
        app.err.print("memex: a warm server is already running for this MEMEX_HOME and these settings.")


@hooks_group.command("shutdown")
@click.pass_obj
def shutdown_command(app: App) -> None:
    """Stop the warm recall servers of this MEMEX_HOME, whatever their settings (the next prompt starts one)."""
    stopped = warm.shutdown_all(app.config)
    if not stopped:
        app.out.print("no warm server was running.")
    else:
        app.out.print("warm server stopped." if len(stopped) == 1 else f"{len(stopped)} warm servers stopped.")


@click.command("hook", hidden=True, context_settings={"ignore_unknown_options": True})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def hook_command(args: tuple[str, ...]) -> None:
    """Run one Claude Code hook: the event's JSON on stdin (the `memex` executable takes a faster path)."""
    from memex.hooks.events import main

    sys.exit(main(list(args)))
