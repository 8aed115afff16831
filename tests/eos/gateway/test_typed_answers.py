"""The gateway's typed chat request (a bad body answers the codes and words it always did, through the API and the
console's playground) and Eos answers filtered by their models (what the domain holds beyond the document stays in)."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

from astralyx.auth.actor import Actor
from astralyx.eos.gateway import ChatRequest, parse_chat
from astralyx.errors import AstralyxError

from ...conftest import ADMIN_TOKEN
from .conftest import TOOLS, put_deployment

HI = [{"role": "user", "content": "hi"}]
NOT_VALID = "The chat completion request is not valid: "
SHAPE = 'Each of "tools" is {"type": "function", "function": {"name": ..., ...}}'
TAKEN = "The deployment 'chat' has a built-in tool named 'search_knowledge': give your tool another name"

# (body, status, code, message) as /v1/chat/completions answered before the request was typed.
API_CASES = [
    ([], 422, "INVALID_REQUEST", NOT_VALID + "body: Input should be a valid dictionary or object to extract fields from"),
    ({}, 422, "INVALID_REQUEST", NOT_VALID + "model: Field required; messages: Field required"),
    ({"model": "", "messages": HI}, 422, "INVALID_REQUEST", NOT_VALID + "model: String should have at least 1 character"),
    ({"model": 3, "messages": HI}, 422, "INVALID_REQUEST", NOT_VALID + "model: Input should be a valid string"),
    ({"model": "chat", "messages": []}, 422, "INVALID_REQUEST",
     NOT_VALID + "messages: List should have at least 1 item after validation, not 0"),
    ({"model": "chat", "messages": [1]}, 422, "INVALID_REQUEST", NOT_VALID + "messages[0]: Input should be a valid dictionary"),
    ({"model": "chat", "messages": HI, "n": 2}, 422, "INVALID_REQUEST", NOT_VALID + "n: Input should be 1"),
    ({"model": "chat", "messages": HI, "tools": "x"}, 422, "INVALID_REQUEST", NOT_VALID + "tools: Input should be a valid list"),
    ({"model": "chat", "messages": HI, "tools": [{"type": "function"}]}, 422, "INVALID_REQUEST", SHAPE),
    ({"model": "chat", "messages": HI, "tools": [{"type": "function", "function": {"name": 3}}]}, 422, "INVALID_REQUEST", SHAPE),
    ({"model": "chat", "messages": HI, "tools": [{"type": "function", "function": {"name": "search_knowledge"}}]}, 422,
     "TOOL_NAME_TAKEN", TAKEN),
    ({"model": "chat", "messages": HI, "stream": "yes"}, 422, "INVALID_REQUEST",
     NOT_VALID + "stream: Input should be a valid boolean"),
    ({"model": "chat", "messages": HI, "metadata": "x"}, 422, "INVALID_REQUEST",
     NOT_VALID + "metadata: Input should be a valid dictionary"),
    ({"model": "e5", "messages": HI}, 422, "WRONG_DEPLOYMENT_KIND",
     "Deployment 'e5' is an embedding deployment: chat needs a chat deployment"),
]
MODEL = 'Say which deployment answers: "model": "<deployment name>"'
MESSAGES = '"messages" must be a non-empty list of messages'
# The playground's JSON (deployment, messages) as it answered before.
PLAYGROUND_CASES = [
    ({}, MODEL),
    ({"deployment": 5, "messages": HI}, MODEL),
    ({"deployment": "chat"}, MESSAGES),
    ({"deployment": "chat", "messages": []}, MESSAGES),
]


@pytest.fixture
def deployed(client, bases, scripted_openai):
    put_deployment(client, "chat", scripted_openai.url, TOOLS)
    r = client.put("/v1/eos/deployments/e5", json={"spec": {"model": "multilingual-e5-small-int8", "kind": "embedding"}})
    assert r.status_code == 200, r.text
    return scripted_openai


@pytest.mark.parametrize(("body", "status", "code", "message"), API_CASES)
def test_a_bad_chat_body_answers_as_it_did(client, deployed, body, status, code, message):
    r = client.post("/v1/chat/completions", json=body)
    assert r.status_code == status, r.text
    assert r.json()["error"] == {"code": code, "message": message}
    assert deployed.chat_requests == []  # the model was never called


def test_the_playground_builds_the_same_typed_request(app, deployed):
    console = TestClient(app, base_url="http://127.0.0.1", follow_redirects=False)
    console.cookies.set("astralyx_key", ADMIN_TOKEN)
    for body, message in PLAYGROUND_CASES:
        r = console.post("/playground/api/chat", json=body, headers={"origin": "http://127.0.0.1"})
        assert r.status_code == 422 and r.json()["error"] == {"code": "INVALID_REQUEST", "message": message}, (body, r.text)
    r = console.post("/playground/api/chat", json={"deployment": "e5", "messages": HI}, headers={"origin": "http://127.0.0.1"})
    assert r.json()["error"]["code"] == "WRONG_DEPLOYMENT_KIND"
    assert deployed.chat_requests == []


def test_the_gateway_takes_a_typed_request(core, deployed):
    """A shell hands the gateway a ChatRequest: its own fields read, the OpenAI extras passed to the model as sent."""
    owner = Actor.local_owner("default")
    with pytest.raises(AstralyxError) as missing:
        parse_chat({"model": None, "messages": HI})
    assert (missing.value.code, missing.value.message) == ("INVALID_REQUEST", MODEL)
    with pytest.raises(AstralyxError) as item:
        parse_chat({"model": "chat", "messages": HI, "tools": [1]})
    assert (item.value.code, item.value.message) == ("INVALID_REQUEST", SHAPE)
    mine = {"type": "function", "function": {"name": "search_knowledge"}}
    with pytest.raises(AstralyxError) as taken:
        core.gateway.prepare(owner, ChatRequest(model="chat", messages=HI, tools=[mine]))
    assert (taken.value.code, taken.value.message) == ("TOOL_NAME_TAKEN", TAKEN)

    request = ChatRequest.model_validate({"model": "chat", "messages": HI, "temperature": 0.2, "conversation_id": "c1",
                                          "stream_options": {"include_usage": True}})
    turn = core.gateway.prepare(owner, request)
    assert turn.conversation == "c1" and turn.include_usage
    assert turn.request["temperature"] == 0.2
    assert not {"model", "messages", "conversation_id", "stream_options"} & set(turn.request)


def test_a_receipt_is_answered_as_its_document_says(client, core, deployed):
    """GET …/receipts/<id> answers the Receipt model: what the stored row holds beyond it (here an internal path
    another version kept there) stays on the server, and the signed record is whole, so it still verifies."""
    deployed.reply(tool_calls=[("search_knowledge", {"query": "vacation"})])
    deployed.reply("25 [1].")
    answer = client.post("/v1/chat/completions", json={"model": "chat", "messages": HI}).json()
    rid = answer["astralyx"]["receipts"][0]
    row = core.db.one("SELECT document FROM receipts WHERE id=?", (rid,))
    stored = {**json.loads(row["document"]), "signed_with": str(core.home / "keys" / "receipts.ed25519")}
    with core.db.transaction() as conn:
        conn.execute("UPDATE receipts SET document=? WHERE id=?", (json.dumps(stored), rid))

    r = client.get(f"/v1/eos/receipts/{rid}")
    assert r.status_code == 200, r.text
    assert sorted(r.json()) == ["algorithm", "canonicalization", "key_id", "receipt", "signature"]
    assert "receipts.ed25519" not in r.text
    assert client.post("/v1/eos/receipts/verify", json=r.json()).json()["valid"] is True


def test_a_deployment_answers_the_documented_keys(client, deployed):
    listed = client.get("/v1/eos/deployments").json()["deployments"]
    chat = next(d for d in listed if d["metadata"]["name"] == "chat")
    assert sorted(chat) == ["metadata", "spec", "status", "warnings"]
    # A runtime's unset fields are left out, not null; a listing's upstream not checked yet has "ok": null.
    assert chat["spec"]["runtime"] == {"type": "upstream", "url": deployed.url, "timeout": 600.0}
    assert chat["status"]["ok"] is None and "checked_at" not in chat["status"]
    put = client.put("/v1/eos/deployments/e5", json={"spec": {"model": "multilingual-e5-small-int8", "kind": "embedding"}})
    assert sorted(put.json()) == ["metadata", "spec"]  # no status after PUT, no warnings without a search tool
