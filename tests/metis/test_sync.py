"""Sync with source folders (add/change/remove, unchanged skipped), uploads, progress, the CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from astralyx.cli import cli

from .kit import ConceptEmbedder, labels, make_base, make_pdf, owner, write

pytestmark = pytest.mark.engines  # indexes on SQLite and on PostgreSQL

BASE = "/v1/metis/knowledge-bases/{}"


def test_incremental_sync_adds_changes_and_removes(client, core, tmp_path):
    src = tmp_path / "handbook"
    write(src, "leave.md", "# Leave\n\nTwenty five vacation days.\n")
    write(src, "travel.md", "# Travel\n\nTrains in second class.\n")
    write(src, "photo.jpg", "not a document")
    write(src, ".hidden/secret.md", "# Secret\n\nhidden\n")
    embedder = ConceptEmbedder()
    make_base(core, "handbook", embedder=embedder, sources=[src])

    first = client.post(BASE.format("handbook") + "/sync").json()
    assert (first["added"], first["changed"], first["unchanged"], first["removed"]) == (2, 0, 0, 0)
    assert first["documents"] == 2 and first["failed"] == []

    calls = embedder.calls
    again = client.post(BASE.format("handbook") + "/sync").json()
    assert (again["added"], again["changed"], again["unchanged"], again["removed"]) == (0, 0, 2, 0)
    assert embedder.calls == calls  # unchanged files are not embedded again

    write(src, "leave.md", "# Leave\n\nThirty vacation days from 2027.\n")
    write(src, "policies/expenses.txt", "Expenses are paid monthly.\n")
    (src / "travel.md").unlink()
    third = client.post(BASE.format("handbook") + "/sync").json()
    assert (third["added"], third["changed"], third["unchanged"], third["removed"]) == (1, 1, 0, 1)

    search = BASE.format("handbook") + "/search"
    found = labels(client.post(search, json={"query": "trains"}).json())
    assert "docs:handbook/travel.md" not in found
    assert not any("Twenty five" in r["text"] for r in client.post(search, json={"query": "twenty five"}).json()["results"])
    hit = client.post(search, json={"query": "thirty vacation days"}).json()["results"][0]
    assert hit["document"] == "docs:handbook/leave.md" and hit["text"] == "Thirty vacation days from 2027."
    docs = client.get(BASE.format("handbook") + "/documents").json()
    assert [d["document"] for d in docs["documents"]] == ["docs:handbook/leave.md", "docs:handbook/policies/expenses.txt"]
    assert docs["documents"][0]["title"] == "Leave" and docs["documents"][0]["origin"] == "source"
    assert docs["index"] == {"documents": 2, "chunks": 2, "embedding": "e5|concepts|64", "dimensions": 64}


def test_a_missing_source_folder_is_a_clear_error(client, core, tmp_path):
    make_base(core, "gone", sources=[tmp_path / "nowhere"])
    r = client.post(BASE.format("gone") + "/sync")
    assert r.status_code == 404 and r.json()["error"]["code"] == "SOURCE_NOT_FOUND"
    assert "spec.sources" in r.json()["error"]["message"]


def test_a_broken_file_is_reported_and_the_others_indexed(client, core, tmp_path):
    src = tmp_path / "docs"
    write(src, "good.md", "# Good\n\nfine text\n")
    (src / "bad.pdf").write_bytes(b"%PDF-1.4 broken")
    make_base(core, "mixed", sources=[src])
    report = client.post(BASE.format("mixed") + "/sync").json()
    assert report["added"] == 1
    assert [f["document"] for f in report["failed"]] == ["docs:mixed/bad.pdf"]


def test_uploads_are_kept_in_files_and_indexed(client, core):
    make_base(core, "hb")
    pdf = make_pdf([["Travel policy", "Trains in second class."], ["Hotels up to 150 euros."]])
    r = client.post(BASE.format("hb") + "/files", files=[
        ("file", ("travel.pdf", pdf, "application/pdf")),
        ("file", ("../../etc/leave policy.md", b"# Leave\n\n## Vacation\n\n25 days.\n", "text/markdown")),
        ("file", ("page.html", b"<h1>Wiki</h1><p>Parking is free.</p>", "text/html")),
    ])
    assert r.status_code == 201, r.text
    uploaded = r.json()["uploaded"]
    assert [u["name"] for u in uploaded] == ["travel.pdf", "leave policy.md", "page.html"]
    assert uploaded[0] | {"sha256": ""} == {
        "name": "travel.pdf", "document": "docs:hb/travel.pdf", "title": "Travel policy", "chunks": 2,
        "size": len(pdf), "sha256": "", "replaced": False,
    }
    folder = core.bases.find("default", "hb").folder / "files"
    assert sorted(p.name for p in folder.iterdir()) == ["leave policy.md", "page.html", "travel.pdf"]
    assert (folder / "travel.pdf").read_bytes() == pdf

    hotel = client.post(BASE.format("hb") + "/search", json={"query": "hotels euros"}).json()["results"][0]
    assert (hotel["document"], hotel["where"]) == ("docs:hb/travel.pdf", "page 2")
    days = client.post(BASE.format("hb") + "/search", json={"query": "days"}).json()["results"][0]
    assert (days["document"], days["where"]) == ("docs:hb/leave policy.md", "Leave › Vacation › line 5")

    files = client.get(BASE.format("hb") + "/files").json()["files"]
    assert [f["name"] for f in files] == ["leave policy.md", "page.html", "travel.pdf"]
    again = client.post(BASE.format("hb") + "/files", files=[("file", ("page.html", b"<p>Parking costs 2 euros.</p>"))])
    assert again.json()["uploaded"][0]["replaced"] is True
    assert client.delete(BASE.format("hb") + "/files/travel.pdf").json() == {"deleted": "travel.pdf"}
    assert client.post(BASE.format("hb") + "/search", json={"query": "hotels"}).json()["results"] == []
    assert client.delete(BASE.format("hb") + "/files/travel.pdf").status_code == 404
    # A sync keeps uploads (they are files of the base), and notices one removed behind its back.
    (folder / "page.html").unlink()
    report = client.post(BASE.format("hb") + "/sync").json()
    assert (report["unchanged"], report["removed"], report["documents"]) == (1, 1, 1)


def test_uploads_refused_clearly(client, core):
    make_base(core, "team", kind="memory")
    r = client.post(BASE.format("team") + "/files", files=[("file", ("a.md", b"# A\n"))])
    assert r.status_code == 409 and r.json()["error"]["code"] == "NOT_A_DOCUMENTS_BASE"
    make_base(core, "hb")
    r = client.post(BASE.format("hb") + "/files", files=[("file", ("photo.jpg", b"\xff\xd8"))])
    assert r.status_code == 422 and r.json()["error"]["code"] == "UNSUPPORTED_FILE_TYPE"
    r = client.post(BASE.format("hb") + "/files", files=[("file", ("broken.pdf", b"%PDF-1.4 not really"))])
    assert r.status_code == 422 and r.json()["error"]["code"] == "UNREADABLE_FILE"
    assert client.get(BASE.format("hb") + "/files").json()["files"] == []
    r = client.post(BASE.format("hb") + "/files", files=[("file", ("...", b"x"))])
    assert r.status_code == 400 and r.json()["error"]["code"] == "BAD_FILE_NAME"
    assert client.post(BASE.format("nope") + "/files", files=[("file", ("a.md", b"x"))]).status_code == 404


def test_sync_streams_progress_lines(client, core, tmp_path):
    src = tmp_path / "many"
    for i in range(120):
        write(src, f"n{i:03}.md", f"# Note {i}\n\nsome text number {i}\n")
    make_base(core, "many", embedder=ConceptEmbedder(), sources=[src])
    with client.stream("POST", BASE.format("many") + "/sync?progress=true") as r:
        assert r.headers["content-type"].startswith("application/x-ndjson")
        events = [json.loads(line) for line in r.iter_lines() if line]
    progress = [e["progress"] for e in events if "progress" in e]
    assert progress and progress[-1]["done"] == progress[-1]["total"] == 120
    assert progress[-1]["passages"] == {"done": 120, "total": 120} and progress[-1]["state"] == "finished"
    assert [p["done"] for p in progress] == sorted(p["done"] for p in progress)
    assert events[-1]["result"]["added"] == 120
    r = client.post(BASE.format("nothere") + "/sync?progress=true")
    assert r.status_code == 404  # checked before the stream starts


def test_sync_all_at_start_keeps_going_past_a_broken_base(core, tmp_path):
    src = tmp_path / "docs"
    write(src, "a.md", "# A\n\nalpha\n")
    make_base(core, "one", sources=[src])
    make_base(core, "two", sources=[tmp_path / "missing"])
    done = core.sync_all()
    assert done["default/one"]["added"] == 1
    assert done["default/two"]["added"] == 0  # an absent folder has no files: nothing to index
    assert labels(core.search.search(owner(), "one", "alpha")) == ["docs:one/a.md"]


def test_the_cli(home, tmp_path):
    runner = CliRunner()
    src = tmp_path / "handbook"
    write(src, "leave.md", "# Leave policy\n\n## Vacation\n\nEach person has 25 vacation days a year.\n")
    from astralyx.config import Settings
    from astralyx.core import Astralyx

    core = Astralyx(Settings.load(home)).start()
    make_base(core, "handbook", sources=[src])
    core.close()

    r = runner.invoke(cli, ["metis", "sync", "handbook"])
    assert r.exit_code == 0, r.output
    assert "synced handbook: 1 added, 0 changed, 0 unchanged, 0 removed — 1 document(s), 1 passage(s) indexed" in r.output

    doc = tmp_path / "travel.md"
    doc.write_text("# Travel\n\nTrains are booked in second class.\n")
    r = runner.invoke(cli, ["metis", "upload", "handbook", str(doc)])
    assert r.exit_code == 0, r.output
    assert "uploaded docs:handbook/travel.md  (Travel, 1 passage(s))" in r.output

    r = runner.invoke(cli, ["metis", "search", "handbook", "vacation days"])
    assert r.exit_code == 0, r.output
    assert "[1] docs:handbook/leave.md  Leave policy › Vacation › line 5" in r.output
    assert "Each person has 25 vacation days a year." in r.output
    r = runner.invoke(cli, ["metis", "search", "handbook", "vacation", "--json"])
    assert json.loads(r.output)["results"][0]["ref"] == 1
    r = runner.invoke(cli, ["metis", "search", "handbook", "zebra"])
    assert "nothing found in handbook (keywords)" in r.output

    r = runner.invoke(cli, ["metis", "documents", "handbook"])
    assert "docs:handbook/leave.md" in r.output and "docs:handbook/travel.md" in r.output
    r = runner.invoke(cli, ["metis", "reindex", "handbook"])
    assert r.exit_code == 0 and "reindexed handbook: 2 added" in r.output
    r = runner.invoke(cli, ["metis", "files", "handbook"])
    assert "travel.md" in r.output
    r = runner.invoke(cli, ["metis", "files", "handbook", "--delete", "travel.md"])
    assert "deleted travel.md" in r.output
    r = runner.invoke(cli, ["metis", "upload", "handbook", str(doc), "--json"])
    assert json.loads(r.output)["uploaded"][0]["name"] == "travel.md"
    r = runner.invoke(cli, ["metis", "sync", "nope"])
    assert r.exit_code == 1 and "BASE_NOT_FOUND" in r.output


def test_astra_serve_syncs_the_bases_at_start(home, tmp_path):
    import os
    import socket
    import subprocess
    import sys
    import time

    import httpx

    from astralyx.config import Settings
    from astralyx.core import Astralyx

    src = tmp_path / "handbook"
    write(src, "leave.md", "# Leave policy\n\nEach person has 25 vacation days a year.\n")
    core = Astralyx(Settings.load(home)).start()
    make_base(core, "handbook", sources=[src])
    core.close()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "ASTRALYX_API"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "astralyx", "serve", "--port", str(port), "--home", str(home)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    url = f"http://127.0.0.1:{port}/v1/metis/knowledge-bases/handbook/search"
    headers = {"Authorization": f"Bearer {env['ASTRALYX_TOKEN']}"}
    try:
        deadline = time.monotonic() + 90
        results: list = []
        while not results:
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not sync the base"
            try:
                results = httpx.post(url, json={"query": "vacation"}, headers=headers).json()["results"]
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        assert results[0]["document"] == "docs:handbook/leave.md"
        job = wait_until_finished(url.removesuffix("/search") + "/sync", headers)
        assert job["kind"] == "sync" and job["report"]["added"] == 1 and job["files"]["done"] == 1
    finally:
        proc.terminate()
        proc.communicate(timeout=20)


def wait_until_finished(url: str, headers: dict) -> dict:
    """The start-up sync's job, read as anyone who may read the base does, once it has ended."""
    import time

    import httpx

    deadline = time.monotonic() + 30
    while True:
        job = httpx.get(url, headers=headers).json()
        if job["state"] in ("finished", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.1)
