"""Workspaces and API keys."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends
from pydantic import Field

from ...auth.actor import Actor
from ...core import Astralyx
from ..deps import get_actor, get_core
from ..models import NAME, Body, WhoAmI
from ..openapi import errors, ok

router = APIRouter(tags=["access"])


class WorkspaceIn(Body):
    invalid = ("workspace", "INVALID_NAME")
    name: str = Field(json_schema_extra=NAME)


class KeyIn(Body):
    invalid = ("key", "INVALID_REQUEST")
    workspace: str | None = None
    role: Literal["caller", "viewer", "editor", "admin"]
    name: str = ""


@router.get("/workspaces")
def list_workspaces(actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return {"workspaces": core.workspaces.list(actor)}


@router.post("/workspaces", status_code=201, responses=errors(409))
def create_workspace(body: WorkspaceIn, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return core.workspaces.create(actor, body.name)


@router.get("/keys", responses=errors(404))
def list_keys(
    workspace: str | None = None, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> dict:
    return {"keys": [k.to_dict() for k in core.keys.list(actor, workspace)]}


@router.post("/keys", status_code=201, responses=errors(404))
def create_key(body: KeyIn, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    key, token = core.keys.create(actor, body.workspace or actor.workspace, body.role, body.name)
    return {**key.to_dict(), "key": token, "note": "This key is shown once: keep it now."}


@router.delete("/keys/{key_id}", responses=errors(404))
def revoke_key(key_id: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return core.keys.revoke(actor, key_id).to_dict()


@router.get("/whoami", responses=ok(WhoAmI))
def whoami(actor: Actor = Depends(get_actor)) -> dict:
    return {
        "workspace": actor.workspace,
        "role": actor.role,
        "key_id": actor.key_id,
        "permissions": sorted(actor.permissions),
    }
