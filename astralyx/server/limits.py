"""Request body limits (413 TOO_LARGE) before the application reads a byte."""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyLimit:
    """Refuse bodies over the limit: by Content-Length when given, else by buffering up to it.

    The HTTP server enforces Content-Length framing, so a declared length is trusted.
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
        limit = self.max_json_bytes if "json" in ctype else self.max_bytes
        length = headers.get(b"content-length")
        if length is not None:
            if length.isdigit() and int(length) > limit:
                await _too_large(send, limit)
                return
            await self.app(scope, receive, send)
            return
        if scope.get("method") in ("GET", "HEAD", "DELETE", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        # Chunked upload: read it whole, within the limit, then hand it on.
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
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


async def _too_large(send: Send, limit: int) -> None:
    body = json.dumps(
        {"error": {"code": "TOO_LARGE", "message": f"The request body is larger than {limit} bytes: send less at once"}}
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
