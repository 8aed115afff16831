"""Streamed answers, written once: Server-Sent Events (chat) and NDJSON (sync and reindex progress).

A stream's events come from blocking domain code (a model generating, a sync indexing), run off the
event loop. Once the stream has begun its status cannot change, so an error becomes its last event,
in the error shape, rather than a cut connection. The API and the console use the same helpers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

from starlette.concurrency import iterate_in_threadpool
from starlette.responses import StreamingResponse

from ..errors import AstralyxError, error_body

log = logging.getLogger("astralyx")
Event = dict[str, Any]


async def guarded(source: Iterator[Event], what: str) -> AsyncIterator[Event]:
    """The events of a blocking iterator, each fetched in a thread; an error ends them with an error event."""
    try:
        async for event in iterate_in_threadpool(source):
            yield event
    except AstralyxError as e:
        yield e.to_dict()
    except Exception:
        log.exception("%s failed", what)
        yield error_body("INTERNAL", f"The {what} stopped on an error; the server's log says what")


def _failed(event: Event) -> bool:
    return set(event) == {"error"}


def sse(events: AsyncIterator[Event], *, done: bool = False) -> StreamingResponse:
    """`data: {json}` events; with `done`, OpenAI's closing `data: [DONE]` unless the stream ended on an error."""

    async def body() -> AsyncIterator[str]:
        last: Event = {}
        async for event in events:
            last = event
            yield f"data: {json.dumps(event, ensure_ascii=False)}\n\n"
        if done and not _failed(last):
            yield "data: [DONE]\n\n"

    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def ndjson(events: AsyncIterator[Event]) -> StreamingResponse:
    """One JSON object a line."""

    async def body() -> AsyncIterator[str]:
        async for event in events:
            yield json.dumps(event, ensure_ascii=False) + "\n"

    return StreamingResponse(body(), media_type="application/x-ndjson")
