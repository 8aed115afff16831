"""Keys, roles and workspaces: 401 without a key, 403 naming the permission, 404 across workspaces."""

from __future__ import annotations

import re

import pytest

from astralyx.server.app import create_api

pytestmark = pytest.mark.engines  # records on SQLite and on PostgreSQL


def _routes(core):
    """Every operation of the OpenAPI document, with its parameters filled in."""
    for path, operations in create_api(core).openapi()["paths"].items():
        for method in operations:
            yield method.upper(), "/v1" + re.sub(r"\{[^}]+\}", "x.md", path)


def test_every_api_route_needs_a_key(core, anon):
    routes = list(_routes(core))
    assert len(routes) > 10
    for method, path in routes:
        response = anon.request(method, path)
        assert response.status_code == 401, (method, path, response.text)
        assert response.json()["error"]["code"] == "UNAUTHORIZED"
        assert "Authorization: Bearer" in response.json()["error"]["message"]


def test_a_wrong_or_revoked_key_is_refused(client, anon, app):
    from starlette.testclient import TestClient

    assert anon.get("/v1/whoami", headers={"Authorization": "Bearer nope"}).json()["error"]["code"] == "INVALID_KEY"
    created = client.post("/v1/keys", json={"role": "viewer", "name": "ci"}).json()
    viewer = TestClient(app, headers={"Authorization": f"Bearer {created['key']}"})
    assert viewer.get("/v1/whoami").json()["role"] == "viewer"
    assert client.delete(f"/v1/keys/{created['id']}").status_code == 200
    assert viewer.get("/v1/whoami").status_code == 401


def test_keys_are_stored_hashed(client, core):
    created = client.post("/v1/keys", json={"role": "editor"}).json()
    if core.db.engine == "sqlite":
        raw = (core.home / "astralyx.db").read_bytes()
        assert created["key"].encode() not in raw
        assert b"test-admin-token" not in raw
    stored = repr([tuple(r) for r in core.db.query("SELECT * FROM keys")])  # what either engine holds
    assert created["key"] not in stored and "test-admin-token" not in stored
    listed = client.get("/v1/keys").json()["keys"]
    assert {k["id"] for k in listed} >= {created["id"]}
    assert all("key" not in k and "hash" not in k for k in listed)
    admin = next(k for k in listed if k["name"] == "bootstrap admin")
    assert admin["last_used_at"] is not None


@pytest.mark.parametrize(
    ("role", "method", "path", "body", "permission"),
    [
        ("viewer", "POST", "/v1/metis/knowledge-bases", {"metadata": {"name": "x"}}, "knowledge-bases:manage"),
        ("editor", "POST", "/v1/metis/knowledge-bases", {"metadata": {"name": "x"}}, "knowledge-bases:manage"),
        ("editor", "DELETE", "/v1/metis/knowledge-bases/handbook", None, "knowledge-bases:manage"),
        ("viewer", "PUT", "/v1/metis/knowledge-bases/handbook/notes/a.md", {"content": "hi"}, "knowledge-bases:write-content"),
        ("viewer", "DELETE", "/v1/metis/knowledge-bases/handbook/notes/a.md", None, "knowledge-bases:write-content"),
        ("viewer", "PUT", "/v1/eos/deployments/d", {"spec": {"model": "m", "kind": "chat"}}, "deployments:update"),
        ("editor", "POST", "/v1/keys", {"role": "viewer"}, "keys:manage"),
        ("editor", "POST", "/v1/workspaces", {"name": "other"}, "workspaces:manage"),
    ],
)
def test_missing_permission_is_403_naming_it(client, key_client, role, method, path, body, permission):
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}})
    c = key_client(role)
    response = c.request(method, path, json=body)
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["code"] == "PERMISSION_DENIED"
    assert permission in error["message"]


