"""Text that is no text: a lone surrogate in a JSON body, a control character in an address.

`"\\udc00"` is valid JSON but no character (and no UTF-8): every route that takes a JSON body refuses it
with its own code, before a file, an index or an answer has to encode it. An address with a control
character answers in the error shape, never the router's plain text.
"""

from __future__ import annotations

import json

import pytest

from .kit import error

JSON = {"content-type": "application/json"}
FACT = '{"subject": "Ana", "attribute": "team", "fact": "Ana leads the data team."'

# Every operation of the document with a JSON body: (method, path, body with a lone surrogate, the route's code).
# "a\\udc00b" is sent as is: the JSON escape of a lone (low) surrogate.
CASES = [
    ("POST", "/workspaces", '{"name": "a\\udc00b"}', "INVALID_NAME"),
    ("POST", "/keys", '{"role": "viewer", "name": "a\\udc00b"}', "INVALID_REQUEST"),
    ("POST", "/metis/knowledge-bases", '{"metadata": {"name": "a\\udc00b"}}', "INVALID_SPEC"),
    ("PUT", "/metis/knowledge-bases/{name}", '{"metadata": {"name": "docs", "owner": "a\\udc00b"}}', "INVALID_SPEC"),
    ("PUT", "/metis/knowledge-bases/{base}/notes/{path}", '{"content": "a\\udc00b"}', "INVALID_NOTE"),
    ("PUT", "/metis/knowledge-bases/{base}/notes/{path}", '{"metadata": {"title": "a\\udc00b"}, "content": ""}', "INVALID_NOTE"),
    ("PUT", "/metis/knowledge-bases/{base}/saved/{path}", '{"metadata": {"tags": ["a\\udc00b"]}, "content": ""}', "INVALID_NOTE"),
    ("POST", "/eos/deployments", '{"model": "e5-small", "name": "e5-b", "upstream_model": "a\\udc00b"}', "INVALID_SPEC"),
    ("PUT", "/eos/deployments/{name}", '{"spec": {"model": "a\\udc00b", "kind": "embedding"}}', "INVALID_SPEC"),
    ("POST", "/metis/knowledge-bases/{base}/memory", '{"facts": [' + FACT + ', "source": "a\\udc00b"}]}', "INVALID_FACT"),
    ("POST", "/metis/knowledge-bases/{base}/memory", '{"facts": [{"subject": "Ana", "attribute": "team", "fact": "a\\udc00b"}]}',
     "INVALID_FACT"),
    ("PUT", "/metis/knowledge-bases/{base}/memory/{fact_id}", '{"fact": "a\\udc00b"}', "INVALID_FACT"),
    ("POST", "/metis/knowledge-bases/{base}/memory/extract", '{"messages": [{"role": "user", "content": "a\\udc00b"}]}',
     "INVALID_CONVERSATION"),
    ("POST", "/metis/knowledge-bases/{base}/search", '{"query": "a\\udc00b"}', "INVALID_QUERY"),
    ("POST", "/chat/completions", '{"model": "e5-small", "messages": [{"role": "user", "content": "a\\udc00b"}]}',
     "INVALID_REQUEST"),
    ("PUT", "/eos/deployments/{name}/tools/knowledge/{base}", '{"se\\ud800arch": true}', "INVALID_REQUEST"),  # a key
    ("POST", "/metis/knowledge-bases/{base}/drafts/{draft_id}", '{"title": "a\\udc00b"}', "INVALID_REQUEST"),
    ("POST", "/metis/knowledge-bases/{base}/drafts/{draft_id}/save", '{"text": "a\\udc00b"}', "INVALID_REQUEST"),
    ("POST", "/eos/receipts/verify", '{"receipt": {"id": "r_a\\udc00b"}, "signature": "x"}', "INVALID_REQUEST"),
    ("POST", "/embeddings", '{"model": "e5-small", "input": ["ok", "a\\udc00b"]}', "INVALID_REQUEST"),
    ("POST", "/eos/models/{name}/add", '{"file": "/srv/a\\udc00b.gguf"}', "INVALID_REQUEST"),
    ("POST", "/metis/knowledge-bases/{base}/imports/{job}/start", '{"title": "a\\udc00b"}', "NOTHING_CHOSEN"),
]
PINS = {"name": "docs", "base": "team", "path": "a.md", "fact_id": "f_0", "draft_id": "d_0", "job": "i_0"}


@pytest.fixture
def seeded(client):
    for body in ({"metadata": {"name": "team"}, "spec": {"kind": "memory"}}, {"metadata": {"name": "docs"}}):
        assert client.post("/v1/metis/knowledge-bases", json=body).status_code == 201
    return client


def address(path: str) -> str:
    pins = {**PINS, "name": "e5-small", "base": "docs"} if path.startswith("/eos/deployments") else PINS
    pins = {**pins, "name": "e5-small"} if path.startswith("/eos/models") else pins
    return "/v1" + path.format(**pins)


