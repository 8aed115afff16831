"""`astra mcp`: the MCP server on stdio, for an MCP client's config file (Claude Desktop, Claude Code, Cursor).

Locally it serves the data directory as its owner, in a workspace. With ASTRALYX_API and ASTRALYX_TOKEN
set it relays the client to that server's /mcp with the key, so the key's workspace and role decide.
"""

from __future__ import annotations

import logging
import os
import sys

import click

from .state import State, pass_state


@click.command("mcp")
@click.option("--base", "bases", multiple=True, metavar="NAME",
              help="Offer only this base (repeat for several). Default: every base the caller may use.")
@click.option("--home", "mcp_home", help="Data directory (else ASTRALYX_HOME, else ~/.astralyx).")
@click.option("--workspace", "-w", "mcp_workspace", help="Workspace to serve locally (default: astra's -w, 'default').")
@pass_state
def mcp(state: State, bases: tuple[str, ...], mcp_home: str | None, mcp_workspace: str | None) -> None:
    """Serve bases and memories to an MCP client over stdio (stdout carries the protocol only)."""
    # Anything we log goes to stderr: stdout is the client's.
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="astra mcp: %(levelname)s %(message)s")
    api = os.environ.get("ASTRALYX_API")
    if api:
        from ..mcp.relay import relay

        relay(api, os.environ.get("ASTRALYX_TOKEN"), list(bases) or None)
        return
    from ..config import Settings
    from ..core import Astralyx
    from ..mcp.stdio import serve

    core = Astralyx(Settings.load(mcp_home or state.home)).start()
    if core.new_admin_key:
        click.echo(f"Created {core.home} with workspace 'default' and an admin key (shown once, also in "
                   f"{core.home / 'admin.key'}):\n  {core.new_admin_key}", err=True)
    try:
        serve(core, mcp_workspace or state.workspace, list(bases) or None)
    finally:
        core.close()


COMMANDS = [mcp]
