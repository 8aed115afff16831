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

from fastapi import APIRouter, Body, Depends
from starlette.concurrency import run_in_threadpool

from ...auth.actor import Actor
from ...core import Astralyx
from ...metis.saves import DiscardedDraft, DraftList, DraftView, ModelSaveList, ModelSaveView, SavedDraft
from ..deps import get_actor, get_core
from ..models import DraftEdit
from ..openapi import ok

router = APIRouter(prefix="/metis/knowledge-bases/{base}", tags=["model saves"])


@router.get("/model-saves", responses=ok(ModelSaveList, 404))
def list_saves(base: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> ModelSaveList:
    return ModelSaveList.model_construct(knowledge_base=base, saves=[s.view() for s in core.saves.list(actor, base)])


@router.get("/model-saves/{save_id}", responses=ok(ModelSaveView, 404))
def get_save(
    base: str, save_id: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> ModelSaveView:
    return core.saves.get(actor, base, save_id).view()


@router.post("/model-saves/{save_id}/undo", responses=ok(ModelSaveView, 404, 409))
def undo_save(
    base: str, save_id: str, force: bool = False, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> ModelSaveView:
    return core.saves.undo(actor, base, save_id, force=force).view()


@router.get("/drafts", responses=ok(DraftList, 404))
def list_drafts(base: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> DraftList:
    """The drafts awaiting a decision (newest first), with how long a draft waits and the hourly limit."""
    drafts = core.saves.drafts(actor, base)
    rules = core.saves.draft_rules()
    return DraftList.model_construct(knowledge_base=base, drafts=[d.view() for d in drafts],
                                     expire_after_days=rules["expire_after_days"], drafts_per_hour=rules["drafts_per_hour"])


@router.get("/drafts/{draft_id}", responses=ok(DraftView, 404))
def get_draft(base: str, draft_id: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> DraftView:
    return core.saves.draft(actor, base, draft_id).view()


EDITS = Body(None, description="Nothing, or the draft's new title or text", examples=[{"title": "…", "text": "…"}])


@router.post("/drafts/{draft_id}", responses=ok(DraftView, 404, 409))
async def edit_draft(
    base: str, draft_id: str, edits: DraftEdit | None = EDITS, actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> DraftView:
    edits = edits or DraftEdit()
    draft = await run_in_threadpool(core.saves.edit_draft, actor, base, draft_id, edits.title, edits.text)
    return draft.view()


@router.post("/drafts/{draft_id}/save", responses=ok(SavedDraft, 404, 409, 429))
async def save_draft(
    base: str, draft_id: str, edits: DraftEdit | None = EDITS, actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> SavedDraft:
    """Keep the draft in the base's saved/ folder (optionally edited: {"title", "text"})."""
    edits = edits or DraftEdit()
    draft, save = await run_in_threadpool(core.saves.save_draft, actor, base, draft_id, edits.title, edits.text)
    return SavedDraft.model_construct(draft=draft.view(), save=save.view())


@router.post("/drafts/{draft_id}/discard", responses=ok(DiscardedDraft, 404, 409))
def discard_draft(
    base: str, draft_id: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> DiscardedDraft:
    return DiscardedDraft.model_construct(draft=core.saves.discard_draft(actor, base, draft_id).view())
