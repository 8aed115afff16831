"""`astra mcp` with ASTRALYX_API set: the client's stdio relayed to that server's /mcp with ASTRALYX_TOKEN.

One implementation, the server's: messages pass through as they are, so the key's workspace and role
decide, and elicitation and progress reach the client. The relay only sets the HTTP headers the
Streamable HTTP transport expects beside each message (the protocol version, and on 2026-07-28 the
method and name), which a client speaking stdio does not send.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlencode

import anyio
from mcp.client.streamable_http import streamable_http_client
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.inbound import (
    MCP_METHOD_HEADER,
    MCP_NAME_HEADER,
    MCP_PROTOCOL_VERSION_HEADER,
    NAME_BEARING_METHODS,
    encode_header_value,
)
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types import PROTOCOL_VERSION_META_KEY
from mcp_types.jsonrpc import JSONRPCRequest, JSONRPCResponse

log = logging.getLogger("astralyx.mcp")


def endpoint(api: str, bases: list[str] | None) -> str:
    """ASTRALYX_API is the API's root (…/v1, as for the rest of astra); /mcp is beside it."""
    root = api.rstrip("/")
    if root.endswith("/v1"):
        root = root[:-3]
    return root + "/mcp" + ("?" + urlencode([("base", b) for b in bases]) if bases else "")


class Stamp:
    """The headers each message travels with, learnt from the messages themselves."""

    def __init__(self) -> None:
        self.version: str | None = None  # negotiated by initialize (up to 2025-11-25)
        self.initialize_id: Any = None

    def up(self, message: SessionMessage) -> SessionMessage:
        raw = message.message
        if isinstance(raw, JSONRPCRequest) and raw.method == "initialize":
            self.initialize_id, self.version = raw.id, None
            return message
        params = getattr(raw, "params", None) or {}
        modern = (params.get("_meta") or {}).get(PROTOCOL_VERSION_META_KEY) if isinstance(params, dict) else None
        headers: dict[str, str] = {}
        if isinstance(modern, str):  # 2026-07-28: every request says its version, method and name
            headers[MCP_PROTOCOL_VERSION_HEADER] = modern
            method = getattr(raw, "method", None)
            if isinstance(method, str):
                headers[MCP_METHOD_HEADER] = method
                key = NAME_BEARING_METHODS.get(method)
                if key is not None and isinstance(params.get(key), str):
                    headers[MCP_NAME_HEADER] = encode_header_value(params[key])
        elif self.version:
            headers[MCP_PROTOCOL_VERSION_HEADER] = self.version
        return SessionMessage(raw, metadata=ClientMessageMetadata(headers=headers)) if headers else message

    def down(self, message: SessionMessage) -> None:
        raw = message.message
        if isinstance(raw, JSONRPCResponse) and raw.id == self.initialize_id and isinstance(raw.result, dict):
            version = raw.result.get("protocolVersion")
            self.version = version if isinstance(version, str) else None


def relay(api: str, token: str | None, bases: list[str] | None = None) -> None:
    url = endpoint(api, bases)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    stamp = Stamp()

    async def main() -> None:
        async with stdio_server() as (client_read, client_write), create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(url, http_client=http) as (server_read, server_write):
                async with anyio.create_task_group() as tg:

                    async def up() -> None:
                        async for message in client_read:
                            if isinstance(message, Exception):
                                log.warning("unreadable message from the client: %s", message)
                                continue
                            await server_write.send(stamp.up(message))
                        tg.cancel_scope.cancel()  # the client closed stdin: done

                    async def down() -> None:
                        async for message in server_read:
                            if isinstance(message, Exception):
                                log.warning("from %s: %s", url, message)
                                continue
                            stamp.down(message)
                            await client_write.send(message)
                        tg.cancel_scope.cancel()

                    tg.start_soon(up)
                    tg.start_soon(down)

    anyio.run(main)
