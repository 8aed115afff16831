"""Remember a conversation: POST /v1/metis/knowledge-bases/<base>/memory/extract.

Proposes facts and keeps nothing; the facts chosen are kept with POST …/memory.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends
from starlette.concurrency import run_in_threadpool

from ...auth.actor import Actor
from ...core import Astralyx
from ...errors import BadRequest
from ..deps import get_actor, get_core

router = APIRouter(prefix="/metis/knowledge-bases/{base}/memory", tags=["memory"])

EXAMPLE = {
    "source": "chat: standup",
    "messages": [
        {"role": "user", "content": "Ana moved to research this week.", "date": "2026-10-12"},
        {"role": "assistant", "content": "Noted: Ana now works in research."},
    ],
}


@router.post("/extract")
async def extract(
    base: str,
    body: dict[str, Any] = Body(..., examples=[EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> dict:
    """The extractor reads the conversation and proposes facts, each with what it would become if kept
    (new, replaces, older, known). Nothing of the conversation is stored."""
    for key in ("source", "said_at"):
        if body.get(key) is not None and not isinstance(body[key], str):
            raise BadRequest(f"{key} must be a string", code="INVALID_CONVERSATION")
    # The model call may take minutes on a CPU: off the event loop.
    return await run_in_threadpool(
        core.extractor.extract, actor, base, body.get("messages"), source=body.get("source"), said_at=body.get("said_at")
    )
