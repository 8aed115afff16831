"""/v1/embeddings and /v1/models with the official `openai` package as the client."""

from __future__ import annotations

import numpy as np
import openai
import pytest
from openai import OpenAI

from ..conftest import ADMIN_TOKEN
from ..scripted_openai import hash_embedding


def sdk(http, token: str = ADMIN_TOKEN) -> OpenAI:
    """The official client, over the real app in process (TestClient is an httpx.Client)."""
    return OpenAI(base_url="http://testserver/v1", api_key=token, http_client=http, max_retries=0)


def test_embeddings_with_the_openai_client(client):
    api = sdk(client)
    result = api.embeddings.create(model="e5-small", input=["Ana leads the data team.", "Quem lidera a equipa de dados?"])
    assert result.model == "e5-small" and len(result.data) == 2
    vectors = np.array([d.embedding for d in result.data], dtype=np.float32)  # decoded from base64, the client's default
    assert vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > 0.8
    floats = api.embeddings.create(model="e5-small", input="Ana leads the data team.", encoding_format="float")
    assert np.allclose(floats.data[0].embedding, vectors[0], atol=1e-6)
    assert result.usage.prompt_tokens > 0


def test_embeddings_input_type_and_dimensions(client):
    query = client.post("/v1/embeddings", json={"model": "e5-small", "input": "launch date", "encoding_format": "float"}).json()
    passage = client.post(
        "/v1/embeddings", json={"model": "e5-small", "input": "launch date", "input_type": "passage", "encoding_format": "float"}
    ).json()
    assert not np.allclose(query["data"][0]["embedding"], passage["data"][0]["embedding"])
    short = sdk(client).embeddings.create(model="e5-small", input="launch date", dimensions=128)
    assert len(short.data[0].embedding) == 128
    assert abs(float(np.linalg.norm(short.data[0].embedding)) - 1.0) < 1e-5


def test_embeddings_through_an_upstream_deployment(client, scripted_openai):
    spec = {"model": "bge-m3", "kind": "embedding", "runtime": {"type": "upstream", "url": scripted_openai.url}}
    assert client.put("/v1/eos/deployments/bge-m3", json={"spec": spec}).status_code == 200
    result = sdk(client).embeddings.create(model="bge-m3", input=["leave policy"])
    assert np.allclose(result.data[0].embedding, hash_embedding("leave policy"), atol=1e-6)


def test_embeddings_errors(client, scripted_openai):
    api = sdk(client)
    with pytest.raises(openai.NotFoundError):
        api.embeddings.create(model="nope", input="x")
    spec = {"model": "m", "kind": "chat", "runtime": {"type": "upstream", "url": scripted_openai.url}}
    client.put("/v1/eos/deployments/chat", json={"spec": spec})
    with pytest.raises(openai.UnprocessableEntityError) as e:
        api.embeddings.create(model="chat", input="x")
    assert e.value.body["code"] == "WRONG_DEPLOYMENT_KIND"
    bad = client.post("/v1/embeddings", json={"model": "e5-small", "input": [1, 2, 3]})
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "INVALID_REQUEST"
    assert client.post("/v1/embeddings", json={"model": "e5-small", "input": []}).status_code == 422


def test_embeddings_unreachable_upstream_is_503(client):
    spec = {"model": "bge-m3", "kind": "embedding", "runtime": {"type": "upstream", "url": "http://127.0.0.1:9/v1"}}
    client.put("/v1/eos/deployments/bge-m3", json={"spec": spec})
    with pytest.raises(openai.InternalServerError) as e:
        sdk(client).embeddings.create(model="bge-m3", input="x")
    assert e.value.status_code == 503 and e.value.body["code"] == "DEPLOYMENT_UNAVAILABLE"


def test_models_lists_the_workspace_deployments(client, key_client, scripted_openai):
    spec = {"model": "qwen3:4b", "kind": "chat", "runtime": {"type": "upstream", "url": scripted_openai.url}}
    client.put("/v1/eos/deployments/qwen3-4b", json={"spec": spec})
    models = sdk(client).models.list()
    assert [m.id for m in models.data] == ["e5-small", "qwen3-4b"]
    assert all(m.owned_by == "default" and m.created > 0 for m in models.data)
    assert sdk(client).models.retrieve("qwen3-4b").id == "qwen3-4b"
    other = key_client("viewer", workspace="acme")
    theirs = sdk(other, other.headers["authorization"].split()[1]).models.list().data
    assert [(m.id, m.owned_by) for m in theirs] == [("e5-small", "acme")]
    with pytest.raises(openai.NotFoundError):
        sdk(other, other.headers["authorization"].split()[1]).embeddings.create(model="qwen3-4b", input="x")


def test_needs_a_key_and_a_viewer_may_call(anon, key_client):
    with pytest.raises(openai.AuthenticationError):
        sdk(anon, "wrong-key").embeddings.create(model="e5-small", input="x")
    for role in ("viewer", "caller"):  # an application's key (caller) may call without reading bases
        http = key_client(role)
        api = sdk(http, http.headers["authorization"].split()[1])
        assert len(api.embeddings.create(model="e5-small", input="x").data[0].embedding) == 384
        assert [m.id for m in api.models.list().data] == ["e5-small"]
