"""Metis's answers are the domain's models, declared by the routes: the API answers what its document says, filtered by it."""

from __future__ import annotations

import json

from astralyx.metis import jobs

from .metis.kit import make_base, owner

BASES = "/v1/metis/knowledge-bases"


def test_a_sync_status_another_process_published_is_answered_as_documented(client, core, tmp_path):
    # Another replica (of another version, say) runs the base's sync and publishes its status with a field of its own.
    make_base(core, "hb")
    elsewhere = jobs.SyncJob(workspace="default", base="hb", kind="sync")
    assert jobs.JobStore(core.db).claim(elsewhere) is None
    published = {**elsewhere.to_dict(), "worker_host": "10.0.0.7", "embedder_pid": 4242}
    with core.db.transaction() as conn:
        conn.execute("UPDATE sync_jobs SET status=? WHERE workspace=? AND base=?", (json.dumps(published), "default", "hb"))

    r = client.get(f"{BASES}/hb/sync")
    assert r.status_code == 200, r.text
    status = r.json()
    assert (status["id"], status["state"], status["knowledge_base"]) == (elsewhere.id, "queued", "hb")
    assert "worker_host" not in status and "embedder_pid" not in status  # not in the document: not answered
    assert set(status) == {"id", "knowledge_base", "kind", "state", "phase", "files", "passages", "passages_per_second",
                           "eta_seconds", "document", "queued_at", "started_at", "finished_at", "errors", "warnings",
                           "report", "error", "index"}


def test_a_notes_front_matter_dates_are_answered_as_json(client, core):
    # YAML reads an unquoted date as a date: the answer says it as JSON does (before: a 500 on the JSON encoder).
    make_base(core, "hb")
    note = "---\ntitle: Offsite\ndate: 2026-03-12\n---\n\nPorto in March.\n"
    r = client.put(f"{BASES}/hb/notes/offsite.md", content=note, headers={"content-type": "text/markdown"})
    assert r.status_code == 201, r.text
    assert r.json()["metadata"] == {"title": "Offsite", "date": "2026-03-12"}
    r = client.get(f"{BASES}/hb/notes/offsite.md")
    assert r.status_code == 200 and r.json()["metadata"]["date"] == "2026-03-12"
    assert r.headers["etag"] == f'"{r.json()["version"]}"'


def test_every_metis_answer_is_in_the_document(client):
    doc = client.get("/v1/openapi.json").json()
    paths, schemas = doc["paths"], doc["components"]["schemas"]

    def answer(path: str, method: str, status: str = "200") -> dict:
        ref = paths[path][method]["responses"][status]["content"]["application/json"]["schema"]
        return ref if "$ref" not in ref else schemas[ref["$ref"].rsplit("/", 1)[1]]

    base, memory = f"{BASES[3:]}/{{name}}", f"{BASES[3:]}/{{base}}/memory"
    declared = {
        (BASES[3:], "get"): "knowledge_bases", (BASES[3:], "post", "201"): "metadata", (base, "get"): "spec",
        (base, "put"): "spec", (base, "delete"): "deleted",
        (f"{BASES[3:]}/{{base}}/search", "post"): "results",
        (memory, "post"): "facts", (memory, "get"): "subjects", (f"{memory}/{{fact_id}}", "get"): "held",
        (f"{memory}/{{fact_id}}", "put"): "held", (f"{memory}/{{fact_id}}", "delete"): "forgotten",
        (f"{BASES[3:]}/{{base}}/notes", "get"): "notes", (f"{BASES[3:]}/{{base}}/notes/{{path}}", "get"): "content",
        (f"{BASES[3:]}/{{base}}/saved/{{path}}", "put"): "content", (f"{BASES[3:]}/{{base}}/notes/{{path}}", "delete"): "deleted",
        (f"{BASES[3:]}/{{base}}/model-saves", "get"): "saves", (f"{BASES[3:]}/{{base}}/drafts", "get"): "drafts",
        (f"{BASES[3:]}/{{base}}/drafts/{{draft_id}}/save", "post"): "save",
        (f"{BASES[3:]}/{{base}}/sync", "post"): "added", (f"{BASES[3:]}/{{base}}/reindex", "post"): "removed",
    }
    for (path, method, *status), field in declared.items():
        assert field in answer(path, method, *status).get("properties", {}), (method, path)
    passage = schemas["Passage"]["properties"]
    assert passage["also_in"] == {"type": "integer", "title": "Also In", "description": passage["also_in"]["description"]}
    assert "also_in" not in schemas["Passage"]["required"]  # absent when no other document holds the passage
    sync = answer(f"{BASES[3:]}/{{base}}/sync", "get")
    assert {s["$ref"].rsplit("/", 1)[1] for s in sync["anyOf"]} == {"SyncStatus", "IdleSync"}


def test_the_domain_answers_models_and_the_api_the_same_json(client, core):
    make_base(core, "team", kind="memory")
    fact = {"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team.", "said_at": "2026-09-01"}
    kept = core.memory.keep(owner(), "team", [fact])
    assert (kept.kept, kept.facts[0].change, kept.facts[0].status) == (1, "new", "current")
    listing = core.memory.list(owner(), "team")
    assert client.get(f"{BASES}/team/memory").json() == listing.model_dump()
    found = core.search.search(owner(), "team", "Ana role")
    assert client.post(f"{BASES}/team/search", json={"query": "Ana role"}).json() == found.model_dump()
    assert "also_in" not in found.model_dump()["results"][0]  # left out, as always, when no other document holds it


def test_a_sync_answers_its_report_as_documented(client, core):
    make_base(core, "hb")
    core.notes.write(owner(), "hb", "notes", "a.md", "Porto in March.")
    for route in ("sync", "reindex"):
        r = client.post(f"{BASES}/hb/{route}")
        assert r.status_code == 200, r.text
        assert set(r.json()) == {"knowledge_base", "added", "changed", "unchanged", "removed", "failed", "documents",
                                 "chunks", "embedding", "dimensions"}
        assert r.json()["documents"] == 1 and r.json()["failed"] == []
