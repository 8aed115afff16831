"""Scale to zero when idle (resources.min 0): unloaded after an idle time, woken by a call through the API,
not by the workspace's own network (a base's embedding, a memory's extractor), as the memory doc says."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.server.app import create_app

from ..conftest import ADMIN_TOKEN

IDLE = 0.6


@pytest.fixture
def zero(home) -> Iterator[tuple[Astralyx, TestClient]]:
    core = Astralyx(Settings.load(home, scale_to_zero_after=IDLE)).start()
    with TestClient(create_app(core), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        spec = {"model": "multilingual-e5-small", "kind": "embedding", "resources": {"min": 0, "max": 1}}
        assert client.put("/v1/eos/deployments/e5-zero", json={"spec": spec}).status_code == 200
        yield core, client
    core.close()


def status(client: TestClient, name: str) -> dict:
    return client.get(f"/v1/eos/deployments/{name}").json()["status"]


def test_an_api_call_wakes_it_and_it_sleeps_again_when_idle(zero):
    core, client = zero
    assert status(client, "e5-zero")["scaled_to_zero"] is True
    assert "scaled to zero" in status(client, "e5-zero")["detail"]

    r = client.post("/v1/embeddings", json={"model": "e5-zero", "input": ["Ana leads the data team."]})
    assert r.status_code == 200 and len(r.json()["data"][0]["embedding"]) == 384
    assert status(client, "e5-zero")["detail"].startswith("loaded in process")
    # Loaded, it answers the workspace's own network too.
    assert core.runtimes.embedder("default", "e5-zero").embed_queries(["who leads?"]).shape == (1, 384)

    deadline = time.monotonic() + IDLE * 20
    while "scaled to zero" not in status(client, "e5-zero")["detail"] and time.monotonic() < deadline:
        time.sleep(IDLE / 3)
    assert status(client, "e5-zero").get("scaled_to_zero") is True


def test_the_workspaces_own_network_does_not_wake_it(zero):
    core, client = zero
    r = client.post("/v1/metis/knowledge-bases", json={
        "metadata": {"name": "handbook"}, "spec": {"embedding": {"deployment": "e5-zero"}}})
    assert r.status_code == 201, r.text
    # The note is kept (files are the truth); its embedding waits for the deployment.
    r = client.put("/v1/metis/knowledge-bases/handbook/notes/leave.md", json={"content": "25 vacation days a year."})
    assert r.status_code in (200, 201), r.text
    # Indexing it is a call on the workspace's network: it is refused and says what to do.
    r = client.post("/v1/metis/knowledge-bases/handbook/sync")
    assert r.status_code == 503 and r.json()["error"]["code"] == "DEPLOYMENT_SCALED_TO_ZERO", r.text
    assert "clear Scale to zero" in r.json()["error"]["message"]
    # A search answers by keywords alone, as for any embedding that does not answer, and wakes nothing.
    r = client.post("/v1/metis/knowledge-bases/handbook/search", json={"query": "vacation"})
    assert r.status_code == 200 and r.json()["mode"] == "keywords", r.text
    assert status(client, "e5-zero").get("scaled_to_zero") is True  # still asleep
    # Woken through the API, the same sync indexes the note.
    assert client.post("/v1/embeddings", json={"model": "e5-zero", "input": ["wake up"]}).status_code == 200
    assert client.post("/v1/metis/knowledge-bases/handbook/sync").status_code == 200
    r = client.post("/v1/metis/knowledge-bases/handbook/search", json={"query": "vacation"})
    assert r.json()["mode"] == "hybrid" and "25 vacation days" in r.json()["results"][0]["text"]


def test_a_memorys_extractor_scaled_to_zero_is_the_docs_error(zero):
    core, client = zero
    spec = {"model": "smollm2-135m", "kind": "chat", "resources": {"min": 0, "max": 1}}
    assert client.put("/v1/eos/deployments/reader", json={"spec": spec}).status_code == 200
    r = client.post("/v1/metis/knowledge-bases", json={
        "metadata": {"name": "team"}, "spec": {"kind": "memory", "extractor": {"deployment": "reader"}}})
    assert r.status_code == 201, r.text
    r = client.post("/v1/metis/knowledge-bases/team/memory/extract",
                    json={"messages": [{"role": "user", "content": "I moved to research."}]})
    assert r.status_code == 503, r.text
    error = r.json()["error"]
    assert error["code"] == "EXTRACTOR_UNAVAILABLE" and error["details"]["cause"] == "DEPLOYMENT_SCALED_TO_ZERO"
    assert "clear Scale to zero" in error["message"] and "keep it at one replica" in error["message"]


def test_astra_eos_deploy_min_0_scales_to_zero(astra):
    out = astra("eos", "deploy", "multilingual-e5-small", "--name", "e5-idle", "--min", "0").output
    assert "deployed e5-idle" in out and "0-1 replicas" in out and "scaled to zero" in out
    listed = json.loads(astra("eos", "deployments", "--json").output)["deployments"]
    assert next(d for d in listed if d["metadata"]["name"] == "e5-idle")["status"]["scaled_to_zero"] is True
