"""`memex daemon`: the foreground process that watches, ingests, shares mirrors and serves the API."""

from __future__ import annotations

import logging
import signal
import sys
from types import FrameType
from typing import TextIO

import click

from memex.api import Memex
from memex.cli.app import App
from memex.sync.daemon import Daemon
from memex.sync.link import display_url
from memex.sync.token import token_path


@click.command("daemon")
@click.option("--once", is_flag=True, help="One pass (index, publish, receive what waits) and exit.")
@click.option("--no-api", is_flag=True, help="Do not serve the HTTP API.")
@click.option("-v", "--verbose", is_flag=True, help="Log every pass and API request.")
@click.pass_obj
def daemon_command(app: App, once: bool, no_api: bool, verbose: bool) -> None:
    """Run the memex daemon in the foreground (a systemd user unit or a launchd agent keeps it running).

    It indexes what changed since it last ran, then watches the agents' transcript folders, publishes
    each session's mirror (redacted) when the session closes, receives other computers' mirrors, and
    serves the HTTP API other computers use for `--computer` and `--raw`. Stop it with Ctrl-C.
    """
    _configure_logging(verbose)
    config = app.config
    embedder = Memex(config)  # its own connection: a slice of embedding work after each pass

    def embed() -> int:
        return embedder.embed_slice(config.daemon_embed_seconds)

    daemon = Daemon(config, serve_api=not no_api, tasks=[embed])
    stopping = False

    def stop(signum: int, frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    try:
        daemon.start()
        shared = "no Redis"
        if config.redis_url:
            shared = f"Redis {display_url(config.redis_url)} (prefix {config.redis_prefix!r})"
        api = f"API {daemon.api.url}" if daemon.api else "no API"
        token = "api_token" if config.api_token else token_path(config)
        click.echo(f"memex daemon: computer {config.computer} · {shared} · {api} · token in {token}", err=True)
        if once:
            daemon.run_once()
            return
        # SIGTERM (systemd, launchd, kill) and SIGHUP (the terminal it ran in closed) stop it cleanly.
        previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGTERM, signal.SIGHUP)}
        try:
            daemon.run(lambda: stopping)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        click.echo("memex daemon: stopped", err=True)
    finally:
        daemon.close()  # Ctrl-C included: the command then says what was kept and exits 130
        embedder.close()


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
