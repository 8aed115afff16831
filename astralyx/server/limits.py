"""Request limits before the application reads a byte: an address without control characters (404
NOT_FOUND), the body's size (413 TOO_LARGE) and, for JSON bodies, the rule of `body.parse_json` (400
INVALID_JSON)."""

from __future__ import annotations

import json
import re

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import AstralyxError, error_body
from .body import parse_json

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class PlainPath:
    """No address of ours holds a control character: one (`%0A`, `%00`…) is 404 NOT_FOUND, in the error shape.

    No name or path of a base, note, deployment or key has one, so there is nothing there: 404, as for any
    name that does not exist (the document allows any string in a path). Without this rule a line break in
    a path parameter matches no route at all (a route's pattern ends at it), and the answer was the
    router's plain-text 404 rather than the API's.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        found = _CONTROL.search(scope.get("path", "")) if scope["type"] == "http" else None
        if found is None:
            await self.app(scope, receive, send)
            return
        message = (f"No such address: it holds a control character (U+{ord(found.group()):04X}), and no name or path "
                   "of a base, note, deployment or key has one")
        await answer(send, 404, error_body("NOT_FOUND", message))


class BodyLimit:
    """Refuse bodies over the limit: by Content-Length when given, else by buffering up to it.

    The HTTP server enforces Content-Length framing, so a declared length is trusted. A JSON body
    is read whole (it is small: max_json_bytes) and checked once here, so every route, the ones
    FastAPI parses and the ones that parse themselves, answers a bad one the same way.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, max_json_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_json_bytes = max_json_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        ctype = headers.get(b"content-type", b"").decode("latin-1").lower()
        is_json = "json" in ctype
        limit = self.max_json_bytes if is_json else self.max_bytes
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await _too_large(send, limit)
            return
        if not is_json and (length is not None or scope.get("method") in ("GET", "HEAD", "DELETE", "OPTIONS")):
            await self.app(scope, receive, send)
            return
        # A JSON body, or a chunked upload: read it whole, within the limit, then hand it on.
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await _too_large(send, limit)
                return
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        if is_json:
            try:
                parse_json(body)
            except AstralyxError as e:
                await answer(send, e.status, e.to_dict())
                return
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _too_large(send: Send, limit: int) -> None:
    message = f"The request body is larger than {limit} bytes: send less at once"
    await answer(send, 413, error_body("TOO_LARGE", message))


async def answer(send: Send, status: int, error: dict) -> None:
    """A JSON error answer straight onto the wire (below the application, no Response object)."""
    body = json.dumps(error).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