def test_roles_that_may_do_it_can(client, key_client):
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}})
    editor = key_client("editor")
    assert editor.put("/v1/metis/knowledge-bases/handbook/notes/a.md", json={"content": "hi"}).status_code == 201
    viewer = key_client("viewer")
    assert viewer.get("/v1/metis/knowledge-bases/handbook/notes/a.md").json()["content"] == "hi"


def test_other_workspaces_resources_are_invisible(client, key_client):
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}})
    client.put("/v1/metis/knowledge-bases/handbook/notes/a.md", json={"content": "secret plans"})
    client.put("/v1/eos/deployments/chat", json={"spec": {"model": "m", "kind": "chat"}})
    acme = key_client("admin", workspace="acme")
    assert acme.get("/v1/metis/knowledge-bases").json()["knowledge_bases"] == []
    for method, path in [
        ("GET", "/v1/metis/knowledge-bases/handbook"),
        ("DELETE", "/v1/metis/knowledge-bases/handbook"),
        ("GET", "/v1/metis/knowledge-bases/handbook/notes"),
        ("GET", "/v1/metis/knowledge-bases/handbook/notes/a.md"),
        ("PUT", "/v1/metis/knowledge-bases/handbook/notes/a.md"),
        ("DELETE", "/v1/metis/knowledge-bases/handbook/notes/a.md"),
        ("GET", "/v1/eos/deployments/chat"),
        ("DELETE", "/v1/eos/deployments/chat"),
    ]:
        response = acme.request(method, path, json={"content": "x"} if method == "PUT" else None)
        assert response.status_code == 404, (method, path, response.text)
    # The same name is free in the other workspace, and the original is untouched.
    assert acme.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}}).status_code == 201
    assert client.get("/v1/metis/knowledge-bases/handbook/notes/a.md").json()["content"] == "secret plans"
    assert acme.get("/v1/metis/knowledge-bases/handbook/notes").json()["notes"] == []


def test_workspace_admin_manages_only_own_keys(client, key_client):
    client.post("/v1/workspaces", json={"name": "acme"})
    acme_admin = key_client("admin", workspace="acme")
    assert acme_admin.post("/v1/keys", json={"role": "viewer"}).json()["workspace"] == "acme"
    response = acme_admin.post("/v1/keys", json={"role": "viewer", "workspace": "default"})
    assert response.status_code == 403
    assert acme_admin.get("/v1/workspaces").json()["workspaces"] == [{"name": "acme", "created_at": pytest.approx(
        acme_admin.get("/v1/workspaces").json()["workspaces"][0]["created_at"])}]
    instance_admin_key = client.post("/v1/keys", json={"role": "viewer", "workspace": "acme"})
    assert instance_admin_key.status_code == 201


def test_bootstrap_without_token_writes_admin_key_0600(tmp_path, monkeypatch):
    from astralyx.config import Settings
    from astralyx.core import Astralyx

    monkeypatch.delenv("ASTRALYX_TOKEN", raising=False)
    core = Astralyx(Settings.load(tmp_path / "h")).start()
    key_file = tmp_path / "h" / "admin.key"
    assert core.new_admin_key and key_file.read_text().strip() == core.new_admin_key
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert core.keys.authenticate(core.new_admin_key).role == "admin"
    # A second start creates nothing new.
    again = Astralyx(Settings.load(tmp_path / "h")).start()
    assert again.new_admin_key is None and again.keys.count() == 1


def test_bootstrap_takes_astralyx_token(core, client):
    assert not (core.home / "admin.key").exists()
    assert client.get("/v1/whoami").json() == {
        "workspace": "default",
        "role": "admin",
        "key_id": client.get("/v1/whoami").json()["key_id"],
        "permissions": sorted(core.keys.authenticate("test-admin-token").permissions),
    }


def test_a_new_workspace_gets_the_embedded_embedding_deployment(client, key_client):
    assert client.post("/v1/workspaces", json={"name": "acme"}).status_code == 201
    acme = key_client("viewer", workspace="acme")
    names = [d["metadata"]["name"] for d in acme.get("/v1/eos/deployments?health=false").json()["deployments"]]
    assert names == ["e5-small"]
