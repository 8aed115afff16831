"""The ASGI application: the REST API under /v1, MCP at /mcp, the console at /.

Its lifespan starts the core (core.start()) and closes it; an app driven without one (the CLI's
in-process client) is given a started core.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import Depends, FastAPI
from starlette.applications import Starlette
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Mount, Route

from .. import __version__, links
from ..core import Astralyx
from . import errors, openapi
from .deps import authenticate
from .limits import BodyLimit, PlainPath
from .routes import (
    access,
    bases,
    chat,
    deployments,
    exchange,
    memory,
    memory_extract,
    memory_imports,
    models,
    notes,
    receipts,
    saves,
    search,
    sync,
    tools,
)

ROUTERS = [access.router, bases.router, notes.router, deployments.router, memory.router, memory_extract.router, search.router]
ROUTERS += [sync.router]  # a base's sync jobs
ROUTERS += [memory_imports.router]  # chat archives imported into a memory
ROUTERS += [exchange.router]  # a base exported and imported
ROUTERS += [chat.router, tools.router, saves.router, receipts.router]
ROUTERS += [models.router, models.library]  # /v1/embeddings, /v1/models; the library at /v1/eos/models


def create_api(core: Astralyx) -> FastAPI:
    api = FastAPI(
        title="Astralyx API",
        version=__version__,
        description="Knowledge bases (Metis), deployments (Eos) and an OpenAI-compatible gateway. "
        "Every route needs `Authorization: Bearer <key>`.",
        openapi_url="/openapi.json",
        docs_url="/docs",
        redoc_url=None,
        dependencies=[Depends(authenticate)],
        responses=openapi.common(),
    )
    api.state.core = core
    errors.install(api)
    for router in ROUTERS:
        api.include_router(router)
    return api


class LazyMcp:
    """/mcp: the MCP endpoint (Streamable HTTP), loaded when the app starts or is first asked for it.

    The SDK takes over half a second to import: the CLI's in-process app, which never serves /mcp,
    does not pay for it. Without the `mcp` extra, /mcp says how to get it.
    """

    def __init__(self, core: Astralyx) -> None:
        self.core = core
        self._endpoint: Any = None

    def endpoint(self) -> Any:
        if self._endpoint is None:
            try:
                from ..mcp.http import McpHttp
            except ImportError:  # pragma: no cover - the `mcp` extra is not installed
                self._endpoint = _mcp_missing
            else:
                self._endpoint = McpHttp(self.core)
        return self._endpoint

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.endpoint()(scope, receive, send)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        # MCP sessions live while the app runs: the SDK's session manager starts and stops with it.
        endpoint = self.endpoint()
        if endpoint is _mcp_missing:
            yield
            return
        async with endpoint.lifespan():
            yield


class LazyConsole:
    """/: the web console, built (its pages' modules, the templates) when the app starts or on its first
    request: the CLI's in-process app, which only asks /v1, does not load it."""

    def __init__(self, core: Astralyx) -> None:
        self.core = core
        self._app: Any = None

    def app(self) -> Any:
        if self._app is None:
            from ..console import create_console

            console = create_console(self.core)
            console.add_exception_handler(Exception, errors.unexpected)
            self._app = console
        return self._app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app()(scope, receive, send)


async def _mcp_missing(scope: Any, receive: Any, send: Any) -> None:
    message = "The MCP server needs the mcp SDK: pip install 'astralyx[mcp]'"
    await errors.error_response("MCP_NOT_INSTALLED", message)(scope, receive, send)


def create_app(core: Astralyx) -> errors.CatchAll:
    api = create_api(core)
    console = LazyConsole(core)
    mcp = LazyMcp(core)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # The core is started before the first request (bootstrap, crash repair, purges) and closed at the end.
        await anyio.to_thread.run_sync(core.start)
        console.app()
        try:
            async with mcp.lifespan():
                yield
        finally:
            await anyio.to_thread.run_sync(core.close)

    app = Starlette(
        routes=[
            Mount(links.API_ROOT, app=api),
            Route("/mcp", endpoint=mcp),
            Mount("/", app=console),
        ],
        # An address no route takes answers in the error shape too (the /v1 API and the console answer their own).
        exception_handlers={Exception: errors.unexpected, StarletteHTTPException: errors.http_error},  # type: ignore[dict-item]
        lifespan=lifespan,
    )
    app.state.core = core
    return errors.CatchAll(PlainPath(BodyLimit(app, core.settings.max_body_bytes, core.settings.max_json_bytes)))
