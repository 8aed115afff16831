"""Facts of a memory: /v1/metis/knowledge-bases/<base>/memory.

POST keeps facts ({"facts": [...]}, one step), GET lists the current ones grouped by subject
(?history=true adds what each replaced, ?as_of=DATE what held then, ?subject=…&attribute=… only those,
as MCP's recall; a fact said again lists those dates in said_again), GET/PUT/DELETE …/memory/<id>
read, correct and forget one (DELETE ?history=true also forgets the older facts it replaced).
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from ...auth.actor import Actor
from ...core import Astralyx
from ...metis.memory.service import FactListing, FactView, Forgotten, KeptFacts
from ..deps import get_actor, get_core
from ..models import DATE_PARAM, Correction, FactsIn
from ..openapi import ok

router = APIRouter(prefix="/metis/knowledge-bases/{base}/memory", tags=["memory"])


@router.post("", responses=ok(KeptFacts, 404, 409))
def keep_facts(
    base: str, body: FactsIn, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> KeptFacts:
    """Keep facts: what became of each (change: new, replaces, older, known, or confirms — known, said on
    another date, which the fact records in said_again) and how many older facts were replaced."""
    return core.memory.keep(actor, base, list(body.facts))


@router.get("", responses=ok(FactListing, 404, 409))
def list_facts(
    base: str,
    history: bool = False,
    as_of: str | None = Query(None, description="What held on this date", json_schema_extra=DATE_PARAM),
    subject: str | None = Query(None, description="Only facts about this subject (without regard to case)"),
    attribute: str | None = Query(None, description="Only facts of this attribute (without regard to case)"),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> FactListing:
    return core.memory.list(actor, base, history=history, as_of=as_of, subject=subject, attribute=attribute)


@router.get("/{fact_id}", responses=ok(FactView, 404, 409))
def read_fact(base: str, fact_id: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> FactView:
    return FactView.of(core.memory.get(actor, base, fact_id))


@router.put("/{fact_id}", responses=ok(FactView, 404, 409))
def correct_fact(
    base: str, fact_id: str, body: Correction, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> FactView:
    """Correct a fact's wording (its history is kept)."""
    return FactView.of(core.memory.edit(actor, base, fact_id, body.fact, said_at=body.said_at, source=body.source))


@router.delete("/{fact_id}", responses=ok(Forgotten, 404, 409))
def forget_fact(
    base: str, fact_id: str, history: bool = False, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> Forgotten:
    return core.memory.forget(actor, base, fact_id, history=history)
