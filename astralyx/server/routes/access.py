"""Workspaces and API keys."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from ...auth.actor import Actor
from ...auth.keys import Key, Workspace
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


class WorkspaceList(BaseModel):
    workspaces: list[Workspace]


class KeyList(BaseModel):
    keys: list[Key]


class NewKey(Key):
    """A key just made: the key itself is in this answer only."""

    key: str
    note: str


@router.get("/workspaces", response_model=WorkspaceList)
def list_workspaces(actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> WorkspaceList:
    return WorkspaceList(workspaces=core.workspaces.list(actor))


@router.post("/workspaces", status_code=201, response_model=Workspace, responses=errors(409))
def create_workspace(body: WorkspaceIn, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> Workspace:
    return core.workspaces.create(actor, body.name)


@router.get("/keys", response_model=KeyList, responses=errors(404))
def list_keys(
    workspace: str | None = None, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> KeyList:
    return KeyList(keys=core.keys.list(actor, workspace))


@router.post("/keys", status_code=201, response_model=NewKey, responses=errors(404))
def create_key(body: KeyIn, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> NewKey:
    key, token = core.keys.create(actor, body.workspace or actor.workspace, body.role, body.name)
    return NewKey(**key.model_dump(), key=token, note="This key is shown once: keep it now.")


@router.delete("/keys/{key_id}", response_model=Key, responses=errors(404))
def revoke_key(key_id: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> Key:
    return core.keys.revoke(actor, key_id)


@router.get("/whoami", response_model=WhoAmI, responses=ok(WhoAmI))
def whoami(actor: Actor = Depends(get_actor)) -> WhoAmI:
    return WhoAmI(workspace=actor.workspace, role=actor.role, key_id=actor.key_id, permissions=sorted(actor.permissions))
