"""A base created without saying how it searches embeds with the workspace's e5-small when it can run,
and says so; `"embedding": null` (`--no-embedding`) keeps it to keywords."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.engines  # records and indexes on SQLite and on PostgreSQL

BASES = "/v1/metis/knowledge-bases"
NOTE = {"content": "# Leave\n\nEach person has 25 vacation days a year.\n"}


def create(client, body):
    r = client.post(BASES, json=body)
    assert r.status_code == 201, r.text
    return r.json()


def mode(client, name):
    assert client.put(f"{BASES}/{name}/notes/leave.md", json=NOTE).status_code in (200, 201)
    r = client.post(f"{BASES}/{name}/search", json={"query": "vacation days"})
    assert r.status_code == 200, r.text
    return r.json()["mode"]


def upstream(client, name):
    spec = {"model": name, "kind": "embedding", "runtime": {"type": "upstream", "url": "http://127.0.0.1:9/v1"}}
    assert client.put(f"/v1/eos/deployments/{name}", json={"spec": spec}).status_code == 200


def test_without_embedding_the_workspaces_e5_small_embeds(client):
    body = create(client, {"metadata": {"name": "handbook"}})
    assert body["spec"]["embedding"] == {"deployment": "e5-small"}
    assert body["embedding_choice"]["deployment"] == "e5-small" and body["embedding_choice"]["chosen"] == "default"
    assert '"embedding": null for keywords only' in body["embedding_choice"]["message"]
    assert client.get(f"{BASES}/handbook").json()["spec"]["embedding"] == {"deployment": "e5-small"}
    assert mode(client, "handbook") == "hybrid"
    memory = create(client, {"metadata": {"name": "team"}, "spec": {"kind": "memory"}})
    assert memory["spec"]["embedding"] == {"deployment": "e5-small"}


def test_embedding_null_is_keywords_only(client):
    body = create(client, {"metadata": {"name": "plain"}, "spec": {"embedding": None}})
    assert "embedding" not in body["spec"]
    assert body["embedding_choice"] == {"deployment": None, "chosen": "given",
                                        "message": "no embedding: the base searches by keywords"}
    assert mode(client, "plain") == "keywords"
    named = create(client, {"metadata": {"name": "named"}, "spec": {"embedding": {"deployment": "e5-small"}}})
    assert named["embedding_choice"]["chosen"] == "given"


def test_no_ready_default_is_keywords_and_says_why(client):
    assert client.delete("/v1/eos/deployments/e5-small").status_code == 200
    none = create(client, {"metadata": {"name": "a"}})
    assert "embedding" not in none["spec"] and none["embedding_choice"]["deployment"] is None
    assert "no embedding deployment" in none["embedding_choice"]["message"]
    upstream(client, "far-away")  # the only one, and it does not answer: not ready
    down = create(client, {"metadata": {"name": "b"}})
    assert "embedding" not in down["spec"] and "far-away is not ready" in down["embedding_choice"]["message"]
    upstream(client, "other")
    several = create(client, {"metadata": {"name": "c"}})
    assert "embedding" not in several["spec"] and "several embedding deployments" in several["embedding_choice"]["message"]
    assert mode(client, "c") == "keywords"


def test_the_cli_says_which_embedding_it_chose(astra, tmp_path):
    src = tmp_path / "gitdocs"
    src.mkdir()
    (src / "README.md").write_text("# Git\n\nGit tracks content.\n")
    out = astra("metis", "create", "gitdocs", "--source", str(src)).output
    assert "created documents base gitdocs" in out
    assert "embedding: e5-small (the workspace's default; --no-embedding for keywords only)" in out
    out = astra("metis", "create", "plain", "--no-embedding").output
    assert "embedding: none (keywords only)" in out
    listed = {b["metadata"]["name"]: b["spec"] for b in json.loads(astra("metis", "bases", "--json").output)["knowledge_bases"]}
    assert listed["gitdocs"]["embedding"] == {"deployment": "e5-small"} and "embedding" not in listed["plain"]
    both = astra("metis", "create", "x", "--embedding", "e5-small", "--no-embedding", ok=False)
    assert both.exit_code == 2 and "opposite things" in both.output
