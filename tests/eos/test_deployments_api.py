"""Deployments as a resource of the workspace: PUT the spec whole, GET, list, DELETE, permissions."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.engines  # records on SQLite and on PostgreSQL


def test_put_get_list_delete(client, scripted_openai):
    base = {"metadata": {"name": "handbook"}, "spec": {"kind": "documents", "sources": []}}
    assert client.post("/v1/metis/knowledge-bases", json=base).status_code == 201
    spec = {
        "model": "qwen3-4b-q4-k-m",
        "kind": "chat",
        "runtime": {"type": "upstream", "url": scripted_openai.url, "model": "qwen3:4b", "timeout": 120},
        "resources": {"cpu": True, "min": 1, "max": 1},
        "tools": [{"builtin": "search_knowledge", "knowledge_base": "handbook"}],
    }
    put = client.put("/v1/eos/deployments/qwen3-4b", json={"spec": spec})
    assert put.status_code == 200, put.text
    got = client.get("/v1/eos/deployments/qwen3-4b").json()
    assert got["metadata"]["name"] == "qwen3-4b" and got["metadata"]["workspace"] == "default"
    assert got["spec"]["runtime"] == {**spec["runtime"], "type": "upstream"}
    assert got["spec"]["resources"] == spec["resources"]
    assert got["status"]["ok"] is True
    assert [t["knowledge_base"] for t in got["spec"]["tools"]] == ["handbook"]
    listed = client.get("/v1/eos/deployments").json()["deployments"]
    assert [d["metadata"]["name"] for d in listed] == ["e5-small", "qwen3-4b"]
    assert all("status" in d for d in listed)
    assert all("status" not in d for d in client.get("/v1/eos/deployments?health=false").json()["deployments"])
    # The spec is taken whole: what is left out goes back to its default.
    client.put("/v1/eos/deployments/qwen3-4b", json={"spec": {**spec, "tools": [], "resources": {"min": 0, "max": 2}}})
    again = client.get("/v1/eos/deployments/qwen3-4b").json()["spec"]
    assert again["tools"] == [] and again["resources"] == {"cpu": True, "min": 0, "max": 2}
    assert client.delete("/v1/eos/deployments/qwen3-4b").json() == {"deleted": "qwen3-4b"}
    assert client.get("/v1/eos/deployments/qwen3-4b").status_code == 404


def test_specs_are_checked_against_the_library(client):
    def put(spec):
        return client.put("/v1/eos/deployments/d", json={"spec": spec})

    unknown = put({"model": "gpt-17", "kind": "chat"})
    assert unknown.status_code == 422 and unknown.json()["error"]["code"] == "UNKNOWN_MODEL"
    upstream_only = put({"model": "bge-m3", "kind": "embedding"})
    assert upstream_only.json()["error"]["code"] == "UPSTREAM_ONLY" and "ollama" in upstream_only.json()["error"]["message"]
    wrong_kind = put({"model": "multilingual-e5-small", "kind": "chat"})
    assert wrong_kind.json()["error"]["code"] == "WRONG_MODEL_KIND"
    bad = put({"model": "qwen3:4b", "kind": "chat", "runtime": {"type": "upstream"}})
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "INVALID_SPEC" and "url" in bad.json()["error"]["message"]
    assert put({"model": "qwen3:4b", "kind": "chat", "resources": {"min": 3, "max": 1}}).status_code == 422
    upstream = {"type": "upstream", "url": "http://h/v1"}
    assert put({"model": "x", "kind": "chat", "runtime": upstream, "extra": 1}).status_code == 422
    e5 = {"model": "e5-small", "kind": "embedding"}
    assert client.put("/v1/eos/deployments/Bad_Name", json={"spec": e5}).status_code == 422


def test_embedded_chat_model_not_added_yet_is_valid_but_not_ready(client, core):
    assert client.put("/v1/eos/deployments/qwen3-4b", json={"spec": {"model": "qwen3:4b", "kind": "chat"}}).status_code == 200
    status = client.get("/v1/eos/deployments/qwen3-4b").json()["status"]
    assert status["ok"] is False
    assert "astra eos add" in status["detail"] or "llama" in status["detail"]


def test_permissions(key_client):
    viewer, editor = key_client("viewer"), key_client("editor")
    spec = {"spec": {"model": "multilingual-e5-small", "kind": "embedding"}}
    denied = viewer.put("/v1/eos/deployments/e5", json=spec)
    assert denied.status_code == 403 and denied.json()["error"]["details"]["permission"] == "deployments:update"
    assert viewer.get("/v1/eos/deployments/e5-small").status_code == 200
    assert viewer.delete("/v1/eos/deployments/e5-small").status_code == 403
    assert editor.put("/v1/eos/deployments/e5", json=spec).status_code == 200
    other = key_client("admin", workspace="acme")
    assert other.get("/v1/eos/deployments/e5").status_code == 404
    # The other workspace sees only its own deployments (its own e5-small).
    theirs = other.get("/v1/eos/deployments").json()["deployments"]
    assert [(d["metadata"]["name"], d["metadata"]["workspace"]) for d in theirs] == [("e5-small", "acme")]


def test_library_api(client, key_client):
    models = {m["name"]: m for m in client.get("/v1/eos/models").json()["models"]}
    assert set(models) >= {"multilingual-e5-small", "all-minilm-l6-v2", "qwen3-4b-q4-k-m", "bge-m3", "smollm2-135m",
                           "gemma3-270m"}
    e5 = models["multilingual-e5-small-int8"]
    assert e5["default"] and e5["present"] and e5["dimensions"] == 384 and e5["licence"] == "MIT"
    # The three ways to run e5-small say what each costs.
    for name in ("multilingual-e5-small-int8", "multilingual-e5-small", "multilingual-e5-small-q4"):
        assert models[name]["speed"] and models[name]["memory_bytes"] > 0 and models[name]["size_bytes"] > 0
    assert models["bge-m3"]["runs"] == "upstream only" and models["bge-m3"]["present"] is False
    for small in ("smollm2-135m", "gemma3-270m"):
        assert "too small to extract facts" in models[small]["caveat"]
    assert client.get("/v1/eos/models/qwen3:4b").json()["name"] == "qwen3-4b-q4-k-m"
    assert client.get("/v1/eos/models/nope").json()["error"]["code"] == "MODEL_NOT_FOUND"
    # Model files are the instance's: an admin of another workspace may look, not add.
    other = key_client("admin", workspace="acme")
    assert other.get("/v1/eos/models").status_code == 200
    assert other.post("/v1/eos/models/qwen3:4b/add", json={}).status_code == 403
