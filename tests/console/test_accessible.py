"""Every page: a language, one h1, a skip link, and an accessible name for every control."""

from __future__ import annotations

from astralyx.auth.actor import Actor
from astralyx.eos import tools
from astralyx.metis.bases import parse_request

from .conftest import deploy
from .kit import CHECK

OWNER = Actor.local_owner("default")



def test_every_page_is_labelled(signed_in, live_server):
    page, core = signed_in, live_server.core
    deploy(core, "chat", "chat")
    core.bases.create(OWNER, parse_request({"metadata": {"name": "handbook"}}))
    core.bases.create(OWNER, parse_request({"metadata": {"name": "team"}, "spec": {"kind": "memory"}}))
    core.notes.write(OWNER, "handbook", "notes", "leave.md", "# Leave\n\n25 days.\n")
    core.memory.keep(OWNER, "team", [{"subject": "Ana", "attribute": "role", "fact": "Ana works in research."}])
    fact_id = core.memory.list(OWNER, "team").model_dump()["subjects"][0]["facts"][0]["id"]
    tools.set_knowledge(OWNER, core.deployments, "chat", "handbook", search=True, save=True)
    pages = [
        "/metis/knowledge-bases", "/metis/knowledge-bases/handbook", "/metis/knowledge-bases/handbook?q=days",
        "/metis/knowledge-bases/handbook/notes/leave.md", "/metis/knowledge-bases/handbook/delete",
        "/metis/memory", "/metis/memory/team", "/metis/memory/team?history=1",
        f"/metis/memory/team/facts/{fact_id}/edit", f"/metis/memory/team/facts/{fact_id}/forget",
        "/eos/deployments", "/eos/deployments/chat", "/eos/deployments/chat/tools", "/playground", "/keys",
        "/eos/models", "/eos/models/qwen3", "/eos/deployments/new", "/eos/deployments/chat/undeploy",
        "/metis/knowledge-bases/missing",
    ]
    for path in pages:
        page.goto(path)
        assert page.evaluate(CHECK) == [], path
    page.get_by_role("button", name="Sign out").click()
    assert page.evaluate(CHECK) == [], "/sign-in"
