"""The ASGI application: the REST API under /v1, MCP at /mcp, the console at /."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from .. import __version__
from ..console import create_console
from ..core import Astralyx
from . import errors
from .deps import authenticate
from .limits import BodyLimit
from .routes import access, bases, chat, deployments, memory, memory_extract, models, notes, receipts, saves, search, tools

ROUTERS = [access.router, bases.router, notes.router, deployments.router, memory.router, memory_extract.router, search.router]
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
    )
    api.state.core = core
    errors.install(api)
    for router in ROUTERS:
        api.include_router(router)
    return api


def create_mcp(core: Astralyx):  # type: ignore[no-untyped-def]
    """The MCP endpoint (Streamable HTTP), or an answer that says how to get it when the SDK is not installed."""
    try:
        from ..mcp.http import McpHttp
    except ImportError:  # pragma: no cover - the `mcp` extra is not installed
        class Missing:
            async def __call__(self, scope, receive, send):  # type: ignore[no-untyped-def]
                body = {"error": {"code": "MCP_NOT_INSTALLED",
                                  "message": "The MCP server needs the mcp SDK: pip install 'astralyx[mcp]'"}}
                await JSONResponse(body, status_code=501)(scope, receive, send)

        return Missing(), None
    mcp = McpHttp(core)
    return mcp, mcp.lifespan


def create_app(core: Astralyx) -> errors.CatchAll:
    api = create_api(core)
    console = create_console(core)
    console.add_exception_handler(Exception, errors.unexpected)
    mcp, mcp_lifespan = create_mcp(core)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        # MCP sessions live while the app runs: the SDK's session manager starts and stops with it.
        if mcp_lifespan is None:
            yield
            return
        async with mcp_lifespan():
            yield

    app = Starlette(
        routes=[
            Mount("/v1", app=api),
            Route("/mcp", endpoint=mcp),
            Mount("/", app=console),
        ],
        exception_handlers={Exception: errors.unexpected},
        lifespan=lifespan,
    )
    app.state.core = core
    return errors.CatchAll(BodyLimit(app, core.settings.max_body_bytes, core.settings.max_json_bytes))
