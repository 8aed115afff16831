"""Knowledge bases: /v1/metis/knowledge-bases."""

from __future__ import annotations

from fastapi import APIRouter, Body, Depends
from pydantic import Field

from ...answers import Answer, absent
from ...auth.actor import Actor
from ...core import Astralyx
from ...metis.bases import KnowledgeBaseView
from ..deps import get_actor, get_core
from ..models import BaseIn, BaseUpdate
from ..openapi import ok

router = APIRouter(prefix="/metis/knowledge-bases", tags=["knowledge bases"])

EXAMPLE = {
    "metadata": {"name": "team"},
    "spec": {
        "kind": "memory",
        "sources": [],
        "embedding": {"deployment": "bge-m3"},
        "extractor": {"deployment": "qwen3-4b"},
    },
}


class KnowledgeBaseList(Answer):
    knowledge_bases: list[KnowledgeBaseView]


class BaseDeleted(Answer):
    deleted: str = Field(description="The base's name")
    tools_removed_from: list[str] | None = absent("The deployments whose tools named it (they no longer do)")


@router.get("", responses=ok(KnowledgeBaseList))
def list_bases(actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> KnowledgeBaseList:
    return KnowledgeBaseList.model_construct(knowledge_bases=[b.view() for b in core.bases.list(actor)])


@router.post("", status_code=201, responses=ok(KnowledgeBaseView, 404, 409, status=201))
def create_base(
    body: BaseIn = Body(..., examples=[EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> KnowledgeBaseView:
    """Create a base (404 DEPLOYMENT_NOT_FOUND when its spec names a deployment the workspace lacks). Without
    `spec.embedding` it embeds with the workspace's embedding deployment when one is ready (`"embedding": null`:
    keywords only); `embedding_choice` in the answer says which and why."""
    return core.bases.create(actor, body, default_embedding=True).view()


@router.get("/{name}", responses=ok(KnowledgeBaseView, 404))
def get_base(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> KnowledgeBaseView:
    return core.bases.get(actor, name).view()


@router.put("/{name}", responses=ok(KnowledgeBaseView, 404))
def update_base(
    name: str,
    body: BaseUpdate = Body(..., examples=[EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> KnowledgeBaseView:
    return core.bases.update(actor, name, body.spec).view()


@router.delete("/{name}", responses=ok(BaseDeleted, 404))
def delete_base(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> BaseDeleted:
    changed = core.bases.delete(actor, name)
    # A deployment keeps no tool on a base that is gone: those whose tools named it are said.
    return BaseDeleted.model_construct(deleted=name, tools_removed_from=changed or None)
