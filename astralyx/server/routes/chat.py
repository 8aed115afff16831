"""POST /v1/chat/completions: the OpenAI-compatible chat gateway (built-in tools run here)."""

from __future__ import annotations

import itertools
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ...auth.actor import Actor
from ...core import Astralyx
from ..deps import get_actor, get_core
from ..models import ChatIn
from ..openapi import errors, sse_answer
from ..streams import guarded, sse

router = APIRouter(tags=["chat"])


ANSWER = sse_answer("The chat completion; with \"stream\": true server-sent events (chat.completion.chunk), "
                    "then data: [DONE]")


@router.post("/chat/completions", responses={200: ANSWER, **errors(404, 429, 502, 503)})
async def chat_completions(body: ChatIn, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> Any:
    """A chat completion from a chat deployment (`model` = its name), with its built-in tools run by the gateway.

    The response (or the last chunk of a stream) carries `astralyx`: the receipts of the tool calls,
    the drafts to show as cards, the saves made (with their undo addresses).
    """
    # The body is the gateway's typed request (models.ChatIn is a ChatRequest): the rest are the model's options.
    turn = await run_in_threadpool(core.gateway.prepare, actor, body)
    if not body.stream:
        return JSONResponse(await run_in_threadpool(core.gateway.complete, turn))
    chunks = core.gateway.stream(turn)
    # Wait for the model's first event: a deployment that does not answer is still an HTTP error.
    first = await run_in_threadpool(next, chunks, None)
    return sse(guarded(itertools.chain([first] if first is not None else [], chunks), "answer"), done=True)
