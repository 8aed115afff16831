"""Deployments: /v1/eos/deployments."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from fastapi import APIRouter, Body, Depends, Path, Query, Response

from ...auth.actor import Actor
from ...core import Astralyx
from ...eos.deploy import DeployRequest, deploy, name_for
from ...eos.deployments import Deployment, DeploymentList, DeploymentView
from ..deps import get_actor, get_core
from ..models import NAME, Deleted, DeployIn, DeploymentIn
from ..openapi import errors, ok

router = APIRouter(prefix="/eos/deployments", tags=["deployments"])

EXAMPLE = {
    "spec": {
        "model": "qwen3:4b",
        "kind": "chat",
        "runtime": {"type": "upstream", "url": "http://127.0.0.1:11434/v1"},
        "tools": [{"builtin": "search_knowledge", "knowledge_base": "handbook"}],
    }
}


def _with_status(core: Astralyx, dep: Deployment, *, check: bool = True) -> DeploymentView:
    return dep.view().with_status(core.runtimes.health(dep.workspace, dep.name, check=check))


@router.get("", response_model=DeploymentList, responses=ok(DeploymentList))
def list_deployments(
    health: bool = Query(True, description="Say whether each deployment answers (status): an upstream's last check "
                                           "or call, never a new call (its own GET checks it)"),
    check: bool = Query(False, description="Ask each upstream now (each at most every 15 s; side by side)"),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> DeploymentList:
    deployments = core.deployments.list(actor)
    if check and deployments:
        # Asked for: upstream checks wait on the network, side by side, each with its own short timeout.
        with ThreadPoolExecutor(max_workers=min(8, len(deployments))) as pool:
            items = list(pool.map(lambda d: _with_status(core, d), deployments))
    else:
        items = [_with_status(core, d, check=False) if health else d.view() for d in deployments]
    return DeploymentList(deployments=items)


@router.post("", status_code=201, response_model=DeploymentView, responses={
    **ok(DeploymentView, 409, status=201),
    200: {"model": DeploymentView,
          "description": "Deployed again (replace: true): new model or resources, the same tools and sharing"}})
def deploy_model(
    response: Response,
    body: DeployIn = Body(..., examples=[{"model": "qwen3-4b-q4-k-m", "name": "qwen3-4b", "cpu": True, "min": 1, "max": 1}]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> DeploymentView:
    """Deploy a model of the library (or, with `url`, an upstream's): the deployment's default name, its runtime and
    resources from a few choices, as the console's deploy form and `astra eos deploy` do (eos/deploy.py). A name
    taken is 409 DEPLOYMENT_EXISTS unless `replace`."""
    request = DeployRequest.model_validate(body.model_dump(exclude={"replace"}))
    existed = core.deployments.find(actor.workspace, name_for(core.models, request)) is not None
    dep = deploy(actor, core.deployments, core.models, request, existing="replace" if body.replace else "refuse")
    if existed:
        response.status_code = 200
    return _with_status(core, dep)


@router.get("/{name}", response_model=DeploymentView, responses=ok(DeploymentView, 404))
def get_deployment(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> DeploymentView:
    return _with_status(core, core.deployments.get(actor, name))


@router.put("/{name}", response_model=DeploymentView, responses=ok(DeploymentView, 404))
def put_deployment(
    name: str = Path(json_schema_extra=NAME),
    body: DeploymentIn = Body(..., examples=[EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> DeploymentView:
    return core.deployments.put(actor, actor.workspace, name, body.spec).view()


@router.delete("/{name}", response_model=Deleted, responses=errors(404))
def delete_deployment(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> Deleted:
    core.deployments.delete(actor, name)
    return Deleted(deleted=name)


@router.put("/{name}/shared-with/{workspace}", response_model=DeploymentView, responses=ok(DeploymentView, 404))
def share_deployment(name: str, workspace: str, actor: Actor = Depends(get_actor),
                     core: Astralyx = Depends(get_core)) -> DeploymentView:
    """Share the deployment with another workspace: its keys call it as `<this workspace>/<name>`, and its
    built-in tools then search and save to this workspace's bases."""
    return core.deployments.share(actor, name, workspace).view()


@router.delete("/{name}/shared-with/{workspace}", response_model=DeploymentView, responses=ok(DeploymentView, 404))
def unshare_deployment(name: str, workspace: str, actor: Actor = Depends(get_actor),
                       core: Astralyx = Depends(get_core)) -> DeploymentView:
    """Stop sharing: the other workspace's keys get 404 from the next call on."""
    return core.deployments.share(actor, name, workspace, stop=True).view()