@pytest.mark.parametrize(("method", "path", "body", "code"), CASES, ids=[f"{m} {p} {b[:40]}" for m, p, b, _ in CASES])
def test_a_lone_surrogate_is_refused_with_the_routes_code(seeded, core, method, path, body, code):
    assert json.loads(body)  # valid JSON: the parser takes it
    answer = seeded.request(method, address(path), content=body.encode(), headers=JSON)
    message = error(answer, 422 if code != "INVALID_NOTE" else 400, code)
    assert "lone surrogate" in message or code == "INVALID_NAME", message
    # Nothing was kept: no key, no fact, no note.
    assert len(seeded.get("/v1/keys").json()["keys"]) == 1
    assert seeded.get("/v1/metis/knowledge-bases/team/memory").json()["subjects"] == []
    assert seeded.get("/v1/metis/knowledge-bases/team/notes").json()["notes"] == []


def test_every_json_body_of_the_document_is_covered(seeded):
    doc = seeded.get("/v1/openapi.json").json()
    with_json = {(method.upper(), path) for path, item in doc["paths"].items() for method, op in item.items()
                 if "application/json" in op.get("requestBody", {}).get("content", {})}
    assert with_json == {(method, path) for method, path, _, _ in CASES}


def test_a_pair_of_surrogates_is_one_character(seeded):
    """"\\ud83d\\ude00" is 😀: kept like any other character."""
    note = seeded.put("/v1/metis/knowledge-bases/docs/notes/smile.md", content=b'{"content": "ok \\ud83d\\ude00"}',
                      headers=JSON)
    assert note.status_code == 201, note.text
    assert note.json()["content"] == "ok 😀"
    key = seeded.post("/v1/keys", content=b'{"role": "viewer", "name": "bot \\ud83d\\ude00"}', headers=JSON)
    assert key.status_code == 201 and key.json()["name"] == "bot 😀"


@pytest.mark.parametrize("path", [
    "/v1/metis/knowledge-bases/docs/notes/a%0Ab.md",
    "/v1/metis/knowledge-bases/docs%0A/notes",
    "/v1/metis/knowledge-bases/team/memory/%0Af",
    "/v1/eos/deployments/e5%0D",
    "/v1/%0A",
    "/%0A",
    "/metis/knowledge-bases%00",
])
def test_an_address_with_a_control_character_answers_in_the_error_shape(seeded, path):
    for method in ("GET", "DELETE"):
        answer = seeded.request(method, path)
        assert answer.headers["content-type"] == "application/json"
        assert "control character" in error(answer, 404, "NOT_FOUND")


def test_strings_and_numbers_are_what_the_document_says(seeded):
    """Schema-violating bodies the models once took: an empty name, false for a number, 1 for a boolean."""
    deploy = {"model": "e5-small", "name": "e5-b"}
    error(seeded.post("/v1/eos/deployments", json={**deploy, "name": ""}), 422, "INVALID_SPEC")
    for field, value in (("min", False), ("max", True), ("cpu", 1), ("replace", "yes")):
        message = error(seeded.post("/v1/eos/deployments", json={**deploy, field: value}), 422, "INVALID_SPEC")
        assert field in message
    error(seeded.post("/v1/metis/knowledge-bases/docs/search", json={"query": "x", "max_results": True}), 422, "INVALID_QUERY")
    error(seeded.post("/v1/embeddings", json={"model": "e5-small", "input": []}), 422, "INVALID_REQUEST")
    # JSON has one kind of number: 2.0 is an integer where the document asks for one.
    found = seeded.post("/v1/metis/knowledge-bases/docs/search", json={"query": "x", "max_results": 2.0})
    assert found.status_code == 200, found.text
    error(seeded.post("/v1/metis/knowledge-bases/docs/search", json={"query": "x", "max_results": 2.5}), 422, "INVALID_QUERY")
    assert [d["metadata"]["name"] for d in seeded.get("/v1/eos/deployments?health=false").json()["deployments"]] == ["e5-small"]
    # A deployment's spec, nested in the body: its replicas are whole numbers, its cpu a boolean.
    spec = {"model": "m", "kind": "chat", "runtime": {"type": "upstream", "url": "http://127.0.0.1:9/v1"}}
    for resources in ({"min": False}, {"max": "2"}, {"cpu": 1}, {"max": 2.5}):
        answer = seeded.put("/v1/eos/deployments/up", json={"spec": {**spec, "resources": resources}})
        assert next(iter(resources)) in error(answer, 422, "INVALID_SPEC")
    answer = seeded.put("/v1/eos/deployments/up", json={"spec": {**spec, "resources": {"min": 0.0, "max": 2.0}}})
    assert answer.status_code == 200 and answer.json()["spec"]["resources"] == {"cpu": True, "min": 0, "max": 2}, answer.text

