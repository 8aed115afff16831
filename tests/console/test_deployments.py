"""Eos ▸ Deployments: the list and a deployment's Tools tab (Search, Save notes, the warning before Save on its own)."""

from __future__ import annotations

from playwright.sync_api import expect

from astralyx.auth.actor import Actor
from astralyx.metis.bases import parse_request

from .conftest import deploy, sign_in

OWNER = Actor.local_owner("default")


def make_bases(core, *names: str) -> None:
    for name in names:
        core.bases.create(OWNER, parse_request({"metadata": {"name": name}}))


def test_add_tools_to_a_deployment(signed_in, live_server, shot):
    page, core = signed_in, live_server.core
    deploy(core, "chat", "chat")
    make_bases(core, "handbook", "journal")

    page.get_by_role("link", name="Deployments").click()
    expect(page.get_by_role("link", name="chat", exact=True)).to_be_visible()
    # Health: the list calls no upstream; the deployment's page asks it (nothing answers on port 9), and the
    # list shows that check from then on.
    expect(page.get_by_role("row", name="chat")).to_contain_text("not checked yet")
    page.get_by_role("link", name="chat", exact=True).click()
    expect(page.get_by_role("row", name="Model")).to_contain_text("chat")
    expect(page.get_by_role("row", name="Health")).to_contain_text("not answering")
    shot(page, "deployment")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Deployments").click()
    expect(page.get_by_role("row", name="chat")).to_contain_text("not answering")
    shot(page, "deployments")
    page.get_by_role("link", name="chat", exact=True).click()
    page.get_by_role("link", name="Tools").click()
    expect(page.get_by_text("No built-in tools yet.")).to_be_visible()

    # Under Knowledge, add handbook with Search and Save notes (ask before saving, the default).
    add = page.get_by_role("form", name="Add a base")
    add.get_by_label("Knowledge base").select_option("handbook")
    add.get_by_label("Search").check()
    add.get_by_label("Save notes").check()
    expect(add.get_by_label("Ask before saving")).to_be_checked()
    add.get_by_role("button", name="Add base").click()
    expect(page.get_by_role("status")).to_contain_text("Anyone who may call chat can search handbook through it")
    expect(page.get_by_role("note")).to_contain_text("can have its model search handbook through it")
    tools = core.deployments.find("default", "chat").spec.tools
    assert tools == [{"builtin": "search_knowledge", "knowledge_base": "handbook"},
                     {"builtin": "save_to_knowledge", "knowledge_base": "handbook"}]

    # journal: Save on its own. The page warns as soon as it is chosen, and asks before saving it.
    add = page.get_by_role("form", name="Add a base")
    add.get_by_label("Knowledge base").select_option("journal")
    add.get_by_label("Search").uncheck()
    add.get_by_label("Save notes").check()
    add.get_by_label("Save on its own").check()
    expect(add.get_by_text("The model will save notes without asking.")).to_be_visible()
    add.get_by_role("button", name="Add base").click()
    expect(page.get_by_role("heading", name="Let chat save to journal on its own?")).to_be_visible()
    shot(page, "deployment-tools-warning")
    assert len(core.deployments.find("default", "chat").spec.tools) == 2  # nothing changed yet
    page.get_by_role("button", name="Save on its own").click()
    expect(page.get_by_role("status")).to_contain_text("journal: Save notes (save on its own)")
    rows = page.get_by_role("table", name="Built-in tools of chat").get_by_role("row")
    expect(rows).to_have_text([
        "ToolFunctionApproval",
        "search_knowledge(search_knowledge: handbook)-",
        "save_to_knowledge(save_to_knowledge: handbook)-",
        "save_to_journal(save_to_knowledge: journal, saves on its own)-",
    ])
    shot(page, "deployment-tools")
    assert core.deployments.find("default", "chat").spec.tools[-1] == {
        "builtin": "save_to_knowledge", "knowledge_base": "journal", "confirm": False}

    # Removing a base's tools.
    page.get_by_role("form", name="Tools on handbook").get_by_role("button", name="Remove handbook").click()
    expect(page.get_by_role("status")).to_contain_text("Removed handbook's tools from chat")
    assert [t["knowledge_base"] for t in core.deployments.find("default", "chat").spec.tools] == ["journal"]


def test_a_viewer_sees_tools_but_cannot_change_them(page, live_server):
    core = live_server.core
    deploy(core, "chat", "chat")
    _, token = core.keys.create(None, "default", "viewer")
    sign_in(page, token)
    page.goto("/eos/deployments/chat/tools")
    expect(page.get_by_text("Your role (viewer) cannot change deployments.")).to_be_visible()
    expect(page.get_by_role("button", name="Add base")).to_have_count(0)


