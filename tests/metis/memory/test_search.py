"""Facts in search: passages cited like documents, current first, history found, as_of; reindex from the files."""

from __future__ import annotations

import json

import pytest

from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.metis.bases import KnowledgeBaseRequest
from astralyx.metis.memory.facts import Fact, render
from astralyx.metis.memory.store import JOURNAL

from .kit import fact, keep, three_roles

pytestmark = pytest.mark.engines  # indexes on SQLite and on PostgreSQL

SEARCH = "/v1/metis/knowledge-bases/team/search"


def search(client, query, **extra):
    r = client.post(SEARCH, json={"query": query, **extra})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def test_current_first_then_history_with_its_period(client, team):
    intern, lead, research, _ = three_roles(client)
    results = search(client, "What is Ana's role?")
    assert results[0] == {
        "ref": 1, "document": f"memory:team/{research['id']}", "title": "Ana — role",
        "where": "Ana › role › current since 2026-10-12", "text": "Ana works in research.",
    }
    assert {(r["text"], r["where"]) for r in results[1:3]} == {
        ("Ana leads the data team.", "Ana › role › held 2026-06-01 – 2026-10-12"),
        ("Ana is an intern.", "Ana › role › held 2026-01-01 – 2026-06-01"),
    }
    statuses = ["history" if "held" in r["where"] else "current" for r in results if r["title"] == "Ana — role"]
    assert statuses == ["current", "history", "history"]


def test_history_is_found_and_as_of_answers_what_held_then(client, team):
    three_roles(client)
    september = search(client, "What was Ana's role in September?")
    assert "Ana leads the data team." in [r["text"] for r in september]
    held = search(client, "What was Ana's role in September?", as_of="2026-09-15")
    assert [(r["text"], r["where"]) for r in held] == [("Ana leads the data team.", "Ana › role › held 2026-06-01 – 2026-10-12")]
    assert search(client, "Ana role", as_of="2025-01-01") == []
    r = client.post(SEARCH, json={"query": "Ana", "as_of": "September"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_DATE"


def test_the_index_follows_edit_and_forget(client, team):
    intern, lead, research, bruno = three_roles(client)
    client.put(f"/v1/metis/knowledge-bases/team/memory/{research['id']}", json={"fact": "Ana works in the research group."})
    assert search(client, "Ana role")[0]["text"] == "Ana works in the research group."
    client.delete(f"/v1/metis/knowledge-bases/team/memory/{research['id']}")
    first = search(client, "Ana role")[0]
    assert first["text"] == "Ana leads the data team." and first["where"] == "Ana › role › current since 2026-06-01"
    client.delete(f"/v1/metis/knowledge-bases/team/memory/{lead['id']}?history=true")
    assert [r for r in search(client, "Ana role") if r["title"] == "Ana — role"] == []


def test_reindex_rebuilds_the_same_answers_from_the_files(client, team):
    three_roles(client)
    before = search(client, "Ana role Bruno city")
    r = client.post("/v1/metis/knowledge-bases/team/reindex")
    assert r.status_code == 200, r.text
    assert search(client, "Ana role Bruno city") == before


def test_a_crash_is_repaired_at_start_and_the_index_follows(core, admin, team, client):
    old = keep(client, fact("Ana", "role", "Ana leads the data team.", "2026-09-01"))["facts"][0]
    new = Fact("f_" + "e" * 16, "Ana", "role", "Ana works in research.", "chat: y", "2026-10-12", "2099-01-01T00:00:00Z")
    ops = [(f"notes/memory/{new.id}.md", render(new)), (f"notes/memory/{old['id']}.md", None)]
    (team.folder / JOURNAL).write_text(json.dumps({"ops": ops}))  # crashed before applying anything
    fresh = Astralyx(Settings.load(core.home)).start()  # start: the interrupted change is finished
    try:
        assert not (team.folder / JOURNAL).exists()
        results = fresh.search.search(admin, "team", "Ana role").results
    finally:
        fresh.close()
    assert [(r.text, r.where) for r in results] == [("Ana works in research.", "Ana › role › current since 2026-10-12")]


def test_a_documents_base_notes_memory_folder_is_ordinary_notes(client, core, admin):
    core.bases.create(admin, KnowledgeBaseRequest.model_validate({"metadata": {"name": "handbook"}}))
    note = {"content": "# Offsite\n\nPorto in March.\n"}
    r = client.put("/v1/metis/knowledge-bases/handbook/notes/memory/offsite.md", json=note)
    assert r.status_code in (200, 201), r.text
    results = client.post("/v1/metis/knowledge-bases/handbook/search", json={"query": "Porto"}).json()["results"]
    assert results and results[0]["document"] == "notes:handbook/memory/offsite.md"


def test_history_is_found_among_many_current_facts(client, team):
    three_roles(client)
    people = ["Bruno", "Carla", "Dinis", "Eva", "Filipe", "Gil", "Helena", "Ivo", "Joana", "Kiko", "Lara", "Mia"]
    keep(client, *[fact(p, "city", f"{p} was living in Lisbon in September.", "2026-09-01") for p in people])
    keep(client, *[fact(p, "team", f"{p} was in the platform team.", "2026-08-01") for p in people])
    results = search(client, "What was Ana's role in September?")
    texts = [r["text"] for r in results]
    # which one comes first is the September asked about's (test_dates.py)
    assert sorted(texts[:3]) == ["Ana is an intern.", "Ana leads the data team.", "Ana works in research."]


def test_hybrid_search_of_a_memory_with_an_embedding(client, core):
    from ..kit import ConceptEmbedder, make_base

    make_base(core, "team", embedder=ConceptEmbedder(), kind="memory")
    intern, lead, research, bruno = three_roles(client)
    body = client.post(SEARCH, json={"query": "What was Ana's role in September?"}).json()
    assert body["mode"] == "hybrid"
    roles = ["Ana is an intern.", "Ana leads the data team.", "Ana works in research."]
    assert sorted(r["text"] for r in body["results"][:3]) == roles
    held = client.post(SEARCH, json={"query": "Ana role", "as_of": "2026-09-15"}).json()["results"]
    assert [r["document"] for r in held] == [f"memory:team/{lead['id']}"]
