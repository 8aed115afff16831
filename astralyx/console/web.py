"""What every console page shares: the signed-in actor, rendering, flashes, errors.

The console is a shell over the same domain services as the API: each handler calls
`core.<service>` with the Actor of the signed-in key, so every rule (permissions, limits,
validation) is the domain's. An AstralyxError is shown to the person with its code and message.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar
from urllib.parse import quote, unquote, urlsplit

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from ..auth.actor import Actor
from ..core import Astralyx
from ..errors import AstralyxError, Forbidden, error_body
from ..util import quoted

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")
# A note's path in a link: {{ n.path|urlpath }} (`#`, `%` and spaces are allowed in note names).
templates.env.filters["urlpath"] = lambda value: quoted(str(value), slashes=True)

# The API key itself, in a Secure, HttpOnly, SameSite=Strict cookie: each request is
# authenticated afresh, so a revoked key signs the console out at once.
SESSION_COOKIE = "astralyx_key"
FLASH_COOKIE = "astralyx_flash"
SESSION_MAX_AGE = 12 * 3600

P = ParamSpec("P")
T = TypeVar("T")


def core_of(request: Request) -> Astralyx:
    return request.app.state.core


def actor_of(request: Request) -> Actor | None:
    token = request.cookies.get(SESSION_COOKIE)
    if not token:
        return None
    try:
        return core_of(request).keys.authenticate(token)
    except AstralyxError:
        return None


def same_origin(request: Request) -> bool:
    """A POST must come from a page of this console (SameSite=Strict is the first guard)."""
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin or origin == "null":
        return False
    host = request.headers.get("host", "")
    return urlsplit(origin).netloc == host


def safe_next(target: str | None) -> str:
    """Only a path of this site: never //evil.example or http://…"""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


def set_session(response: Response, request: Request, token: str) -> None:
    response.set_cookie(
        SESSION_COOKIE, token, max_age=SESSION_MAX_AGE, path="/", secure=True, httponly=True, samesite="strict"
    )


def clear_session(response: Response) -> None:
    response.delete_cookie(SESSION_COOKIE, path="/", secure=True, httponly=True, samesite="strict")


@dataclass
class Ctx:
    """One request of a signed-in person."""

    request: Request
    core: Astralyx
    actor: Actor

    async def form(self) -> FormData:
        return await self.request.form()

    async def upload(self, field: str, missing: str) -> tuple[str, bytes]:
        """The file a form sent in `field` (its name and bytes), or NO_FILE saying `missing`."""
        file = (await self.form()).get(field)
        if isinstance(file, str) or file is None or not file.filename:
            raise AstralyxError(missing, code="NO_FILE")
        return file.filename, await file.read()

    async def json(self) -> Any:
        from ..server.body import parse_json  # here: the server package imports the console

        return parse_json(await self.request.body())

    async def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Domain code is synchronous (SQLite, files, model calls): run it off the event loop (its types kept, so
        mypy checks each call as if it were made directly)."""
        return await run_in_threadpool(fn, *args, **kwargs)

    def render(self, name: str, status: int = 200, **context: Any) -> Response:
        flash = _read_flash(self.request)
        context.update(actor=self.actor, flash=flash, path=self.request.url.path, can=self.actor.can)
        response = templates.TemplateResponse(self.request, name, context, status_code=status)
        if flash is not None:
            response.delete_cookie(FLASH_COOKIE, path="/")
        return response

    def redirect(self, url: str, message: str | None = None, *, error: AstralyxError | None = None) -> Response:
        response = RedirectResponse(url, status_code=303)
        if error is not None:
            _set_flash(response, {"kind": "error", "code": error.code, "text": error.message})
        elif message:
            _set_flash(response, {"kind": "ok", "text": message})
        return response


def _set_flash(response: Response, flash: dict[str, str]) -> None:
    response.set_cookie(FLASH_COOKIE, quote(json.dumps(flash)), max_age=60, path="/", httponly=True, samesite="strict")


def _read_flash(request: Request) -> dict[str, str] | None:
    raw = request.cookies.get(FLASH_COOKIE)
    if not raw:
        return None
    try:
        value = json.loads(unquote(raw))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


Handler = Callable[[Ctx], Awaitable[Response]]


def page(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """An HTML page or form action. Not signed in: to the sign-in page.

    A failed action goes back to where the form was (the page itself for a GET) with the
    error's code and message shown at the top.
    """

    async def endpoint(request: Request) -> Response:
        actor = await run_in_threadpool(actor_of, request)
        if actor is None:
            target = request.url.path if request.method == "GET" else "/"
            return RedirectResponse("/sign-in?next=" + quote(target), status_code=303)
        ctx = Ctx(request, core_of(request), actor)
        if request.method != "GET" and not same_origin(request):
            error = Forbidden("This form was not sent from the console's own page: reload and try again",
                              code="CROSS_SITE")
            return ctx.render("error.html", status=403, error=error)
        try:
            return await handler(ctx)
        except AstralyxError as error:
            if request.method == "GET":
                return ctx.render("error.html", status=error.status, error=error)
            referer = urlsplit(request.headers.get("referer", ""))
            back = safe_next((referer.path + ("?" + referer.query if referer.query else "")) or request.url.path)
            return ctx.redirect(back, error=error)

    endpoint.__name__ = handler.__name__
    return endpoint


def api(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """A JSON endpoint for the console's own scripts (cookie-authenticated, same origin only)."""

    async def endpoint(request: Request) -> Response:
        actor = await run_in_threadpool(actor_of, request)
        if actor is None:
            return JSONResponse(error_body("UNAUTHORIZED", "Signed out: sign in again"), 401)
        if request.method != "GET" and not same_origin(request):
            return JSONResponse(error_body("CROSS_SITE", "Not sent from the console"), 403)
        try:
            return await handler(Ctx(request, core_of(request), actor))
        except AstralyxError as error:
            return JSONResponse(error.to_dict(), status_code=error.status)

    endpoint.__name__ = handler.__name__
    return endpoint
