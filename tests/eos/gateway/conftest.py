"""A chat deployment on a scripted upstream, with knowledge bases, and the official openai client."""

from __future__ import annotations

import pytest
from openai import OpenAI

from ...conftest import ADMIN_TOKEN

HANDBOOK = {
    "leave.md": "# Leave policy\n\n## Vacation\n\nEach person has 25 vacation days a year.\n\n"
                "## Sick leave\n\nTell your lead on the first day.\n",
    "travel.md": "# Travel\n\nBook trains for trips under 600 km.\n",
}

TOOLS = [
    {"builtin": "search_knowledge", "knowledge_base": "handbook"},
    {"builtin": "save_to_knowledge", "knowledge_base": "handbook"},
    {"builtin": "save_to_knowledge", "knowledge_base": "journal", "confirm": False},
]


def put_deployment(client, name: str, url: str, tools: list | None = None, status: int = 200) -> dict:
    spec = {"model": "scripted", "kind": "chat", "runtime": {"type": "upstream", "url": url}}
    if tools is not None:
        spec["tools"] = tools
    r = client.put(f"/v1/eos/deployments/{name}", json={"spec": spec})
    assert r.status_code == status, r.text
    return r.json()


@pytest.fixture
def bases(client):
    for name in ("handbook", "journal"):  # by keywords: a search that matches nothing finds nothing
        r = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": name}, "spec": {"embedding": None}})
        assert r.status_code == 201, r.text
    for path, text in HANDBOOK.items():
        r = client.put(f"/v1/metis/knowledge-bases/handbook/notes/{path}", json={"content": text})
        assert r.status_code in (200, 201), r.text
    return ["handbook", "journal"]


@pytest.fixture
def chat(client, bases, scripted_openai):
    """Deployment `chat` with the doc's three tools, answered by the scripted upstream."""
    put_deployment(client, "chat", scripted_openai.url, TOOLS)
    return scripted_openai


def openai_for(test_client) -> OpenAI:
    """The official client, over HTTP to the real app in process, with the test client's key."""
    token = test_client.headers["authorization"].split(" ", 1)[1]
    return OpenAI(base_url="http://testserver/v1", api_key=token, http_client=test_client, max_retries=0)


@pytest.fixture
def oai(client) -> OpenAI:
    assert client.headers["authorization"] == f"Bearer {ADMIN_TOKEN}"
    return openai_for(client)
