"""Remember a conversation: POST /v1/metis/knowledge-bases/<base>/memory/extract.

Proposes facts and keeps nothing; the facts chosen are kept with POST …/memory.
"""

from __future__ import annotations

from fastapi import APIRouter, Body, Depends
from starlette.concurrency import run_in_threadpool

from ...auth.actor import Actor
from ...core import Astralyx
from ...metis.memory.extract import Extraction
from ..deps import get_actor, get_core
from ..models import ConversationIn
from ..openapi import ok

router = APIRouter(prefix="/metis/knowledge-bases/{base}/memory", tags=["memory"])

EXAMPLE = {
    "source": "chat: standup",
    "messages": [
        {"role": "user", "content": "Ana moved to research this week.", "date": "2026-10-12"},
        {"role": "assistant", "content": "Noted: Ana now works in research."},
    ],
}


@router.post("/extract", responses=ok(Extraction, 404, 409, 502, 503))
async def extract(
    base: str,
    body: ConversationIn = Body(..., examples=[EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> Extraction:
    """The extractor reads the conversation and proposes facts, each with what it would become if kept
    (new, replaces, older, known). Nothing of the conversation is stored."""
    messages = [m.model_dump(exclude_unset=True) for m in body.messages]
    # The model call may take minutes on a CPU: off the event loop.
    return await run_in_threadpool(core.extractor.extract, actor, base, messages, source=body.source, said_at=body.said_at)
