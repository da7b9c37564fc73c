"""`memex web`: browse, search and forget sessions in a local web page."""

from __future__ import annotations

import webbrowser

import click

from memex.cli.app import App
from memex.errors import UserError


@click.command("web")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True, help="0: any free port.")
@click.option("--no-open", is_flag=True, help="Do not open the page in a browser.")
@click.option(
    "--allow-remote", is_flag=True, help="Listen beyond loopback; every request must then carry the API token."
)
@click.pass_obj
def web_command(app: App, host: str, port: int, no_open: bool, allow_remote: bool) -> None:
    """Serve a viewer of every session (this computer's and your other computers' mirrors) until Ctrl-C."""
    from memex.sync.token import read_token
    from memex.web.guard import is_loopback
    from memex.web.server import WebServer, check_host

    check_host(host, allow_remote)
    token = None
    if not is_loopback(host):
        token = read_token(app.config)
        if token is None:
            raise UserError("serving beyond loopback needs the API token: set api_token, or run `memex daemon` once")
    server = WebServer(app.config, host, port, token)
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
