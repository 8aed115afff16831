"""Deployments: /v1/eos/deployments."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Depends

from ...auth.actor import Actor
from ...core import Astralyx
from ...eos.deployments import parse_spec
from ..deps import get_actor, get_core

router = APIRouter(prefix="/eos/deployments", tags=["deployments"])

EXAMPLE = {
    "spec": {
        "model": "qwen3:4b",
        "kind": "chat",
        "runtime": {"type": "upstream", "url": "http://127.0.0.1:11434/v1"},
        "tools": [{"builtin": "search_knowledge", "knowledge_base": "handbook"}],
    }
}


@router.get("")
def list_deployments(actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return {"deployments": [d.to_dict() for d in core.deployments.list(actor)]}


@router.get("/{name}")
def get_deployment(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return core.deployments.get(actor, name).to_dict()


@router.put("/{name}")
def put_deployment(
    name: str,
    body: dict[str, Any] = Body(..., examples=[EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> dict:
    spec = parse_spec(body.get("spec", body))
    return core.deployments.put(actor, actor.workspace, name, spec).to_dict()


@router.delete("/{name}")
def delete_deployment(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    core.deployments.delete(actor, name)
    return {"deleted": name}
