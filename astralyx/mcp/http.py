"""Streamable HTTP at /mcp on the app: `Authorization: Bearer <key>` decides who calls, as in the API.

The SDK's session manager keeps the sessions; it runs while the app runs (the app's lifespan starts
`McpHttp.lifespan`), so a new one is made each time the app starts (uvicorn, or a TestClient used as
a context manager). A session belongs to the key that opened it: another key gets 404 for it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

import anyio.to_thread
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from ..errors import AstralyxError, Unauthorized, Unavailable
from .server import ACTOR_SCOPE_KEY, BASES_SCOPE_KEY, AstralyxMcp

if TYPE_CHECKING:
    from ..core import Astralyx


class McpHttp:
    def __init__(self, core: Astralyx) -> None:
        self.core = core
        self.mcp = AstralyxMcp(core)
        self.manager: StreamableHTTPSessionManager | None = None

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        manager = StreamableHTTPSessionManager(app=self.mcp.server)
        async with manager.run():
            self.manager = manager
            try:
                yield
            finally:
                self.manager = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # pragma: no cover - websockets are not served here
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or []}
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            await _answer(send, Unauthorized("Missing API key: send the header 'Authorization: Bearer <key>' "
                                             "(a key comes from `astra keys create`, or <home>/admin.key)", code="UNAUTHORIZED"))
            return
        try:
            actor = await anyio.to_thread.run_sync(self.core.keys.authenticate, token.strip())
        except AstralyxError as e:
            await _answer(send, e)
            return
        if self.manager is None:
            await _answer(send, Unavailable("MCP sessions run while the server runs: serve the app with `astra serve` "
                                            "(in tests, use TestClient as a context manager)", code="MCP_NOT_RUNNING"))
            return
        bases = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("base") or None
        user = AuthenticatedUser(AccessToken(token="", client_id=actor.key_id or "local", scopes=[]))
        scope = {**scope, ACTOR_SCOPE_KEY: actor, BASES_SCOPE_KEY: bases, "user": user}
        await self.manager.handle_request(scope, receive, send)


async def _answer(send: Send, error: AstralyxError) -> None:
    status, body = error.status, json.dumps(error.to_dict()).encode()
    headers: list[tuple[bytes, Any]] = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="astralyx"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
