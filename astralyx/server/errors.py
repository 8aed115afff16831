"""Turn every failure into one error shape: {"error": {"code", "message"}}."""

from __future__ import annotations

import logging
import sys
from typing import Any, get_args

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import AstralyxError, describe, error_body, problems, status_of

log = logging.getLogger("astralyx")

_HTTP_CODES = {
    400: "BAD_REQUEST",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    413: "TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
}


def error_response(code: str, message: str, *, status: int | None = None, headers: dict[str, str] | None = None,
                   **details: Any) -> JSONResponse:
    """The error shape as an HTTP answer, with the code's status (`status`: Starlette's own, for its errors)."""
    return JSONResponse(error_body(code, message, details), status_code=status or status_of(code), headers=headers)


def _body_model(request: Request) -> type[Any] | None:
    """The route's body model (server/models.py), whose `invalid` names it and gives the error code."""
    field = getattr(request.scope.get("route"), "body_field", None)
    annotation = getattr(getattr(field, "field_info", None), "annotation", None)
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and hasattr(candidate, "invalid"):
            return candidate
    return None


METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> list[str]:
    """Every method the path takes, over all its routes (Starlette's 405 names only the first route's).

    As in OpenAPI, a concrete path is matched before a template: /eos/receipts/verify takes POST, even though
    GET /eos/receipts/{receipt_id} would also take its name as an id."""
    def takes(routes: list, method: str) -> bool:
        return any(r.matches({**request.scope, "method": method})[0] == Match.FULL for r in routes)

    routes = request.app.router.routes
    concrete = [r for r in _flat(routes) if "{" not in getattr(r, "path", "{")]
    if any(takes(concrete, m) for m in METHODS):
        routes = concrete
    return [m for m in METHODS if takes(routes, m)]


def _flat(routes: list) -> list:
    """The routes of included routers too (FastAPI keeps an included router as one route of the app)."""
    out = []
    for route in routes:
        inner = getattr(getattr(route, "original_router", None), "routes", None)
        out.extend(_flat(inner) if inner is not None else [route])
    return out


def install(app: FastAPI) -> None:
    @app.exception_handler(AstralyxError)
    async def domain_error(request: Request, exc: AstralyxError) -> JSONResponse:
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
        return JSONResponse(exc.to_dict(), status_code=exc.status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(err["type"] == "json_invalid" for err in errors):  # a body FastAPI parsed itself (no content-type)
            return error_response("INVALID_JSON", "The body is not valid JSON: send a JSON object")
        model = _body_model(request)
        ctype = request.headers.get("content-type", "")
        if model is not None and "json" not in ctype and any(err["loc"] == ("body",) for err in errors):
            # FastAPI reads a body as JSON only when it says so: a JSON body sent as form data, or untyped.
            return error_response("UNSUPPORTED_MEDIA_TYPE", f"The body is JSON: send it with the header "
                                  f"'Content-Type: application/json' (it came as {ctype or 'no type'!r})")
        in_body = model is not None and all(err["loc"][:1] == ("body",) for err in errors)
        found = problems(errors, under="body")
        if in_body and model is not None:
            code, message = model.invalid[1], model.describe(found, exc.body)
        else:
            code, message = "INVALID", describe(found, "request", whole="body")
        return error_response(code, message)

    app.add_exception_handler(StarletteHTTPException, http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, unexpected)


async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    """Starlette's and FastAPI's HTTP errors (no route, wrong method, a body it could not parse) in the error shape."""
    code = _HTTP_CODES.get(exc.status_code, "ERROR")
    message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
    headers = dict(exc.headers or {})
    if exc.status_code == 400 and message == "There was an error parsing the body":  # e.g. nested too deep
        code, message = "INVALID_JSON", "The body is not valid JSON, or nests too deep: send it flatter"
    if exc.status_code == 404 and message == "Not Found":
        message = f"No such address: {request.method} {request.url.path} (see /v1/openapi.json)"
    if exc.status_code == 405:
        headers["Allow"] = ", ".join(allowed_methods(request))
        message = f"{request.url.path} does not take {request.method}: it takes {headers['Allow']}"
    return error_response(code, message, status=exc.status_code, headers=headers or None)


INTERNAL_MESSAGE = "Something went wrong on the server; its log says what"


async def unexpected(request: Request, exc: Exception) -> JSONResponse:
    """The 500 handler of every app (API, console, the one around them): logged once, in the error shape."""
    busy = database_busy(exc)
    if busy is not None:  # a database error the engine did not see go by (the engine turns those it sees)
        return JSONResponse(busy.to_dict(), status_code=busy.status, headers={"Retry-After": str(busy.retry_after)})
    _log(exc, request.method, request.url.path)
    return error_response("INTERNAL", INTERNAL_MESSAGE)


def database_busy(exc: BaseException) -> AstralyxError | None:
    """DATABASE_BUSY when `exc` is PostgreSQL's connections running out or the server restarting."""
    if "psycopg" not in sys.modules:  # not on PostgreSQL: no such error
        return None
    from ..engines.postgres import busy

    return busy(exc)


def _log(exc: Exception, method: str | None, path: str | None) -> None:
    # Each app it passes on the way out has the handler: the first logs it.
    if not getattr(exc, "_astralyx_logged", False):
        log.error("unexpected error on %s %s", method, path, exc_info=exc)
        exc._astralyx_logged = True  # type: ignore[attr-defined]


class CatchAll:
    """The outermost layer: no exception leaves the application.

    Starlette answers an unexpected error with the 500 handler and then raises it again for the
    server to log; uvicorn then drops the connection. The handler has logged it already, so once
    the answer is complete the error stops here and the keep-alive connection stays up. An error
    before any answer (in a layer outside the apps) gets the same 500 in the error shape.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = finished = False

        async def watch(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                finished = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            if finished:
                return
            if started:  # half an answer is on the wire: only the server can end it (it closes the connection)
                raise
            busy = database_busy(exc)
            if busy is not None:
                headers = {"Retry-After": str(busy.retry_after)}
                await JSONResponse(busy.to_dict(), status_code=busy.status, headers=headers)(scope, receive, send)
                return
            _log(exc, scope.get("method"), scope.get("path"))
            await error_response("INTERNAL", INTERNAL_MESSAGE)(scope, receive, send)
