"""`memex mcp`: serve memex's tools to an MCP client over stdin/stdout."""

from __future__ import annotations

import click

from memex.cli.app import App


@click.command("mcp")
@click.pass_obj
def mcp_command(app: App) -> None:
    """Run memex as an MCP server on stdio (search, show_session, list_sessions, find_related, recall,
    stats), reading the store read-only. An agent starts it: register `memex mcp` as a stdio server in its
    MCP settings (see the README). Logs go to stderr."""
    from memex.mcpserver.server import run  # the MCP SDK is loaded by this command only

    run(app.config)
