"""Turn every failure into one error shape: {"error": {"code", "message"}}."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import AstralyxError

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


def error_response(status: int, code: str, message: str, **details) -> JSONResponse:
    body: dict = {"error": {"code": code, "message": message}}
    if details:
        body["error"]["details"] = details
    return JSONResponse(body, status_code=status)


def install(app: FastAPI) -> None:
    @app.exception_handler(AstralyxError)
    async def domain_error(request: Request, exc: AstralyxError) -> JSONResponse:
        return JSONResponse(exc.to_dict(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"] if p != "body")
            parts.append(f"{loc or 'body'}: {err['msg']}")
        return error_response(422, "INVALID", "The request is not valid: " + "; ".join(parts))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "ERROR")
        message = exc.detail if isinstance(exc.detail, str) else str(exc.detail)
        if exc.status_code == 404 and message == "Not Found":
            message = f"No such address: {request.method} {request.url.path} (see /v1/openapi.json)"
        return error_response(exc.status_code, code, message)

    app.add_exception_handler(Exception, unexpected)


INTERNAL_MESSAGE = "Something went wrong on the server; its log says what"


async def unexpected(request: Request, exc: Exception) -> JSONResponse:
    """The 500 handler of every app (API, console, the one around them): logged once, in the error shape."""
    _log(exc, request.method, request.url.path)
    return error_response(500, "INTERNAL", INTERNAL_MESSAGE)


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
            _log(exc, scope.get("method"), scope.get("path"))
            await error_response(500, "INTERNAL", INTERNAL_MESSAGE)(scope, receive, send)
