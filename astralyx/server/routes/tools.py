"""A deployment's built-in tools: /v1/eos/deployments/<name>/tools.

GET  …/tools                        the tools as the model sees them (name, function, approval)
PUT  …/tools/knowledge/<base>       {"search": bool, "save": bool, "confirm": bool}: the base's tools
                                    (all false: the base's tools removed)

The whole spec can also be PUT at /v1/eos/deployments/<name> (spec.tools); both check the same rules.
"""

from __future__ import annotations

from fastapi import APIRouter, Body, Depends

from ...auth.actor import Actor
from ...core import Astralyx
from ...eos import tools as tool_specs
from ...eos.tools import ToolListing
from ..deps import get_actor, get_core
from ..models import KnowledgeTools
from ..openapi import errors

router = APIRouter(prefix="/eos/deployments/{name}/tools", tags=["deployments"])


@router.get("", response_model=ToolListing, responses=errors(404))
def list_tools(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> ToolListing:
    return tool_specs.listing(core.deployments.get(actor, name))


@router.put("/knowledge/{base}", response_model=ToolListing, responses=errors(404))
def set_knowledge_tools(
    name: str,
    base: str,
    body: KnowledgeTools | None = Body(default=None, examples=[{"search": True, "save": True, "confirm": True}]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> ToolListing:
    """Give the deployment the base's tools; the answer says who may then search the base through it."""
    flags = body or KnowledgeTools()
    dep = tool_specs.set_knowledge(actor, core.deployments, name, base, search=flags.search, save=flags.save,
                                   confirm=flags.confirm)
    return tool_specs.listing(dep)
