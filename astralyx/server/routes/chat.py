"""POST /v1/chat/completions: the OpenAI-compatible chat gateway (built-in tools run here)."""

from __future__ import annotations

import itertools
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ...auth.actor import Actor
from ...core import Astralyx
from ..body import parse_json
from ..deps import get_actor, get_core
from ..streams import guarded, sse

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
    return sse(guarded(itertools.chain([first] if first is not None else [], chunks), "answer"), done=True)
