"""`astra mcp`: the MCP server over stdin/stdout, as the data directory's owner (local) in a workspace."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from ..auth.actor import Actor
from .server import AstralyxMcp

if TYPE_CHECKING:
    from ..core import Astralyx


def serve(core: Astralyx, workspace: str, bases: list[str] | None = None) -> None:
    """Serve one client on stdio until it closes stdin. Nothing but the protocol goes to stdout."""
    from mcp.server.stdio import stdio_server

    mcp = AstralyxMcp(core, actor=Actor.local_owner(workspace), bases=bases)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await mcp.server.run(read, write, mcp.server.create_initialization_options())

    anyio.run(main)
