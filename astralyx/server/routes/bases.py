"""Knowledge bases: /v1/metis/knowledge-bases."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends

from ...auth.actor import Actor
from ...core import Astralyx
from ...metis.bases import parse_request
from ..deps import get_actor, get_core

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


@router.get("")
def list_bases(actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return {"knowledge_bases": [b.to_dict() for b in core.bases.list(actor)]}


@router.post("", status_code=201)
def create_base(
    body: dict[str, Any] = Body(..., examples=[EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> dict:
    return core.bases.create(actor, parse_request(body)).to_dict()


@router.get("/{name}")
def get_base(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return core.bases.get(actor, name).to_dict()


@router.put("/{name}")
def update_base(
    name: str,
    body: dict[str, Any] = Body(..., examples=[EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> dict:
    request = parse_request({"metadata": {"name": name}, **body})
    return core.bases.update(actor, name, request.spec).to_dict()


@router.delete("/{name}")
def delete_base(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    core.bases.delete(actor, name)
    return {"deleted": name}
