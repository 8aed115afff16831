"""POST /v1/chat/completions: the OpenAI-compatible chat gateway (built-in tools run here)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, StreamingResponse
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from ...auth.actor import Actor
from ...core import Astralyx
from ...errors import AstralyxError
from ..body import parse_json
from ..deps import get_actor, get_core
from ..errors import log

router = APIRouter(tags=["chat"])


@router.post("/chat/completions")
async def chat_completions(
    request: Request, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> Any:
    """A chat completion from a chat deployment (`model` = its name), with its built-in tools run by the gateway.

    The response (or the last chunk of a stream) carries `astralyx`: the receipts of the tool calls,
    the drafts to show as cards, the saves made (with their undo addresses).
    """
    body = parse_json(await request.body())
    turn = await run_in_threadpool(core.gateway.prepare, actor, body)
    if not body.get("stream"):
        return JSONResponse(await run_in_threadpool(core.gateway.complete, turn))
    chunks = core.gateway.stream(turn)
    # Wait for the model's first event: a deployment that does not answer is still an HTTP error.
    first = await run_in_threadpool(next, chunks, None)
    return StreamingResponse(_sse(first, chunks), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _sse(first: dict | None, chunks: Iterator[dict]) -> AsyncIterator[str]:
    if first is not None:
        yield _event(first)
    try:
        async for chunk in iterate_in_threadpool(chunks):
            yield _event(chunk)
    except AstralyxError as e:
        yield _event(e.to_dict())
        return
    except Exception:
        log.exception("chat stream failed")
        yield _event({"error": {"code": "INTERNAL", "message": "The answer stopped on an error; the server's log says what"}})
        return
    yield "data: [DONE]\n\n"


def _event(data: dict) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"
