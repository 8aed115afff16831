"""Identical passages in a base are indexed once, answered with their first document and `also_in`."""

from __future__ import annotations

import json

import pytest

from astralyx.eos import knowledge
from astralyx.metis.chunking import Chunk
from astralyx.metis.index import copies
from astralyx.metis.index.passages import Entry
from astralyx.metis.index.sqlite_store import SqliteIndexStore
from astralyx.migrations.index import V1, V2
from astralyx.sqlite import Database

from .kit import ConceptEmbedder, make_base, owner, write

pytestmark = pytest.mark.engines  # the tests of a core run on SQLite and on PostgreSQL

BASE = "/v1/metis/knowledge-bases/{}"
SHARED = "Ferris the crab is the unofficial mascot of the Rust community."


def _book(tmp_path):
    src = tmp_path / "book"
    write(src, "ch01.md", f"# Getting started\n\n{SHARED}\n\n## Install\n\nRun rustup to install the toolchain.\n")
    write(src, "ch02.md", f"# Guessing game\n\n{SHARED}\n")
    # a copy of the whole book in one page, spaced differently: the same passages
    spaced = SHARED.replace(" ", "  ")
    write(src, "print.md", f"# Getting started\n\n{spaced}\n\n## Install\n\nRun rustup to install   the toolchain.\n")
    return src


def _search(client, name: str, query: str) -> list[dict]:
    return client.post(BASE.format(name) + "/search", json={"query": query}).json()["results"]


def test_a_passage_held_by_several_documents_is_answered_once(client, core, tmp_path):
    make_base(core, "rust", embedder=ConceptEmbedder(), sources=[_book(tmp_path)])
    client.post(BASE.format("rust") + "/sync")
    found = _search(client, "rust", "Ferris crab mascot")
    ferris = [r for r in found if "Ferris" in r["text"]]
    assert len(ferris) == 1
    assert ferris[0]["document"] == "docs:rust/ch01.md" and ferris[0]["also_in"] == 2
    install = [r for r in _search(client, "rust", "rustup toolchain") if "rustup" in r["text"]]
    assert [(r["document"], r["also_in"]) for r in install] == [("docs:rust/ch01.md", 1)]
    # every document still lists all its passages
    docs = {d["document"]: d["chunks"] for d in client.get(BASE.format("rust") + "/documents").json()["documents"]}
    assert docs == {"docs:rust/ch01.md": 2, "docs:rust/ch02.md": 1, "docs:rust/print.md": 2}
    # a passage of one document alone has no also_in (the answer's shape as before)
    store = core.index.store(core.bases.find("default", "rust"))
    assert store._answered_count() == 2 and store.count() == (3, 5)
    # the model's tool gets the same passage shape
    tool = knowledge.search(core.search, owner(), "rust", "Ferris crab mascot")
    assert [r["also_in"] for r in tool["results"] if "Ferris" in r["text"]] == [2]


