"""Search over HTTP: the tools doc's result shape, the budget, hybrid fusion, keywords-only, permissions."""

from __future__ import annotations

import pytest

from astralyx.metis.chunking import MAX_CHARS
from astralyx.metis.search import BUDGET_CHARS, Hit, passages, rrf

from .kit import ConceptEmbedder, labels, make_base, owner, write


@pytest.fixture(autouse=True)
def _source_roots(monkeypatch, tmp_path):
    """API keys name folder sources here: the operator allows the test's folder (metis/roots.py)."""
    monkeypatch.setenv("ASTRALYX_SOURCE_ROOTS", str(tmp_path))


pytestmark = pytest.mark.engines  # indexes on SQLite and on PostgreSQL

URL = "/v1/metis/knowledge-bases/{}/search"




@pytest.fixture
def handbook(core, tmp_path):
    src = tmp_path / "handbook"
    write(src, "leave.md", "# Leave policy\n\nHow leave works.\n\n## Vacation\n\n"
                           "Each person has 25 vacation days a year.\n\n## Sick leave\n\nTell your lead.\n")
    write(src, "travel/trains.txt", "Trains are booked in second class.\n")
    make_base(core, "handbook", sources=[src])
    core.documents.sync(owner(), "handbook")
    return src


def test_the_answer_has_exactly_the_tools_doc_shape(client, handbook):
    r = client.post(URL.format("handbook"), json={"query": "How many vacation days do I have?", "max_results": 8})
    assert r.status_code == 200
    body = r.json()
    assert list(body) == ["knowledge_base", "mode", "results"]
    assert body["knowledge_base"] == "handbook" and body["mode"] == "keywords"
    first = body["results"][0]
    assert first == {
        "ref": 1, "document": "docs:handbook/leave.md", "title": "Leave policy",
        "where": "Leave policy › Vacation › line 7", "text": "Each person has 25 vacation days a year.",
    }
    assert [r["ref"] for r in body["results"]] == list(range(1, len(body["results"]) + 1))
    trains = client.post(URL.format("handbook"), json={"query": "train"}).json()["results"]
    assert trains[0]["document"] == "docs:handbook/travel/trains.txt" and trains[0]["where"] == "line 1"


def test_nothing_found_is_an_empty_list_and_a_bad_query_says_why(client, handbook):
    r = client.post(URL.format("handbook"), json={"query": "zebra xylophone"})
    assert r.status_code == 200 and r.json()["results"] == []
    r = client.post(URL.format("handbook"), json={"query": "?!"})
    assert r.status_code == 200 and r.json()["results"] == []
    r = client.post(URL.format("handbook"), json={"query": "  "})
    assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_QUERY"
    r = client.post(URL.format("handbook"), json={"max_results": 3})
    assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_QUERY"
    r = client.post(URL.format("handbook"), json={"query": "leave", "max_results": 0})
    assert r.status_code == 422


def test_at_most_8_passages_within_about_6000_characters(client, core, tmp_path):
    src = tmp_path / "big"
    for i in range(30):
        paragraphs = [f"Budget topic paragraph {i}.{j} " + "with many words about budgets " * 8 for j in range(6)]
        write(src, f"doc{i:02}.md", f"# Doc {i}\n\n" + "\n\n".join(paragraphs))
    make_base(core, "big", sources=[src])
    report = core.documents.sync(owner(), "big")
    assert report["added"] == 30 and report["chunks"] > 30
    body = client.post(URL.format("big"), json={"query": "budget topic", "max_results": 8}).json()
    results = body["results"]
    assert len(results) == 8
    assert all(len(r["text"]) <= MAX_CHARS for r in results)
    assert sum(len(r["text"]) for r in results) <= BUDGET_CHARS
    assert len(client.post(URL.format("big"), json={"query": "budget", "max_results": 3}).json()["results"]) == 3
    assert len(client.post(URL.format("big"), json={"query": "budget", "max_results": 50}).json()["results"]) == 8


def test_the_budget_cuts_the_last_passage_at_a_word():
    hits = [Hit(i, f"docs:b/{i}.md", "T", "line 1", ("word " * 200).strip(), "docs", str(i)) for i in range(10)]
    out = passages(hits, 8, budget=2500)
    assert [len(p.text) for p in out][:2] == [999, 999]
    assert sum(len(p.text) for p in out) <= 2500
    assert out[-1].text.endswith("word…")
    assert len(out) == 3


def test_rrf_fuses_ranks_with_k_60():
    fused = rrf([[1, 2, 3], [3, 4, 1]])
    scores = dict(fused)
    assert scores[1] == pytest.approx(1 / 61 + 1 / 63)
    assert scores[3] == pytest.approx(1 / 63 + 1 / 61)
    assert scores[4] == pytest.approx(1 / 62)
    assert [d for d, _ in fused][:2] == [1, 3] and set(scores) == {1, 2, 3, 4}


