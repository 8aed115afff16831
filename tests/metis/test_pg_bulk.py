"""A large load on PostgreSQL: the HNSW and GIN indexes built once after the sync's writes (pg_store.bulk),
the same answers meanwhile and after, and missing indexes (a sync stopped by a crash) built by the next sync
or by the next replica that opens the base, never while a load runs."""

from __future__ import annotations

import pytest

from astralyx.metis.index import pg_store

from .kit import ConceptEmbedder, PacedEmbedder, folder, make_base, owner, wait_for

pytestmark = pytest.mark.parametrize("database_url", ["postgres"], indirect=True)


def indexes(core, name: str) -> set[str]:
    store = core.index.store(core.bases.get(owner(), name))
    rows = store.db.query("SELECT indexname FROM pg_indexes WHERE schemaname = ?", (store.schema,))
    return {r[0] for r in rows} & {"chunks_hnsw", "chunks_tsv"}


def vectors_and_words(core, name: str, embedder, queries: list[str]) -> list[tuple[list[int], list[int]]]:
    store = core.index.store(core.bases.get(owner(), name))
    return [(store.vector_ids(embedder.embed_query(q), 10), store.keyword_ids(q, 10)) for q in queries]


def test_a_large_sync_builds_the_search_indexes_after_its_writes_and_answers_alike_meanwhile(core, tmp_path, monkeypatch):
    monkeypatch.setattr(pg_store, "BULK_FROM", 50)
    embedder = PacedEmbedder()
    make_base(core, "big", embedder=embedder, sources=[folder(tmp_path, 100)])
    assert "chunks_tsv" in indexes(core, "big")  # made with the base (HNSW once the dimensions are known)
    job, _ = core.documents.start(owner(), "big")
    wait_for(embedder.waiting.is_set)  # 64 passages written, the rest held
    assert indexes(core, "big") == set()  # a large load: built after it
    queries = ["item7x0", "Topic42 paragraph", "item63x0 about"]
    during = vectors_and_words(core, "big", embedder, queries)  # a scan of every passage meanwhile
    assert all(v and w for v, w in during)
    embedder.finish()
    assert core.documents.wait(job, 30)["added"] == 100
    assert indexes(core, "big") == {"chunks_hnsw", "chunks_tsv"}
    store = core.index.store(core.bases.get(owner(), "big"))
    for q in queries:  # the index answers as the exact scan does
        v = embedder.embed_query(q)
        assert store.vector_ids(v, 10) == store.vector_ids(v, 10, exact=True)

    # a few more passages later: written into the indexes as they are, not a rebuild
    (tmp_path / "handbook" / "late.md").write_text("# Late\n\nA late paragraph about latecomers.\n")
    core.documents.sync(owner(), "big")
    assert indexes(core, "big") == {"chunks_hnsw", "chunks_tsv"}
    assert core.search.search(owner(), "big", "latecomers").results[0].document == "docs:big/late.md"


def test_indexes_a_stopped_sync_left_missing_are_built_by_the_next_sync(core, tmp_path):
    embedder = ConceptEmbedder()
    make_base(core, "hb", embedder=embedder, sources=[folder(tmp_path, 5)])
    core.documents.sync(owner(), "hb")
    store = core.index.store(core.bases.get(owner(), "hb"))
    store.db.script(f"DROP INDEX {store.schema}.chunks_hnsw; DROP INDEX {store.schema}.chunks_tsv")  # as a crash leaves
    assert core.search.search(owner(), "hb", "item3x0").results[0].document == "docs:hb/doc003.md"
    report = core.documents.sync(owner(), "hb")  # nothing to add
    assert report["unchanged"] == 5 and indexes(core, "hb") == {"chunks_hnsw", "chunks_tsv"}


def opened(instance, name: str):
    """The base's store as `instance` opens it, once its repair at open (if any) has ended."""
    store = instance.index.store(instance.bases.get(owner(), name))
    if store.repairing is not None:
        store.repairing.join(30)
    return store


def test_indexes_a_crashed_load_left_missing_are_built_when_a_replica_opens_the_base_not_while_a_load_runs(
    core, other, tmp_path, monkeypatch,
):
    monkeypatch.setattr(pg_store, "BULK_FROM", 50)
    embedder = PacedEmbedder()
    make_base(core, "big", embedder=embedder, sources=[folder(tmp_path, 100)])
    job, _ = core.documents.start(owner(), "big")
    wait_for(embedder.waiting.is_set)  # a large load under way: its indexes dropped, its lock held
    assert opened(other, "big").missing_indexes() == {"chunks_hnsw", "chunks_tsv"}  # left to the load
    embedder.finish()
    assert core.documents.wait(job, 30)["added"] == 100
    assert indexes(core, "big") == {"chunks_hnsw", "chunks_tsv"}

    # as a load stopped by a crash leaves them (its lock went with its connection)
    store = core.index.store(core.bases.get(owner(), "big"))
    store.db.script(f"DROP INDEX {store.schema}.chunks_hnsw; DROP INDEX {store.schema}.chunks_tsv")
    assert core.search.search(owner(), "big", "item7x0").results[0].document == "docs:big/doc007.md"  # a scan
    other.index.close(other.bases.get(owner(), "big"))  # the replica starts again: opens the base anew
    assert opened(other, "big").missing_indexes() == set()  # built at open, no sync needed
    assert indexes(core, "big") == {"chunks_hnsw", "chunks_tsv"}
    v = embedder.embed_query("Topic42 paragraph")
    assert store.vector_ids(v, 10) == store.vector_ids(v, 10, exact=True)
