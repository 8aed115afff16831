"""Request body limits before the application reads a byte: size (413 TOO_LARGE) and, for JSON
bodies, the rule of `body.parse_json` (400 INVALID_JSON)."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import AstralyxError
from .body import parse_json


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
    await answer(send, 413, {"error": {"code": "TOO_LARGE", "message": message}})


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
