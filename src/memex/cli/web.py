"""`memex web`: browse, search and forget sessions in a local web page."""

from __future__ import annotations

import webbrowser
from typing import TYPE_CHECKING

import click

from memex.cli.app import App
from memex.errors import UserError

if TYPE_CHECKING:
    from memex.web.server import WebServer

# The viewer's port unless told: beside the daemon's API (8765 by default), so that either may start first;
# when it is taken the viewer takes any free port (it prints its address and opens it) rather than refuse.
DEFAULT_PORT = 8766


@click.command("web")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    help=f"0: any free port.  [default: {DEFAULT_PORT}, or any free port when it is taken]",
)
@click.option("--no-open", is_flag=True, help="Do not open the page in a browser.")
@click.option(
    "--allow-remote", is_flag=True, help="Listen beyond loopback; every request must then carry the API token."
)
@click.pass_obj
def web_command(app: App, host: str, port: int | None, no_open: bool, allow_remote: bool) -> None:
    """Serve a viewer of every session (this computer's and your other computers' mirrors) until Ctrl-C."""
    from memex.sync.token import read_token
    from memex.web.guard import is_loopback
    from memex.web.server import check_host

    check_host(host, allow_remote)
    token = None
    if not is_loopback(host):
        token = read_token(app.config)
        if token is None:
            raise UserError("serving beyond loopback needs the API token: set api_token, or run `memex daemon` once")
    server = _listen(app, host, port, token)
    server.start()
    link = server.url + (f"?token={token}" if token else "")
    app.say("memex web", f"serving {link} (Ctrl-C stops)")
    if not no_open:
        webbrowser.open(link)
    try:
        server.wait()
    except KeyboardInterrupt:  # Ctrl-C is how the viewer is stopped: not an error
        app.say("memex web", "stopped")
    finally:
        server.stop()


def _listen(app: App, host: str, port: int | None, token: str | None) -> WebServer:
    """The viewer bound to `port`; when none was given, to DEFAULT_PORT or else any free port."""
    from memex.web.server import WebServer

    if port is not None:
        return WebServer(app.config, host, port, token)
    try:
        return WebServer(app.config, host, DEFAULT_PORT, token)
    except UserError as taken:
        try:
            return WebServer(app.config, host, 0, token)
        except UserError:
            raise taken from None
