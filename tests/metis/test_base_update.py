"""A base's spec changed after creation (PUT …/knowledge-bases/<b>): a change of embedding re-embeds at the
next sync, searches by keywords meanwhile; the kind never changes; only managers may."""

from __future__ import annotations

import pytest

from astralyx.eos.deployments import DeploymentSpec

from .kit import ConceptEmbedder, make_base, write

pytestmark = pytest.mark.engines  # the tests of a core run on SQLite and on PostgreSQL

BASE = "/v1/metis/knowledge-bases/{}"


def test_a_change_of_embedding_re_embeds_at_the_next_sync(client, core, tmp_path):
    src = tmp_path / "handbook"
    write(src, "leave.md", "# Leave\n\nTwenty five holiday days a year.\n")
    write(src, "cars.md", "# Cars\n\nCompany automobile rules.\n")
    embedder = ConceptEmbedder()
    make_base(core, "hb", embedder=embedder, sources=[src])
    client.post(BASE.format("hb") + "/sync")
    core.deployments.put(None, "default", "e5b", DeploymentSpec(model="multilingual-e5-small", kind="embedding"))
    spec = client.get(BASE.format("hb")).json()["spec"]
    r = client.put(BASE.format("hb"), json={"spec": {**spec, "embedding": {"deployment": "e5b"}}})
    assert r.status_code == 200 and r.json()["spec"]["embedding"] == {"deployment": "e5b"}
    # until the next sync, the vectors are another embedding's: keywords answer
    assert client.post(BASE.format("hb") + "/search", json={"query": "vacation"}).json()["mode"] == "keywords"
    calls = embedder.calls
    report = client.post(BASE.format("hb") + "/sync").json()
    assert report["changed"] == 2 and embedder.calls > calls
    assert report["embedding"] == "e5b|concepts|64"
    found = client.post(BASE.format("hb") + "/search", json={"query": "vacation"}).json()
    assert found["mode"] == "hybrid" and found["results"][0]["document"] == "docs:hb/leave.md"


def test_what_an_update_may_not_change(client, core, key_client, tmp_path):
    make_base(core, "hb")
    spec = client.get(BASE.format("hb")).json()["spec"]
    kind = client.put(BASE.format("hb"), json={"spec": {**spec, "kind": "memory"}})
    assert kind.status_code == 422 and kind.json()["error"]["code"] == "INVALID_SPEC"
    assert "kind cannot change" in kind.json()["error"]["message"]
    viewer = key_client("viewer", workspace="default")
    denied = viewer.put(BASE.format("hb"), json={"spec": {**spec, "sources": [{"folder": str(tmp_path)}]}})
    assert denied.status_code == 403
    assert client.get(BASE.format("hb")).json()["spec"]["sources"] == []
