"""Model saves and drafts of a base.

GET  /v1/metis/knowledge-bases/<b>/model-saves                     every note models saved, and whether it is still as saved
POST /v1/metis/knowledge-bases/<b>/model-saves/<id>/undo[?force=true]
GET  /v1/metis/knowledge-bases/<b>/drafts                          the drafts awaiting a decision (expired ones gone)
GET  /v1/metis/knowledge-bases/<b>/drafts/<id>                     a draft a model proposed (ask before saving)
POST /v1/metis/knowledge-bases/<b>/drafts/<id>                     change its title or text: {"title", "text"}
POST /v1/metis/knowledge-bases/<b>/drafts/<id>/save                 keep it (optionally edited: {"title", "text"})
POST /v1/metis/knowledge-bases/<b>/drafts/<id>/discard
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from ...auth.actor import Actor
from ...core import Astralyx
from ...errors import BadRequest
from ..body import parse_json
from ..deps import get_actor, get_core

router = APIRouter(prefix="/metis/knowledge-bases/{base}", tags=["model saves"])


@router.get("/model-saves")
def list_saves(base: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return {"knowledge_base": base, "saves": [s.to_dict() for s in core.saves.list(actor, base)]}


@router.get("/model-saves/{save_id}")
def get_save(base: str, save_id: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return core.saves.get(actor, base, save_id).to_dict()


@router.post("/model-saves/{save_id}/undo")
def undo_save(
    base: str, save_id: str, force: bool = False, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> dict:
    return core.saves.undo(actor, base, save_id, force=force).to_dict()


@router.get("/drafts")
def list_drafts(base: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    """The drafts awaiting a decision (newest first), with how long a draft waits and the hourly limit."""
    drafts = core.saves.drafts(actor, base)
    return {"knowledge_base": base, "drafts": [d.to_dict() for d in drafts], **core.saves.draft_rules()}


@router.get("/drafts/{draft_id}")
def get_draft(base: str, draft_id: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return core.saves.draft(actor, base, draft_id).to_dict()


async def _edits(request: Request) -> dict:
    raw = await request.body()
    edits = parse_json(raw, empty={})
    if not isinstance(edits, dict):
        raise BadRequest('Send nothing, or {"title": "...", "text": "..."} to change the draft', code="INVALID_REQUEST")
    return edits


@router.post("/drafts/{draft_id}")
async def edit_draft(
    base: str, draft_id: str, request: Request, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> dict:
    edits = await _edits(request)
    draft = await run_in_threadpool(core.saves.edit_draft, actor, base, draft_id, edits.get("title"), edits.get("text"))
    return draft.to_dict()


@router.post("/drafts/{draft_id}/save")
async def save_draft(
    base: str, draft_id: str, request: Request, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> dict:
    """Keep the draft in the base's saved/ folder (optionally edited: {"title", "text"})."""
    edits = await _edits(request)
    draft, save = await run_in_threadpool(core.saves.save_draft, actor, base, draft_id, edits.get("title"), edits.get("text"))
    return {"draft": draft.to_dict(), "save": save.to_dict()}


@router.post("/drafts/{draft_id}/discard")
def discard_draft(base: str, draft_id: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return {"draft": core.saves.discard_draft(actor, base, draft_id).to_dict()}
