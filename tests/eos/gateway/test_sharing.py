"""A deployment shared with other workspaces: their keys call it as <owner>/<name>, its tools work in the
owner's bases (the doc's warning), the bases stay unreadable to them, and unsharing takes effect at once."""

from __future__ import annotations

import json

from .conftest import openai_for


def share(client, name: str, workspace: str, *, stop: bool = False, status: int = 200) -> dict:
    path = f"/v1/eos/deployments/{name}/shared-with/{workspace}"
    r = client.delete(path) if stop else client.put(path)
    assert r.status_code == status, r.text
    return r.json()


def test_a_shared_deployment_searches_the_owners_base_for_the_other_workspace(client, chat, key_client):
    acme = key_client("caller", workspace="acme")
    other = key_client("admin", workspace="globex")
    # Not shared yet: acme's key learns nothing of it.
    r = acme.post("/v1/chat/completions", json={"model": "default/chat", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 404 and r.json()["error"]["code"] == "DEPLOYMENT_NOT_FOUND"
    assert [m["id"] for m in acme.get("/v1/models").json()["data"]] == ["e5-small"]

    shared = share(client, "chat", "acme")
    assert shared["spec"]["shared_with"] == ["acme"]
    assert "default/chat" in [m["id"] for m in acme.get("/v1/models").json()["data"]]
    assert acme.get("/v1/models/default/chat").json()["owned_by"] == "default"

    chat.reply(tool_calls=[("search_knowledge", {"query": "vacation days"})])
    chat.reply("You have 25 vacation days a year [1].")
    answer = openai_for(acme).chat.completions.create(
        model="default/chat", messages=[{"role": "user", "content": "How many vacation days do I have?"}]
    )
    assert answer.choices[0].message.content == "You have 25 vacation days a year [1]."
    tool_message = next(m for m in chat.chat_requests[1]["messages"] if m["role"] == "tool")
    assert "25 vacation days" in json.loads(tool_message["content"])["results"][0]["text"]
    # The base is still not theirs to read, and another workspace still gets nothing.
    assert acme.post("/v1/metis/knowledge-bases/handbook/search", json={"query": "vacation"}).status_code in (403, 404)
    assert other.post("/v1/chat/completions", json={"model": "default/chat", "messages": [
        {"role": "user", "content": "hi"}]}).status_code == 404
    assert "default/chat" not in [m["id"] for m in other.get("/v1/models").json()["data"]]

    # A draft the model proposes for them lands in the owner's base, where the owner reviews it.
    chat.reply(tool_calls=[("save_to_knowledge", {"title": "Trains", "text": "Book trains under 600 km."})])
    chat.reply("I proposed a note.")
    saved = openai_for(acme).chat.completions.create(model="default/chat", messages=[{"role": "user", "content": "Save it"}])
    draft = saved.model_extra["astralyx"]["drafts"][0]
    assert (draft["knowledge_base"], draft["title"]) == ("handbook", "Trains")
    assert client.get(f"/v1/metis/knowledge-bases/handbook/drafts/{draft['id']}").json()["status"] == "pending"
    assert acme.get(f"/v1/metis/knowledge-bases/handbook/drafts/{draft['id']}").status_code in (403, 404)

    # Unsharing takes effect at once.
    assert share(client, "chat", "acme", stop=True)["spec"]["shared_with"] == []
    r = acme.post("/v1/chat/completions", json={"model": "default/chat", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 404
    assert "default/chat" not in [m["id"] for m in acme.get("/v1/models").json()["data"]]


def test_sharing_needs_deployments_update_and_a_real_workspace(client, chat, key_client):
    key_client("caller", workspace="acme")
    viewer = key_client("viewer")
    r = viewer.put("/v1/eos/deployments/chat/shared-with/acme")
    assert r.status_code == 403 and "deployments:update" in r.json()["error"]["message"]
    r = client.put("/v1/eos/deployments/chat/shared-with/nowhere")
    assert r.status_code == 422 and r.json()["error"]["code"] == "WORKSPACE_NOT_FOUND"
    r = client.put("/v1/eos/deployments/chat/shared-with/default")
    assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_SPEC"
    # Sharing twice is sharing once; the spec's own field says the same as the route.
    share(client, "chat", "acme")
    assert share(client, "chat", "acme")["spec"]["shared_with"] == ["acme"]
    assert client.get("/v1/eos/deployments/chat").json()["spec"]["shared_with"] == ["acme"]
    tools = client.get("/v1/eos/deployments/chat/tools").json()
    assert tools["shared_with"] == ["acme"]


def test_shared_embedding_deployment_answers_the_other_workspace(client, key_client):
    acme = key_client("caller", workspace="acme")
    body = {"model": "default/e5-small", "input": ["Ana leads the data team."]}
    assert acme.post("/v1/embeddings", json=body).status_code == 404
    share(client, "e5-small", "acme")
    r = acme.post("/v1/embeddings", json=body)
    assert r.status_code == 200, r.text
    assert len(r.json()["data"][0]["embedding"]) == 384 and r.json()["model"] == "default/e5-small"


def test_astra_eos_share(astra, client, key_client):
    key_client("caller", workspace="acme")
    out = astra("eos", "share", "e5-small", "--with", "acme").output
    assert "acme may call it as default/e5-small" in out and "shared with: acme" in out
    out = astra("eos", "deployments", "--no-health").output
    assert "acme" in out
    # Deployed again (another replica count), it is still shared.
    astra("eos", "deploy", "multilingual-e5-small", "--name", "e5-small", "--max", "2")
    assert client.get("/v1/eos/deployments/e5-small").json()["spec"]["shared_with"] == ["acme"]
    out = astra("eos", "share", "e5-small", "--with", "acme", "--stop").output
    assert "no longer shared with acme" in out and "shared with: no other workspace" in out
    bad = astra("eos", "share", "e5-small", "--with", "nowhere", ok=False)
    assert bad.exit_code == 1 and "WORKSPACE_NOT_FOUND" in bad.output
