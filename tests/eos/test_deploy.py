"""Deploying a model, the one rule the console's forms use: names, runtime, replicas, an existing name."""

from __future__ import annotations

import pytest

from astralyx.auth.actor import Actor
from astralyx.eos.deploy import DeployRequest, deploy
from astralyx.errors import AstralyxError

OWNER = Actor.local_owner("default")


def test_deploy_names_checks_and_refuses_or_replaces(core):
    dep = deploy(OWNER, core.deployments, core.models, DeployRequest(model="qwen3:4b", min=0))
    assert (dep.name, dep.spec.model, dep.spec.kind) == ("qwen3-4b-q4-k-m", "qwen3-4b-q4-k-m", "chat")
    assert dep.spec.scales_to_zero and dep.spec.resources.min == 0 and dep.spec.runtime.type == "embedded"

    with pytest.raises(AstralyxError) as refused:
        deploy(OWNER, core.deployments, core.models, DeployRequest(model="qwen3:4b"))
    assert refused.value.code == "DEPLOYMENT_EXISTS"

    # Deployed again under its name: new resources and runtime, the same tools and sharing.
    core.workspaces.create(None, "acme")
    core.deployments.share(OWNER, "qwen3-4b-q4-k-m", "acme")
    again = deploy(OWNER, core.deployments, core.models,
                   DeployRequest(model="qwen3:4b", min=1, url="http://127.0.0.1:11434/v1"), existing="replace")
    assert again.spec.runtime.type == "upstream" and again.spec.resources.min == 1
    assert again.spec.shared_with == ["acme"]

    with pytest.raises(AstralyxError) as unknown:
        deploy(OWNER, core.deployments, core.models, DeployRequest(model="llama9:70b"))
    assert unknown.value.code == "UNKNOWN_MODEL" and "give a server's URL" in unknown.value.message
    upstream = deploy(OWNER, core.deployments, core.models,
                      DeployRequest(model="llama9:70b", kind="chat", url="http://127.0.0.1:11434/v1"))
    assert upstream.name == "llama9-70b" and upstream.spec.model == "llama9:70b"


def test_a_familys_sizes_and_quantisations(core):
    family = core.models.family(OWNER, "qwen3")
    assert [s.size for s in family.sizes] == ["0.6B", "1.7B", "4B", "8B"]
    four = next(s for s in family.sizes if s.size == "4B").quantisations
    assert [(q.quantisation, q.default) for q in four] == [("Q4_K_M", True), ("Q8_0", False)]
    assert core.models.pick("qwen3", "4B").name == "qwen3-4b-q4-k-m"
    assert core.models.pick("qwen3", "8B", "Q8_0").name == "qwen3-8b-q8-0"
    with pytest.raises(AstralyxError) as missing:
        core.models.pick("qwen3", "0.6B", "Q4_K_M")
    assert missing.value.code == "UNKNOWN_MODEL" and "0.6B Q8_0" in missing.value.message
    with pytest.raises(AstralyxError):
        core.models.family(OWNER, "nope")


def test_a_model_whose_file_is_not_here_says_how_to_add_it(astra):
    out = astra("eos", "deploy", "qwen3-8b-q8-0", "--name", "big").output
    assert "its file is not on this machine: `astra eos add qwen3-8b-q8-0` fetches it" in out
    assert "--file PATH.gguf" in out


def test_the_api_and_the_cli_deploy_through_the_same_rule(client, astra):
    # POST /v1/eos/deployments is eos/deploy.py: the default name, refused when taken unless asked to replace.
    r = client.post("/v1/eos/deployments", json={"model": "qwen3:4b", "min": 0})
    assert r.status_code == 201, r.text
    assert r.json()["metadata"]["name"] == "qwen3-4b-q4-k-m" and r.json()["spec"]["resources"]["min"] == 0
    assert "ok" in r.json()["status"]  # the answer says whether it answers, as GET …/deployments/<name> does
    taken = client.post("/v1/eos/deployments", json={"model": "qwen3:4b"})
    assert taken.status_code == 409 and taken.json()["error"]["code"] == "DEPLOYMENT_EXISTS"
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}}).status_code == 201
    assert client.put("/v1/eos/deployments/qwen3-4b-q4-k-m/tools/knowledge/handbook", json={"search": True}).status_code == 200
    again = client.post("/v1/eos/deployments", json={"model": "qwen3:4b", "min": 1, "max": 2, "replace": True})
    assert again.status_code == 200 and again.json()["spec"]["resources"] == {"cpu": True, "min": 1, "max": 2}
    assert [t["knowledge_base"] for t in again.json()["spec"]["tools"]] == ["handbook"]
    # The CLI asks to replace: deployed again, the tools stay; its errors are the domain's.
    out = astra("eos", "deploy", "qwen3:4b", "--max", "3").output
    assert out.startswith("deployed qwen3-4b-q4-k-m: qwen3-4b-q4-k-m (chat, embedded, any device, 1-3 replicas)")
    tools = client.get("/v1/eos/deployments/qwen3-4b-q4-k-m").json()["spec"]["tools"]
    assert [t["knowledge_base"] for t in tools] == ["handbook"]
    unknown = astra("eos", "deploy", "llama9:70b", ok=False)
    assert unknown.exit_code == 1 and "UNKNOWN_MODEL" in unknown.output and "give a server's URL" in unknown.output
    bad = client.post("/v1/eos/deployments", json={"model": "qwen3:4b", "min": -1})
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "INVALID_SPEC" and "min" in bad.json()["error"]["message"]


def test_a_base_is_made_alike_from_the_cli_and_the_console_form():
    from astralyx.console.bases import base_request
    from astralyx.metis.bases import new_base

    form = {"name": " team ", "kind": "documents", "folder": "/srv/docs", "embedding": "e5-small", "extractor": ""}
    assert base_request(form) == new_base("team", "documents", folders=["/srv/docs"], embedding="e5-small") == {
        "metadata": {"name": "team"}, "spec": {"kind": "documents", "sources": [{"folder": "/srv/docs"}],
                                               "embedding": {"deployment": "e5-small"}}}
    # The console's memory form has no folder; a memory with one is refused where every create is.
    assert base_request({**form, "kind": "memory"})["spec"]["sources"] == []
