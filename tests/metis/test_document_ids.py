"""Documents of different sources have different ids; an index made before follows at its next sync."""

from __future__ import annotations

import pytest

from astralyx.metis.chunking import VERSION as CHUNKING
from astralyx.metis.document_ids import source_names

from .kit import ConceptEmbedder, make_base, owner, write

pytestmark = pytest.mark.engines  # indexes on SQLite and on PostgreSQL

BASE = "/v1/metis/knowledge-bases/{}"


@pytest.fixture(autouse=True)
def _source_roots(monkeypatch, tmp_path):
    """API keys name folder sources here: the operator allows the test's folder (metis/roots.py)."""
    monkeypatch.setenv("ASTRALYX_SOURCE_ROOTS", str(tmp_path))


def documents(client, name: str) -> list[str]:
    return [d["document"] for d in client.get(BASE.format(name) + "/documents").json()["documents"]]


def search(client, name: str, query: str) -> list[tuple[str, str]]:
    r = client.post(BASE.format(name) + "/search", json={"query": query})
    assert r.status_code == 200, r.text
    return [(hit["document"], hit["text"]) for hit in r.json()["results"]]


def two_folders(tmp_path):
    git, handbook = tmp_path / "git", tmp_path / "handbook"
    write(git, "README.md", "# Git\n\nGit tracks content with snapshots.\n")
    write(handbook, "README.md", "# Handbook\n\nVacation is booked in the HR tool.\n")
    write(handbook, "travel/trains.md", "# Trains\n\nTrains are booked in second class.\n")
    return git, handbook


def create(client, name, *folders):
    spec = {"sources": [{"folder": str(f)} for f in folders], "embedding": None}
    r = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": name}, "spec": spec})
    assert r.status_code == 201, r.text
    r = client.post(BASE.format(name) + "/sync")
    assert r.status_code == 200, r.text
    return r.json()


def test_two_sources_with_the_same_file_name_are_both_indexed_and_found(client, tmp_path):
    git, handbook = two_folders(tmp_path)
    create(client, "twosrc", git, handbook)
    assert documents(client, "twosrc") == [
        "docs:twosrc/git/README.md", "docs:twosrc/handbook/README.md", "docs:twosrc/handbook/travel/trains.md",
    ]
    assert search(client, "twosrc", "snapshots")[0] == ("docs:twosrc/git/README.md", "Git tracks content with snapshots.")
    assert search(client, "twosrc", "vacation")[0] == ("docs:twosrc/handbook/README.md", "Vacation is booked in the HR tool.")


def test_a_base_with_one_source_keeps_its_ids(client, tmp_path):
    _, handbook = two_folders(tmp_path)
    create(client, "handbook", handbook)
    assert documents(client, "handbook") == ["docs:handbook/README.md", "docs:handbook/travel/trains.md"]


def test_a_second_source_renames_the_first_ones_documents_at_the_next_sync(client, tmp_path):
    git, handbook = two_folders(tmp_path)
    create(client, "hb", handbook)
    r = client.put(BASE.format("hb"), json={"spec": {"sources": [{"folder": str(handbook)}, {"folder": str(git)}]}})
    assert r.status_code == 200, r.text
    report = client.post(BASE.format("hb") + "/sync").json()
    assert (report["added"], report["changed"], report["unchanged"]) == (1, 2, 0)
    assert documents(client, "hb") == ["docs:hb/git/README.md", "docs:hb/handbook/README.md", "docs:hb/handbook/travel/trains.md"]
    assert search(client, "hb", "trains")[0][0] == "docs:hb/handbook/travel/trains.md"
    again = client.post(BASE.format("hb") + "/sync").json()
    assert (again["changed"], again["unchanged"]) == (0, 3)


def test_an_index_made_by_an_older_chunking_reads_its_files_again_once(client, core, tmp_path):
    _, handbook = two_folders(tmp_path)
    create(client, "hb", handbook)
    base = core.bases.get(owner(), "hb")
    store = core.index.store(base)
    assert store.meta("chunking") == CHUNKING
    store.set_meta("chunking", None)  # as an index made before passages kept their labels
    report = client.post(BASE.format("hb") + "/sync").json()
    assert (report["changed"], report["unchanged"]) == (2, 0)
    assert store.meta("chunking") == CHUNKING
    assert client.post(BASE.format("hb") + "/sync").json()["unchanged"] == 2


def test_source_names():
    assert source_names(["/srv/docs"]) == [None]
    assert source_names(["/a/docs", "/b/docs/", "/c/docs-2", "/"]) == ["docs", "docs-2", "docs-2-2", "source-4"]


def test_files_read_again_keep_their_vectors(core, tmp_path):
    git, handbook = two_folders(tmp_path)
    base = make_base(core, "hb", embedder=ConceptEmbedder(), sources=[handbook, git])
    core.documents.sync(owner(), "hb")
    before = [h.document for h in core.search.hits(base, "vacation HR tool", mode="vectors")[1]]
    core.index.store(base).set_meta("chunking", None)
    assert core.documents.sync(owner(), "hb")["changed"] == 3
    after = [h.document for h in core.search.hits(base, "vacation HR tool", mode="vectors")[1]]
    assert sorted(after) == sorted(before) and after[0] == before[0] == "docs:hb/handbook/README.md"  # the rest: ties
