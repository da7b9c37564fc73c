"""`memex daemon`: the foreground process that watches, ingests, shares mirrors and serves the API."""

from __future__ import annotations

import logging
import signal
import sys
import time
from types import FrameType
from typing import TextIO

import click

from memex.api import Memex
from memex.cli.app import App
from memex.config import Config, file_state, load_config
from memex.errors import ConfigError, EmbedderUnavailable, interrupt_behind
from memex.sync.daemon import Daemon
from memex.sync.link import display_url
from memex.sync.token import token_path

log = logging.getLogger("memex.daemon")
# How often the daemon looks whether `config.toml` was edited (a stat of the file).
SETTINGS_CHECK_SECONDS = 2.0


@click.command("daemon")
@click.option("--once", is_flag=True, help="One pass (index, publish, receive what waits) and exit.")
@click.option("--no-api", is_flag=True, help="Do not serve the HTTP API.")
@click.option("-v", "--verbose", is_flag=True, help="Log every pass and API request.")
@click.pass_obj
def daemon_command(app: App, once: bool, no_api: bool, verbose: bool) -> None:
    """Run the memex daemon in the foreground (a systemd user unit or a launchd agent keeps it running).

    It indexes what changed since it last ran, then watches the agents' transcript folders, publishes
    each session's mirror (redacted) when the session closes, receives other computers' mirrors, and
    serves the HTTP API other computers use for `--computer` and `--raw`. When `config.toml` is edited, it
    restarts with the new settings. Stop it with Ctrl-C.
    """
    _configure_logging(verbose)
    config: Config | None = app.config
    while config is not None:
        changed = _run(config, once, no_api)
        if changed is not None:
            log.warning("%s changed: the daemon restarts with the new settings", config.config_file)
        config = changed


def _run(config: Config, once: bool, no_api: bool) -> Config | None:
    """Run the daemon with `config` until it is stopped (None), or until `config.toml` changes to other
    valid settings (returned: the daemon restarts with them)."""
    embedder = Memex(config)  # its own connection: a slice of embedding work after each pass
    no_model: list[str] = []  # why there is no embedding model, once found out

    def embed() -> int:
        # Without its model (a misspelled embed_model, a package missing) the daemon says so once, in one
        # line, and goes on without vectors: semantic search falls back to words until the setting is fixed
        # (an edit of config.toml restarts the daemon, which then tries again).
        if no_model:
            return 0
        try:
            return embedder.embed_slice(config.daemon_embed_seconds)
        except EmbedderUnavailable as exc:
            no_model.append(str(exc))
            log.warning("semantic search is off (%s): the daemon indexes and shares without vectors", exc)
            return 0

    daemon = Daemon(config, serve_api=not no_api, tasks=[embed])
    settings = _SettingsWatch(config)
    starting, stopping = True, False
    changed: Config | None = None

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        if starting:  # the start-up index (minutes, for a backfill) is cut short as by Ctrl-C
            raise _Stopped

    def should_stop() -> bool:
        nonlocal changed
        if not stopping:
            changed = settings.changed()
        return stopping or changed is not None

    # SIGTERM (systemd, launchd, kill) and SIGHUP (the terminal it ran in closed) stop it cleanly, from the
    # start on: its pid file and heartbeat go, and what the start-up index stored is kept.
    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        try:
            daemon.start()
            starting = False
        except BaseException as exc:
            if not isinstance(interrupt_behind(exc), _Stopped):
                raise
            click.echo("memex daemon: stopped", err=True)
            return None
        shared = "no Redis"
        if config.redis_url:
            shared = f"Redis {display_url(config.redis_url)} (prefix {config.redis_prefix!r})"
        api = f"API {daemon.api.url}" if daemon.api else "no API"
        token = "api_token" if config.api_token else token_path(config)
        click.echo(f"memex daemon: computer {config.computer} · {shared} · {api} · token in {token}", err=True)
        if once:
            daemon.run_once()
            return None
        daemon.run(should_stop)
        if changed is None:
            click.echo("memex daemon: stopped", err=True)
        return changed
    finally:
        daemon.close()  # Ctrl-C included: the command then says what was kept and exits 130
        embedder.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


class _Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP while the daemon starts: unwinds the start-up index as Ctrl-C does (the indexer
    drops the files not started), then the daemon stops cleanly."""


class _SettingsWatch:
    """Tells when `config.toml` was edited to settings other than the running daemon's. The file is looked
    at every `SETTINGS_CHECK_SECONDS`; an edit that does not load (a typo) is logged, and the daemon keeps
    its settings until the file is fixed."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.state = file_state(config.config_file)
        self.next_check = time.monotonic() + SETTINGS_CHECK_SECONDS

    def changed(self) -> Config | None:
        """The new settings when the file changed to other valid ones since the last look, else None."""
        now = time.monotonic()
        if now < self.next_check:
            return None
        self.next_check = now + SETTINGS_CHECK_SECONDS
        state = file_state(self.config.config_file)
        if state == self.state:
            return None
        self.state = state
        try:
            edited = load_config()
        except ConfigError as exc:
            log.error("%s: the daemon keeps its settings until it is fixed", exc)
            return None
        return edited if edited != self.config else None


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever `sys.stderr` is when a record is emitted."""

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        pass


def _configure_logging(verbose: bool) -> None:
    """Daemon logs go to stderr (the journal, under systemd) with their time."""
    logger = logging.getLogger("memex")
    if not any(isinstance(handler, _StderrHandler) for handler in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if verbose else logging.INFO)
