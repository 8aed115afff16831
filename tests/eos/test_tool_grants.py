"""What a deployment's built-in tools let its callers do, said once (eos/tools.py `offers`) for the chat gateway and MCP:
search the base as a reader of the deployment's workspace, save as the tool says."""

from __future__ import annotations

from astralyx.auth.actor import Actor
from astralyx.eos import tools
from astralyx.eos.deployments import DeploymentSpec
from astralyx.metis.bases import parse_request

UPSTREAM = {"type": "upstream", "url": "http://127.0.0.1:9/v1"}


def test_a_deployments_tools_grant_a_search_as_a_viewer_and_a_save_as_the_tool_saves(core):
    admin = Actor.local_owner("default")
    for name in ("handbook", "journal"):
        core.bases.create(admin, parse_request({"metadata": {"name": name}, "spec": {"embedding": None}}))
    spec = DeploymentSpec.model_validate({"model": "scripted", "kind": "chat", "runtime": UPSTREAM, "tools": [
        {"builtin": "search_knowledge", "knowledge_base": "handbook"},
        {"builtin": "save_to_knowledge", "knowledge_base": "journal", "confirm": False},
        {"builtin": "save_to_knowledge", "knowledge_base": "handbook"},
    ]})
    chat = core.deployments.put(admin, "default", "chat", spec)
    caller = Actor.of("default", "caller")
    grants = {(g.tool.name, g.knowledge_base): g for g in tools.offers(chat, caller)}
    search = grants["search_knowledge", "handbook"]
    assert search.reader is not None and (search.reader.workspace, search.reader.role) == ("default", "viewer")
    assert search.save is None and not caller.can("knowledge-bases:read") and search.reader.can("knowledge-bases:read")
    assert (grants["save_to_knowledge", "journal"].save, grants["save_to_knowledge", "journal"].reader) == ("on_its_own", None)
    assert grants["save_to_handbook", "handbook"].save == "ask"
    # No tools through an embedding deployment, nor for an actor that may not call deployments.
    assert tools.offers(core.deployments.get(admin, "e5-small"), caller) == []
    assert tools.offers(chat, Actor("default", "nobody", None, frozenset())) == []
