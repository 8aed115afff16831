"""The HNSW sidecar of a base's vectors: the same answers as the exact scan, kept in step with
adds, replaces and deletes, rebuilt when stale or missing while searches go on answering."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pytest

from astralyx.metis.chunking import Chunk
from astralyx.metis.index import SqliteIndexStore
from astralyx.metis.index.passages import Entry
from astralyx.metis.index.vectors import SYNC_BUILD
from astralyx.metis.search import SearchResult

from .kit import ConceptEmbedder, labels, make_base, owner


class Embedder(ConceptEmbedder):
    """Concepts plus a little noise of the text's own: like a real model, no two texts tie."""

    def _vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = super()._vector(text) + 0.05 * np.random.default_rng(seed).standard_normal(self.dimensions)
        return (v / np.linalg.norm(v)).astype(np.float32)

TOPICS = ["harbour", "glacier", "violin", "orchard", "comet", "lantern", "canyon", "falcon", "meadow", "saffron",
          "quartz", "tundra", "walrus", "pepper", "ember", "velvet", "marble", "thistle", "copper", "lagoon"]


def corpus(folder, n: int) -> None:
    """n notes, each about three topics of its own mix (distinct vectors, few ties)."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        words = [TOPICS[i % 20], TOPICS[(i * 7 + 3) % 20], TOPICS[(i * 13 + 5) % 20]]
        text = f"# Note {i}\n\nAbout the {words[0]} and the {words[1]}, then {words[2]} {words[0]} number{i}.\n"
        (folder / f"n{i:04}.md").write_text(text)


QUERIES = ["harbour glacier", "violin orchard comet", "lantern", "falcon meadow saffron", "quartz tundra",
           "walrus pepper ember", "velvet marble", "thistle copper lagoon", "number7", "canyon falcon"]


def answers(core, name: str, exact: bool) -> list[SearchResult]:
    core.index.exact = exact
    try:
        return [core.search.search(owner(), name, q) for q in QUERIES]
    finally:
        core.index.exact = False


def vector_labels(core, name: str, query: str) -> list[str]:
    base = core.bases.get(owner(), name)
    return [h.document for h in core.search.hits(base, query, mode="vectors")[1]]


def sidecar(core, name: str):
    store = core.index.store(core.bases.get(owner(), name))
    return store, store.vectors_sidecar()


@pytest.fixture
def notes_base(core, tmp_path):
    corpus(tmp_path / "src", 60)
    make_base(core, "kb", embedder=Embedder(), sources=[tmp_path / "src"])
    core.documents.sync(owner(), "kb")
    return tmp_path / "src"


def test_the_sidecar_answers_as_the_exact_scan_does_on_a_small_base(core, notes_base):
    store, side = sidecar(core, "kb")
    exact = answers(core, "kb", exact=True)
    assert side.answered == 0
    approximate = answers(core, "kb", exact=False)
    assert side.answered == len(QUERIES) and side.generation == store.generation
    assert approximate == exact
    assert all(a.mode == "hybrid" and a.results for a in approximate)


def test_the_sidecar_follows_adds_replaces_and_deletes_without_a_rebuild(core, notes_base):
    store, side = sidecar(core, "kb")
    core.search.search(owner(), "kb", "harbour")
    built = side.builds
    assert side.ready and side.answered == 1

    core.notes.write(owner(), "kb", "notes", "zeppelin.md", "# Zeppelin\n\nA zeppelin over the harbour.")
    assert vector_labels(core, "kb", "zeppelin")[0] == "notes:kb/zeppelin.md"
    core.notes.write(owner(), "kb", "notes", "zeppelin.md", "# Kayak\n\nA kayak in the lagoon.")
    assert vector_labels(core, "kb", "kayak")[0] == "notes:kb/zeppelin.md"
    (notes_base / "n0003.md").unlink()
    core.documents.sync(owner(), "kb")
    core.notes.delete(owner(), "kb", "notes", "zeppelin.md")

    for query in ["zeppelin", "kayak", "lagoon", *QUERIES]:
        found = vector_labels(core, "kb", query)
        assert "notes:kb/zeppelin.md" not in found and "docs:kb/n0003.md" not in found
    assert side.builds == built and side.generation == store.generation  # changes applied, never rebuilt
    assert answers(core, "kb", exact=False) == answers(core, "kb", exact=True)


def test_saved_and_opened_again_it_is_loaded_not_rebuilt(core, notes_base):
    base = core.bases.get(owner(), "kb")
    before = answers(core, "kb", exact=False)
    core.index.close(base)  # saves the sidecar beside index.db
    graph, header = core.index.store(base).sidecar_paths
    assert graph.is_file() and json.loads(header.read_text())["generation"] == core.index.store(base).generation
    store, side = sidecar(core, "kb")
    assert answers(core, "kb", exact=False) == before
    assert side.builds == 0 and side.answered == len(QUERIES)

    core.index.close(base)  # opened again, a note written before any search: loaded, then changed
    core.notes.write(owner(), "kb", "notes", "zeppelin.md", "# Zeppelin\n\nA zeppelin over the harbour.")
    store, side = sidecar(core, "kb")
    assert side.ready and side.builds == 0 and side.generation == store.generation
    assert "notes:kb/zeppelin.md" in vector_labels(core, "kb", "zeppelin over the harbour")[:3]


def test_a_stale_sidecar_after_a_crash_is_rebuilt_and_searches_answer_meanwhile(core, tmp_path):
    corpus(tmp_path / "src", SYNC_BUILD + 40)  # big enough to be rebuilt in the background
    base = make_base(core, "big", embedder=Embedder(), sources=[tmp_path / "src"])
    core.documents.sync(owner(), "big")
    store, side = sidecar(core, "big")
    assert side.wait(30)
    exact = answers(core, "big", exact=True)
    core.index.close(base)
    graph, header = store.sidecar_paths
    saved = {p: p.read_bytes() for p in (graph, header)}

    # A note written, then the process dies before the sidecar is saved: the files on disk
    # are of the generation before.
    core.notes.write(owner(), "big", "notes", "zeppelin.md", "# Zeppelin\n\nA zeppelin over the harbour.")
    core.index.close(base)
    for path, data in saved.items():
        path.write_bytes(data)

    store, side = sidecar(core, "big")
    first = core.search.search(owner(), "big", "zeppelin")
    assert labels(first)[0] == "notes:big/zeppelin.md"  # answered by the exact scan meanwhile
    assert side.builds == 1 and side.answered == 0
    assert side.wait(60)
    found = vector_labels(core, "big", "zeppelin over the harbour")
    assert side.answered == 1 and "notes:big/zeppelin.md" in found[:3]
    core.index.exact = True
    assert vector_labels(core, "big", "zeppelin over the harbour") == found
    core.index.exact = False
    core.notes.delete(owner(), "big", "notes", "zeppelin.md")
    assert answers(core, "big", exact=False) == exact


@pytest.mark.parametrize("damage", ["missing", "corrupt", "another index.db", "another process wrote"])
def test_a_missing_or_foreign_sidecar_is_never_used(core, notes_base, damage):
    base = core.bases.get(owner(), "kb")
    before = answers(core, "kb", exact=True)
    core.index.close(base)
    store = core.index.store(base)
    graph, header = store.sidecar_paths
    if damage == "missing":
        graph.unlink()
        header.unlink()
    elif damage == "corrupt":
        graph.write_bytes(b"\0" * 100)
    elif damage == "another index.db":  # a copy of the sidecar of another base with the same generation
        head = json.loads(header.read_text())
        header.write_text(json.dumps({**head, "index_id": "someone-else"}))
    else:
        side = store.vectors_sidecar()
        assert answers(core, "kb", exact=False) == before and side.builds == 0
        other = SqliteIndexStore(store.path)  # another process's view of the same file
        vector = Embedder().embed_passages(["Zeppelin\nzeppelin zeppelin"])
        other.write([Entry(key="notes/zeppelin.md", origin="notes", kind="notes", label="notes:kb/zeppelin.md",
                           title="Zeppelin", hash="x", chunks=[Chunk("zeppelin zeppelin", [], 1, None)],
                           vectors=vector)])
        other.close()
        assert vector_labels(core, "kb", "zeppelin")[0] == "notes:kb/zeppelin.md"
        assert side.builds == 1
        return
    side = store.vectors_sidecar()
    assert answers(core, "kb", exact=False) == before
    assert side.builds == 1 and side.answered == len(QUERIES)  # a small base is rebuilt at once


def test_dropping_the_index_and_its_sidecar_and_syncing_again_gives_the_same_answers(core, notes_base):
    base = core.bases.get(owner(), "kb")
    core.notes.write(owner(), "kb", "notes", "faq.md", "# FAQ\n\nThe lantern of the harbour is lit at dusk.")
    before = answers(core, "kb", exact=False)
    core.index.close(base)
    for file in base.folder.glob("index.*"):
        shutil.rmtree(file) if file.is_dir() else file.unlink()
    core.documents.sync(owner(), "kb")
    assert answers(core, "kb", exact=False) == before
    report = core.documents.reindex(owner(), "kb")
    assert report["documents"] == 61
    assert answers(core, "kb", exact=False) == before == answers(core, "kb", exact=True)


def test_a_change_of_embedding_starts_the_sidecar_over(core, notes_base):
    store, side = sidecar(core, "kb")
    core.search.search(owner(), "kb", "harbour")
    core.index.embedder_for = lambda base: Embedder(32, name="smaller")
    core.documents.sync(owner(), "kb")
    store, side = sidecar(core, "kb")
    assert side.dimensions == 32
    assert answers(core, "kb", exact=False) == answers(core, "kb", exact=True)
    assert side.answered == len(QUERIES)


def test_an_empty_base_with_an_embedding_answers_nothing(core):
    make_base(core, "empty", embedder=Embedder())
    core.documents.sync(owner(), "empty")
    assert core.search.search(owner(), "empty", "anything").results == []
    store, side = sidecar(core, "empty")
    assert side.ready and side.generation == store.generation


class CountingEmbedder(Embedder):
    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return super().embed_query(text)


def test_a_repeated_query_is_embedded_once(core, tmp_path):
    corpus(tmp_path / "src", 10)
    embedder = CountingEmbedder()
    make_base(core, "kb", embedder=embedder, sources=[tmp_path / "src"])
    core.documents.sync(owner(), "kb")
    first = core.search.search(owner(), "kb", "harbour glacier")
    assert core.search.search(owner(), "kb", "harbour glacier") == first
    core.search.search(owner(), "kb", "violin")
    assert embedder.queries == ["harbour glacier", "violin"]


def test_a_graph_slow_to_save_is_saved_less_often(core, notes_base, monkeypatch):
    """A save writes the whole graph and holds it meanwhile: the next one waits SAVE_SPACING times as long as
    the last took (at 1M vectors every 2 s would have kept a sync waiting and searches scanning exactly)."""
    import time

    from astralyx.metis.index import vectors

    store, side = sidecar(core, "kb")
    deadline = time.monotonic() + 10
    while side._saver is not None and time.monotonic() < deadline:  # the writes' save, 2 s after them
        time.sleep(0.05)
    assert side._saver is None and side._save_seconds > 0  # saved, and how long it took is kept
    side._save_seconds = 0.5  # as a large graph takes
    monkeypatch.setattr(vectors, "SAVE_DELAY", 0.01)
    core.notes.write(owner(), "kb", "notes", "zeppelin.md", "# Zeppelin\n\nA zeppelin over the harbour.")
    assert side._saver is not None and side._saver.interval == 0.5 * vectors.SAVE_SPACING
    graph, header = store.sidecar_paths
    assert json.loads(header.read_text())["generation"] < store.generation  # not saved at once
    side.close()  # closing saves what is unsaved, whenever the timer would have
    assert json.loads(header.read_text())["generation"] == store.generation


def test_a_graph_is_saved_once_its_changes_pause_not_while_they_go_on(core, notes_base, monkeypatch):
    """A save while writes go on is stale at the next write (and stops the process while it runs): the timer
    saves only when the graph has gone the quiet time unchanged."""
    import time

    from astralyx.metis.index import vectors

    store, side = sidecar(core, "kb")
    deadline = time.monotonic() + 10
    while side._saver is not None and time.monotonic() < deadline:  # the first writes' save
        time.sleep(0.05)
    monkeypatch.setattr(vectors, "SAVE_DELAY", 30.0)  # the timer never fires by itself in this test
    side._save_seconds = 0.0
    graph, header = store.sidecar_paths
    core.notes.write(owner(), "kb", "notes", "zeppelin.md", "# Zeppelin\n\nA zeppelin over the harbour.")
    assert side._saver is not None and side._saver.interval == 30.0
    side._saver.cancel()
    side._timed_save()  # the timer's time, but the graph changed just now (as in a sync, between two batches)
    assert json.loads(header.read_text())["generation"] < store.generation  # not saved
    assert side._saver is not None and 29.0 < side._saver.interval <= 30.0  # waits for the changes to pause
    side._saver.cancel()
    side._changed -= 30.0  # 30 s without a change
    side._timed_save()
    assert json.loads(header.read_text())["generation"] == store.generation and side._saver is None