def test_deploy_a_library_model_on_an_upstream_server_and_undeploy_it(signed_in, live_server, scripted_openai, shot):
    page, core = signed_in, live_server.core
    page.get_by_role("link", name="Models").click()
    shot(page, "models")
    page.get_by_role("link", name="Qwen3", exact=True).click()
    expect(page.get_by_role("row", name="qwen3-4b-q4-k-m")).to_contain_text("Q4_K_M default")
    page.get_by_role("link", name="Deploy qwen3-4b-q4-k-m").click()
    expect(page.get_by_label("Model", exact=True)).to_have_value("qwen3-4b-q4-k-m")
    page.get_by_label("Name", exact=True).fill("qwen3-4b")
    page.get_by_label("On an OpenAI-compatible server").check()
    page.get_by_label("Server URL").fill(scripted_openai.url)
    page.get_by_label("Model name on that server (optional)").fill("scripted")
    page.get_by_role("button", name="Deploy").click()
    expect(page.get_by_role("status")).to_contain_text("Deployed qwen3-4b: qwen3-4b-q4-k-m (chat)")
    expect(page.get_by_role("row", name="Health")).to_contain_text("answers")
    dep = core.deployments.find("default", "qwen3-4b")
    assert dep.spec.runtime.type == "upstream" and dep.spec.runtime.model == "scripted" and dep.spec.resources.cpu

    # What the form or the domain refuses is said, with its code; nothing is deployed.
    page.goto("/eos/deployments/new?model=bge-m3")
    page.get_by_label("Name", exact=True).fill("bge")
    page.get_by_role("button", name="Deploy").click()
    expect(page.get_by_role("alert")).to_contain_text("Give the server's URL")
    page.goto("/eos/deployments/new?model=bge-m3")
    page.get_by_label("In the service (embedded)").check()
    page.get_by_role("button", name="Deploy").click()
    expect(page.get_by_role("alert")).to_contain_text("UPSTREAM_ONLY")
    assert core.deployments.find("default", "bge") is None and core.deployments.find("default", "bge-m3") is None

    page.goto("/eos/deployments/qwen3-4b")
    page.get_by_role("link", name="Undeploy…").click()
    page.get_by_role("button", name="Undeploy qwen3-4b").click()
    expect(page.get_by_role("status")).to_contain_text("Undeployed qwen3-4b")
    assert core.deployments.find("default", "qwen3-4b") is None


def test_share_a_deployment_with_another_workspace(signed_in, live_server, shot):
    page, core = signed_in, live_server.core
    deploy(core, "chat", "chat")
    make_bases(core, "handbook")
    core.workspaces.create(None, "acme")
    from astralyx.eos import tools as tool_specs

    tool_specs.set_knowledge(OWNER, core.deployments, "chat", "handbook", search=True, save=False)

    page.goto("/eos/deployments/chat")
    expect(page.get_by_text("Not shared: only this workspace's people and keys may call it.")).to_be_visible()
    share = page.get_by_role("form", name="Share with a workspace")
    expect(share).to_contain_text("default/chat")
    share.get_by_label("Share with workspace").fill("acme")
    share.get_by_role("button", name="Share").click()
    expect(page.get_by_role("status")).to_contain_text("Shared chat with acme: its keys call it as default/chat")
    assert core.deployments.find("default", "chat").spec.shared_with == ["acme"]
    shot(page, "deployment-sharing")

    # The Tools tab says who can search through it.
    page.get_by_role("link", name="Tools").click()
    expect(page.get_by_text("Shared with acme: their keys can have its model search handbook through it as well."))\
        .to_be_visible()

    # A workspace that does not exist is refused with its code; stopping takes effect at once.
    page.goto("/eos/deployments/chat")
    share = page.get_by_role("form", name="Share with a workspace")
    share.get_by_label("Share with workspace").fill("nowhere")
    share.get_by_role("button", name="Share").click()
    expect(page.get_by_role("alert")).to_contain_text("WORKSPACE_NOT_FOUND")
    page.goto("/eos/deployments/chat")
    page.get_by_role("button", name="Stop sharing with acme").click()
    expect(page.get_by_role("status")).to_contain_text("chat is no longer shared with acme")
    assert core.deployments.find("default", "chat").spec.shared_with == []


