"""Sharing is revoked whatever the rest of the spec holds, and deleting a base takes its tools out of the
workspace's deployments (eos/deployments.py)."""

from __future__ import annotations

import json

import pytest

from .gateway.conftest import TOOLS, put_deployment

pytestmark = pytest.mark.engines  # records on SQLite and on PostgreSQL

DEPLOYMENT = "/v1/eos/deployments/chat"


@pytest.fixture
def shared_chat(client, key_client, scripted_openai):
    """Deployment `chat` with tools on handbook and journal, shared with acme; acme's key."""
    acme = key_client("caller", workspace="acme")
    for name in ("handbook", "journal"):
        assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": name}}).status_code == 201
    put_deployment(client, "chat", scripted_openai.url, TOOLS)
    assert client.put(f"{DEPLOYMENT}/shared-with/acme").status_code == 200
    return acme


def acme_calls(acme, scripted_openai) -> int:
    scripted_openai.reply("Hello.")
    r = acme.post("/v1/chat/completions", json={"model": "default/chat", "messages": [{"role": "user", "content": "hi"}]})
    return r.status_code


def test_deleting_a_base_removes_its_tools_and_sharing_can_still_be_revoked(client, shared_chat, scripted_openai):
    """The issue: delete the tools' base, then unshare: 200, and acme can no longer call it."""
    assert acme_calls(shared_chat, scripted_openai) == 200
    deleted = client.delete("/v1/metis/knowledge-bases/handbook")
    assert deleted.status_code == 200 and deleted.json() == {"deleted": "handbook", "tools_removed_from": ["chat"]}
    spec = client.get(DEPLOYMENT).json()["spec"]
    assert spec["tools"] == [{"builtin": "save_to_knowledge", "knowledge_base": "journal", "confirm": False}]
    assert client.get(f"{DEPLOYMENT}/tools").json()["readable_by_callers"] == []
    r = client.delete(f"{DEPLOYMENT}/shared-with/acme")
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["shared_with"] == []
    assert acme_calls(shared_chat, scripted_openai) == 404
    # The rest of the spec is still whole: PUT it back as read.
    assert client.put(DEPLOYMENT, json={"spec": spec | {"shared_with": []}}).status_code == 200


def _spoil(core, change) -> None:
    """A row as an older version stored it (a tool on a base since deleted, a URL a later rule refuses)."""
    with core.db.transaction() as conn:
        row = conn.execute("SELECT spec FROM deployments WHERE workspace='default' AND name='chat'").fetchone()
        spec = json.loads(row["spec"])
        change(spec)
        conn.execute("UPDATE deployments SET spec=? WHERE workspace='default' AND name='chat'", (json.dumps(spec),))
    core.runtimes.drop("default", "chat")


def test_revoking_never_depends_on_the_rest_of_the_spec(client, core, shared_chat, scripted_openai):
    _spoil(core, lambda spec: spec["tools"].append({"builtin": "search_knowledge", "knowledge_base": "gone"}))
    _spoil(core, lambda spec: spec["runtime"].update(url="http://a\u001bb/v1"))
    assert client.put(DEPLOYMENT, json={"spec": client.get(DEPLOYMENT).json()["spec"]}).status_code == 422
    r = client.delete(f"{DEPLOYMENT}/shared-with/acme")
    assert r.status_code == 200, r.text
    assert r.json()["spec"]["shared_with"] == []
    assert acme_calls(shared_chat, scripted_openai) == 404
    # and sharing again checks only the workspace shared with
    assert client.put(f"{DEPLOYMENT}/shared-with/nobody").json()["error"]["code"] == "WORKSPACE_NOT_FOUND"
    assert client.put(f"{DEPLOYMENT}/shared-with/acme").status_code == 200


def test_the_cli_says_which_deployments_lost_the_tools(astra, client, scripted_openai):
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}}).status_code == 201
    put_deployment(client, "chat", scripted_openai.url, TOOLS[:2])
    out = astra("metis", "delete", "handbook", "--yes").output
    assert "deleted handbook" in out and "its tools were removed from: chat" in out
    assert client.get(DEPLOYMENT).json()["spec"]["tools"] == []
