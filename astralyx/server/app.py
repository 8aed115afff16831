"""The ASGI application: the REST API under /v1, later the console at /."""

from __future__ import annotations

from fastapi import Depends, FastAPI
from starlette.applications import Starlette
from starlette.routing import Mount

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


def create_app(core: Astralyx) -> errors.CatchAll:
    api = create_api(core)
    console = create_console(core)
    console.add_exception_handler(Exception, errors.unexpected)
    app = Starlette(
        routes=[
            Mount("/v1", app=api),
            Mount("/", app=console),
        ],
        exception_handlers={Exception: errors.unexpected},
    )
    app.state.core = core
    return errors.CatchAll(BodyLimit(app, core.settings.max_body_bytes, core.settings.max_json_bytes))