def test_deploy_from_a_model_familys_page_as_the_memory_doc_says(signed_in, live_server, shot):
    """Eos → Models → Library, open Qwen3, choose 4B and its default quantisation, and press Deploy. Name:
    qwen3-4b. Runs on: CPUs only. Clear Scale to zero when idle."""
    page, core = signed_in, live_server.core
    page.get_by_role("link", name="Models").click()
    page.get_by_role("link", name="Qwen3", exact=True).click()
    expect(page.get_by_role("heading", name="Qwen3", exact=True)).to_be_visible()
    for size in ("0.6B", "1.7B", "4B", "8B"):
        expect(page.get_by_role("cell", name=size, exact=True).first).to_be_visible()
    form = page.get_by_role("form", name="Deploy Qwen3")
    expect(form.get_by_label("4B", exact=True)).to_be_checked()
    expect(form.get_by_label("Quantisation")).to_have_value("")  # the size's default
    form.get_by_label("Name", exact=True).fill("qwen3-4b")
    form.get_by_label("CPUs only").check()
    expect(form.get_by_label("Scale to zero when idle")).to_be_checked()
    form.get_by_label("Scale to zero when idle").uncheck()
    shot(page, "models-qwen3")
    form.get_by_role("button", name="Deploy").click()
    expect(page.get_by_role("status")).to_contain_text("Deployed qwen3-4b: qwen3-4b-q4-k-m (chat)")
    dep = core.deployments.find("default", "qwen3-4b")
    assert dep.spec.model == "qwen3-4b-q4-k-m" and dep.spec.resources.cpu
    assert (dep.spec.resources.min, dep.spec.resources.max) == (1, 1)

    # Another size at its default, scaling to zero; a quantisation a size does not have is refused.
    page.goto("/eos/models/qwen3")
    form = page.get_by_role("form", name="Deploy Qwen3")
    form.get_by_label("8B", exact=True).check()
    form.get_by_label("Name", exact=True).fill("qwen3-big")
    form.get_by_label("Any device").check()
    form.get_by_role("button", name="Deploy").click()
    expect(page.get_by_role("status")).to_contain_text("Deployed qwen3-big: qwen3-8b-q4-k-m (chat); it scales to zero")
    dep = core.deployments.find("default", "qwen3-big")
    assert dep.spec.resources.min == 0 and not dep.spec.resources.cpu
    expect(page.get_by_role("row", name="Resources")).to_contain_text("scales to zero when idle")
    page.goto("/eos/models/qwen3")
    form = page.get_by_role("form", name="Deploy Qwen3")
    form.get_by_label("0.6B", exact=True).check()
    form.get_by_label("Quantisation").select_option("Q4_K_M")
    form.get_by_role("button", name="Deploy").click()
    expect(page.get_by_role("alert")).to_contain_text("UNKNOWN_MODEL")
    # The same name twice is refused, as on the model's page: nothing is replaced.
    page.goto("/eos/models/qwen3")
    form = page.get_by_role("form", name="Deploy Qwen3")
    form.get_by_label("Name", exact=True).fill("qwen3-4b")
    form.get_by_role("button", name="Deploy").click()
    expect(page.get_by_role("alert")).to_contain_text("DEPLOYMENT_EXISTS")
    assert core.deployments.find("default", "qwen3-4b").spec.resources.min == 1


def test_a_deployment_scaled_to_zero_says_so(signed_in, live_server):
    page, core = signed_in, live_server.core
    from astralyx.eos.deployments import parse_spec

    spec = parse_spec({"model": "multilingual-e5-small", "kind": "embedding", "resources": {"min": 0, "max": 1}})
    core.deployments.put(OWNER, "default", "e5-zero", spec)
    page.goto("/eos/deployments/e5-zero")
    expect(page.get_by_role("row", name="Health")).to_contain_text("scaled to zero")
    expect(page.get_by_role("row", name="Resources")).to_contain_text("scales to zero when idle")


def test_an_upstream_deployment_with_min_0_does_not_say_it_scales_to_zero(signed_in, live_server, scripted_openai):
    page, core = signed_in, live_server.core
    from astralyx.eos.deployments import parse_spec

    # An upstream model runs on its own server: min 0 unloads nothing here (spec.scales_to_zero is False).
    spec = parse_spec({"model": "qwen3:4b", "kind": "chat", "runtime": {"type": "upstream", "url": scripted_openai.url},
                       "resources": {"min": 0, "max": 1}})
    core.deployments.put(OWNER, "default", "remote-zero", spec)
    page.goto("/eos/deployments/remote-zero")
    expect(page.get_by_role("row", name="Resources")).to_contain_text("0–1 replicas")
    expect(page.get_by_role("row", name="Resources")).not_to_contain_text("scales to zero")
