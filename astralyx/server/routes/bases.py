"""Knowledge bases: /v1/metis/knowledge-bases."""

from __future__ import annotations

from fastapi import APIRouter, Body, Depends

from ...auth.actor import Actor
from ...core import Astralyx
from ..deps import get_actor, get_core
from ..models import BaseIn, BaseList, BaseOut, BaseUpdate
from ..openapi import errors, ok

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


@router.get("", responses=ok(BaseList))
def list_bases(actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return {"knowledge_bases": [b.to_dict() for b in core.bases.list(actor)]}


@router.post("", status_code=201, responses=ok(BaseOut, 404, 409, status=201))
def create_base(
    body: BaseIn = Body(..., examples=[EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> dict:
    """Create a base (404 DEPLOYMENT_NOT_FOUND when its spec names a deployment the workspace lacks). Without
    `spec.embedding` it embeds with the workspace's embedding deployment when one is ready (`"embedding": null`:
    keywords only); `embedding_choice` in the answer says which and why."""
    return core.bases.create(actor, body, default_embedding=True).to_dict()


@router.get("/{name}", responses=ok(BaseOut, 404))
def get_base(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return core.bases.get(actor, name).to_dict()


@router.put("/{name}", responses=ok(BaseOut, 404))
def update_base(
    name: str,
    body: BaseUpdate = Body(..., examples=[EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> dict:
    return core.bases.update(actor, name, body.spec).to_dict()


@router.delete("/{name}", responses=errors(404))
def delete_base(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    changed = core.bases.delete(actor, name)
    # A deployment keeps no tool on a base that is gone: those whose tools named it are said.
    return {"deleted": name, **({"tools_removed_from": changed} if changed else {})}
