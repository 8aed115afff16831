"""Deployments: /v1/eos/deployments."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi import APIRouter, Body, Depends, Query

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


def _with_status(core: Astralyx, data: dict[str, Any]) -> dict[str, Any]:
    meta = data["metadata"]
    return {**data, "status": core.runtimes.health(meta["workspace"], meta["name"])}


@router.get("")
def list_deployments(
    health: bool = Query(True, description="Check whether each deployment answers (status)"),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> dict:
    items = [d.to_dict() for d in core.deployments.list(actor)]
    if health and items:
        # Upstream checks wait on the network: side by side, each with its own short timeout.
        with ThreadPoolExecutor(max_workers=min(8, len(items))) as pool:
            items = list(pool.map(lambda d: _with_status(core, d), items))
    return {"deployments": items}


@router.get("/{name}")
def get_deployment(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return _with_status(core, core.deployments.get(actor, name).to_dict())


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


@router.put("/{name}/shared-with/{workspace}")
def share_deployment(name: str, workspace: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    """Share the deployment with another workspace: its keys call it as `<this workspace>/<name>`, and its
    built-in tools then search and save to this workspace's bases."""
    return core.deployments.share(actor, name, workspace).to_dict()


@router.delete("/{name}/shared-with/{workspace}")
def unshare_deployment(name: str, workspace: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    """Stop sharing: the other workspace's keys get 404 from the next call on."""
    return core.deployments.share(actor, name, workspace, stop=True).to_dict()
