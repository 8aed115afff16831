"""The web console, served at `/` by `astra serve`: server-rendered pages over the domain services."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..core import Astralyx
from . import auth, bases, deployments, keys, memory, playground
from .web import HERE, templates


async def home(request: Request) -> Response:
    return RedirectResponse("/metis/knowledge-bases", status_code=303)


async def not_found(request: Request, exc: Exception) -> Response:
    from ..errors import AstralyxError

    status = getattr(exc, "status_code", 404)  # 404 or 405, as Starlette raised it
    error = AstralyxError(f"No page at {request.url.path}", code="NOT_FOUND" if status == 404 else "METHOD_NOT_ALLOWED")
    return templates.TemplateResponse(
        request, "error.html", {"error": error, "actor": None, "flash": None, "path": request.url.path},
        status_code=status,
    )


def create_console(core: Astralyx) -> Starlette:
    routes = [
        Route("/", home, methods=["GET"]),
        *auth.routes,
        *bases.routes,
        *deployments.routes,
        *memory.routes,
        *playground.routes,
        *keys.routes,
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, exception_handlers={404: not_found, 405: not_found})
    app.state.core = core
    return app
