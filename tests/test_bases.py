"""Knowledge bases as the docs write them: create, list, get, delete (folder and all)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.engines  # records on SQLite and on PostgreSQL

MEMORY = {
    "metadata": {"name": "team"},
    "spec": {"kind": "memory", "sources": [], "embedding": {"deployment": "bge-m3"}, "extractor": {"deployment": "qwen3-4b"}},
}


def _deploy(client, name, kind):
    runtime = {"type": "upstream", "url": "http://127.0.0.1:9/v1"}
    r = client.put(f"/v1/eos/deployments/{name}", json={"spec": {"model": name, "kind": kind, "runtime": runtime}})
    assert r.status_code == 200, r.text


def test_create_memory_as_the_doc_shows(client, core):
    _deploy(client, "bge-m3", "embedding")
    _deploy(client, "qwen3-4b", "chat")
    response = client.post("/v1/metis/knowledge-bases", json=MEMORY)
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["metadata"]["name"] == "team"
    assert body["spec"] == MEMORY["spec"]
    assert (core.home / "bases" / "default" / "team").is_dir()
    assert [b["metadata"]["name"] for b in client.get("/v1/metis/knowledge-bases").json()["knowledge_bases"]] == ["team"]
    assert client.get("/v1/metis/knowledge-bases/team").json()["spec"]["kind"] == "memory"


def test_unknown_deployment_is_a_clear_404(client):
    response = client.post("/v1/metis/knowledge-bases", json=MEMORY)
    assert response.status_code == 404  # DEPLOYMENT_NOT_FOUND is 404 wherever it comes from
    error = response.json()["error"]
    assert error["code"] == "DEPLOYMENT_NOT_FOUND"
    assert "bge-m3" in error["message"] and "astra eos deployments" in error["message"]


def test_deployment_of_the_wrong_kind_is_refused(client):
    _deploy(client, "bge-m3", "chat")
    response = client.post(
        "/v1/metis/knowledge-bases",
        json={"metadata": {"name": "h"}, "spec": {"embedding": {"deployment": "bge-m3"}}},
    )
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "WRONG_DEPLOYMENT_KIND"


def test_optional_parts_and_defaults(client):
    response = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "notes-only"}})
    assert response.status_code == 201
    # no embedding said: the workspace's (tests/test_embedding_default.py)
    assert response.json()["spec"] == {"kind": "documents", "sources": [], "embedding": {"deployment": "e5-small"}}
    memory = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "m"}, "spec": {"kind": "memory"}})
    assert memory.status_code == 201


def test_bad_names_and_duplicates(client):
    for name in ["Team", "a_b", "-x", "x-", "", "a" * 70, "../x", "a b"]:
        response = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": name}})
        assert response.status_code == 422, name
        assert response.json()["error"]["code"] == "INVALID_NAME"
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "ok-1"}}).status_code == 201
    again = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "ok-1"}})
    assert again.status_code == 409 and again.json()["error"]["code"] == "BASE_EXISTS"


def test_invalid_spec_says_which_field(client):
    response = client.post(
        "/v1/metis/knowledge-bases", json={"metadata": {"name": "x"}, "spec": {"kind": "videos"}}
    )
    assert response.status_code == 422
    assert "spec.kind" in response.json()["error"]["message"]
    memory_with_sources = client.post(
        "/v1/metis/knowledge-bases",
        json={"metadata": {"name": "x"}, "spec": {"kind": "memory", "sources": [{"folder": "/tmp"}]}},
    )
    assert memory_with_sources.status_code == 422
    assert "memory keeps facts" in memory_with_sources.json()["error"]["message"]


def test_delete_removes_folder_notes_and_all(client, core):
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "gone"}})
    client.put("/v1/metis/knowledge-bases/gone/notes/a.md", json={"content": "x"})
    folder = core.home / "bases" / "default" / "gone"
    assert (folder / "notes" / "a.md").exists()
    assert client.delete("/v1/metis/knowledge-bases/gone").json() == {"deleted": "gone"}
    assert not folder.exists()
    assert client.get("/v1/metis/knowledge-bases/gone").status_code == 404
    assert not any((core.home / "bases").rglob("a.md"))
    # A new base of the same name starts empty.
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "gone"}})
    assert client.get("/v1/metis/knowledge-bases/gone/notes").json()["notes"] == []


def test_error_shape_and_body_limit(client, core):
    missing = client.get("/v1/metis/knowledge-bases/nope")
    assert missing.status_code == 404
    assert set(missing.json()) == {"error"} and missing.json()["error"]["code"] == "BASE_NOT_FOUND"
    unknown = client.get("/v1/no/such/thing")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "NOT_FOUND"
    big = "x" * (core.settings.max_json_bytes + 1)
    response = client.post("/v1/metis/knowledge-bases", content=big, headers={"content-type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "TOO_LARGE"
    bad_json = client.post("/v1/metis/knowledge-bases", content="{nope", headers={"content-type": "application/json"})
    assert bad_json.status_code == 400 and bad_json.json()["error"]["code"] == "INVALID_JSON"


def test_openapi_document(anon):
    doc = anon.get("/v1/openapi.json").json()
    assert "/metis/knowledge-bases" in doc["paths"]