def test_hybrid_fuses_keyword_and_vector_rankings(client, core, tmp_path):
    src = tmp_path / "fleet"
    write(src, "repair.md", "# Repairs\n\nAutomobile repair is done by the garage on Fridays.\n")
    write(src, "cars.md", "# Company cars\n\nA car may be taken home at weekends.\n")
    write(src, "bikes.md", "# Bikes\n\nBicycles can be repaired at the garage.\n")
    write(src, "lunch.md", "# Lunch\n\nLunch is served at noon.\n")
    make_base(core, "fleet", embedder=ConceptEmbedder(), sources=[src])
    core.documents.sync(owner(), "fleet")
    base = core.bases.find("default", "fleet")
    query = "automobile garage"
    _, keyword_hits = core.search.hits(base, query, mode="keywords")
    _, vector_hits = core.search.hits(base, query, mode="vectors")
    keyword_docs = [h.document for h in keyword_hits]
    assert "docs:fleet/cars.md" not in keyword_docs  # "car" is not a word of the query…
    assert vector_hits[0].document == "docs:fleet/repair.md"
    assert "docs:fleet/cars.md" in [h.document for h in vector_hits[:3]]  # …but it means the same

    body = client.post(URL.format("fleet"), json={"query": query}).json()
    assert body["mode"] == "hybrid"
    expected = rrf([[h.chunk_id for h in keyword_hits], [h.chunk_id for h in vector_hits]])
    by_id = {h.chunk_id: h.document for h in keyword_hits + vector_hits}
    assert labels(body) == [by_id[cid] for cid, _ in expected][:8]
    assert labels(body)[0] == "docs:fleet/repair.md"  # first in both rankings
    assert "docs:fleet/cars.md" in labels(body)


def test_a_viewer_searches_but_cannot_upload_or_sync(key_client, core, handbook):
    viewer = key_client("viewer")
    r = viewer.post(URL.format("handbook"), json={"query": "vacation"})
    assert r.status_code == 200 and r.json()["results"][0]["document"] == "docs:handbook/leave.md"
    assert viewer.get("/v1/metis/knowledge-bases/handbook/documents").status_code == 200
    r = viewer.post("/v1/metis/knowledge-bases/handbook/files", files=[("file", ("a.md", b"# A\n"))])
    assert r.status_code == 403 and r.json()["error"]["code"] == "PERMISSION_DENIED"
    assert viewer.post("/v1/metis/knowledge-bases/handbook/sync").status_code == 403
    assert viewer.post("/v1/metis/knowledge-bases/handbook/reindex").status_code == 403


def test_another_workspace_does_not_see_the_base(key_client, handbook):
    other = key_client("admin", workspace="acme")
    r = other.post(URL.format("handbook"), json={"query": "vacation"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "BASE_NOT_FOUND"
    assert other.get("/v1/metis/knowledge-bases/handbook/documents").status_code == 404
    r = other.post("/v1/metis/knowledge-bases/handbook/files", files=[("file", ("a.md", b"# A\n"))])
    assert r.status_code == 404


def test_hybrid_through_an_upstream_embedding_deployment(client, core, tmp_path, scripted_openai):
    """The real path: spec.embedding → core.runtimes → an OpenAI-compatible server (scripted, on 127.0.0.1)."""
    if not hasattr(core, "runtimes"):
        pytest.skip("core.runtimes is not there yet")
    r = client.put("/v1/eos/deployments/upstream-embed", json={
        "model": "scripted-embed", "kind": "embedding",
        "runtime": {"type": "upstream", "url": scripted_openai.url},
    })
    assert r.status_code in (200, 201), r.text
    src = tmp_path / "docs"
    write(src, "leave.md", "# Leave policy\n\n## Vacation\n\nEach person has 25 vacation days a year.\n")
    write(src, "lunch.md", "# Lunch\n\nLunch is served at noon.\n")
    r = client.post("/v1/metis/knowledge-bases", json={
        "metadata": {"name": "hb"}, "spec": {"sources": [{"folder": str(src)}], "embedding": {"deployment": "upstream-embed"}},
    })
    assert r.status_code == 201, r.text
    report = client.post("/v1/metis/knowledge-bases/hb/sync").json()
    assert report["added"] == 2 and report["dimensions"] == 64
    body = client.post(URL.format("hb"), json={"query": "vacation days"}).json()
    assert body["mode"] == "hybrid"
    assert body["results"][0]["document"] == "docs:hb/leave.md"
