"""A memory `team` whose extractor `qwen3-4b` is an upstream deployment: the scripted OpenAI server."""

from __future__ import annotations

import json

import pytest


def facts(*items: tuple) -> str:
    """The extractor's answer: facts(("Ana", "role", "Ana works in research.", 1), …)."""
    return json.dumps({"facts": [{"subject": s, "attribute": a, "fact": f, "message": m} for s, a, f, m in items]})


def put_extractor(client, url: str, name: str = "qwen3-4b", **runtime) -> None:
    spec = {"model": "qwen3:4b", "kind": "chat", "runtime": {"type": "upstream", "url": url, **runtime}}
    response = client.put(f"/v1/eos/deployments/{name}", json={"spec": spec})
    assert response.status_code == 200, response.text


@pytest.fixture
def team(client, scripted_openai):
    """The memory `team` with its extractor; yields the scripted server."""
    put_extractor(client, scripted_openai.url)
    spec = {"kind": "memory", "sources": [], "extractor": {"deployment": "qwen3-4b"}}
    response = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "team"}, "spec": spec})
    assert response.status_code == 201, response.text
    return scripted_openai