class CountingEmbedder(ConceptEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed_passages(self, texts: list[str]):
        self.texts.extend(texts)
        return super().embed_passages(texts)


def test_a_copy_is_not_embedded_again(client, core, tmp_path):
    src = _book(tmp_path)
    embedder = CountingEmbedder()
    make_base(core, "rust", embedder=embedder, sources=[src])
    client.post(BASE.format("rust") + "/sync")
    assert len(embedder.texts) == 2  # 5 passages, 2 different ones
    write(src, "ch03.md", f"# Ownership\n\n{SHARED}\n\n## Moves\n\nA value has one owner.\n")
    client.post(BASE.format("rust") + "/sync")
    assert len(embedder.texts) == 3 and "A value has one owner." in embedder.texts[-1]
    # the first copy's document changed (its passage kept): the passage keeps a vector, answered by another copy
    write(src, "ch01.md", f"# Getting started\n\n{SHARED}\n\n## Install\n\nRun cargo new.\n")
    client.post(BASE.format("rust") + "/sync")
    store = core.index.store(core.bases.find("default", "rust"))
    assert store._vector_count() == store._answered_count()
    _, hits = core.search.hits(core.bases.find("default", "rust"), "Ferris crab mascot", mode="vectors")
    assert "Ferris" in hits[0].text and hits[0].also_in == 3


def test_deleting_the_first_copy_makes_another_copy_the_answer(client, core, tmp_path):
    src = _book(tmp_path)
    make_base(core, "rust", embedder=ConceptEmbedder(), sources=[src])
    client.post(BASE.format("rust") + "/sync")
    (src / "ch01.md").unlink()
    client.post(BASE.format("rust") + "/sync")
    ferris = [r for r in _search(client, "rust", "Ferris crab mascot") if "Ferris" in r["text"]]
    assert [(r["document"], r["also_in"]) for r in ferris] == [("docs:rust/ch02.md", 1)]
    base = core.bases.find("default", "rust")
    # found by its vector too, and by keywords alone
    for mode in ("vectors", "keywords"):
        _, hits = core.search.hits(base, "Ferris crab mascot", mode=mode)
        assert hits[0].document == "docs:rust/ch02.md" and "Ferris" in hits[0].text, mode
    (src / "ch02.md").unlink()
    client.post(BASE.format("rust") + "/sync")
    ferris = [r for r in _search(client, "rust", "Ferris crab mascot") if "Ferris" in r["text"]]
    assert [(r["document"], r.get("also_in")) for r in ferris] == [("docs:rust/print.md", None)]
    (src / "print.md").unlink()
    client.post(BASE.format("rust") + "/sync")
    assert _search(client, "rust", "Ferris crab mascot") == []


def test_a_change_of_embedding_leaves_every_answered_passage_with_a_vector(client, core, tmp_path):
    make_base(core, "rust", embedder=ConceptEmbedder(), sources=[_book(tmp_path)])
    client.post(BASE.format("rust") + "/sync")
    core.index.embedder_for = lambda base: ConceptEmbedder(dimensions=32, name="other")
    client.post(BASE.format("rust") + "/sync")  # every document embedded again, the first copies changing hands
    store = core.index.store(core.bases.find("default", "rust"))
    assert store.dimensions == 32
    assert store._vector_count() == store._answered_count() == 2
    base = core.bases.find("default", "rust")
    _, hits = core.search.hits(base, "Ferris crab mascot", mode="vectors")
    assert "Ferris" in hits[0].text and hits[0].also_in == 2


def test_a_copy_whose_first_went_before_it_was_written_is_embedded_after_all(tmp_path):
    # A sync embeds outside the base's lock: the holder to_embed counted on may be gone by the time it writes.
    import numpy as np

    index = SqliteIndexStore(tmp_path / "index.db")
    index.set_embedding("test", 2)

    def entry(key: str, text: str) -> Entry:
        return Entry(key=key, origin="files", kind="docs", label=f"docs:b/{key}", title="T", hash=key,
                     chunks=[Chunk(text, [])])

    first = entry("files/a.md", SHARED)
    first.vectors = np.array([[1.0, 0.0]], dtype=np.float32)
    index.write([first])
    later = [entry("files/b.md", "Another passage."), entry("files/c.md", SHARED)]
    need = copies.to_embed(index, later, set())
    assert need == [[True], [False]]  # a copy of a.md's passage: not embedded
    later[0].vectors = np.array([[0.0, 1.0]], dtype=np.float32)
    later[1].vectors = np.full((1, 2), np.nan, dtype=np.float32)
    assert copies.missing_vectors(index, later) == []
    index.remove(["files/a.md"])  # meanwhile: the first copy goes
    assert copies.missing_vectors(index, later) == [(1, 0)]
    index.close()


def test_facts_and_passages_of_other_kinds_are_not_merged(tmp_path):
    index = SqliteIndexStore(tmp_path / "index.db")
    index.write([
        Entry(key="notes/memory/f_1.md", origin="notes", kind="memory", label="memory:m/f_1", title="Ana — role",
              hash="1", chunks=[Chunk("Ana leads the data team.", [])]),
        Entry(key="notes/memory/history/f_2.md", origin="notes", kind="memory", label="memory:m/f_2", title="Ana — role",
              hash="2", chunks=[Chunk("Ana leads the data team.", [])]),
        Entry(key="notes/a.md", origin="notes", kind="notes", label="notes:m/a.md", title="A", hash="3",
              chunks=[Chunk("Ana leads the data team.", [])]),
        Entry(key="files/a.md", origin="files", kind="docs", label="docs:m/a.md", title="A", hash="4",
              chunks=[Chunk("Ana leads the data team.", [])]),
    ])
    assert len(index.keyword_ids("Ana data team", 10)) == 4
    index.close()


def test_an_index_made_before_copies_were_merged_is_brought_in_step(tmp_path):
    path = tmp_path / "index.db"
    db = Database(path, extensions=True)
    db.script(V1 + V2)  # the tables as they were, without fingerprints (no schema_version: before versions)
    with db.transaction() as conn:
        for doc_id, label in ((1, "docs:b/one.md"), (2, "docs:b/two.md")):
            conn.execute("INSERT INTO documents(id, key, origin, kind, label, title, hash, chunks, indexed_at) "
                         "VALUES (?,?,?,?,?,?,?,?,?)", (doc_id, label, "source", "docs", label, "T", "h", 1, "2026-01-01"))
            conn.execute("INSERT INTO chunks(id, doc_id, ord, text, headings) VALUES (?,?,?,?,?)",
                         (doc_id, doc_id, 0, "The same passage twice.", json.dumps([])))
            conn.execute("INSERT INTO chunks_fts(rowid, title, headings, text) VALUES (?,?,?,?)",
                         (doc_id, "T", "", "The same passage twice."))
    db.close()
    index = SqliteIndexStore(path)
    assert index.keyword_ids("same passage", 10) == [1]
    assert index.rows([1])[1].also_in == 1
    assert int(index.meta("keywords_generation") or 0) == 1  # the keyword sidecar sees the change
    index.remove(["docs:b/one.md"])
    assert index.keyword_ids("same passage", 10) == [2]
    index.close()
