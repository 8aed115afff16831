"""The per-base index: follows notes, rebuilds from files, readers by prefix, embedding changes."""

from __future__ import annotations

import pytest

from astralyx.metis.chunking import Chunk
from astralyx.metis.parsing import ParsedDocument
from astralyx.util import atomic_write

from .kit import ConceptEmbedder, labels, make_base, owner, sync_held

pytestmark = pytest.mark.engines  # indexes on SQLite and on PostgreSQL











def test_notes_are_indexed_when_written_and_leave_when_deleted(core):
    make_base(core, "team")
    core.notes.write(owner(), "team", "notes", "plans/offsite.md", "# Offsite\n\nThe offsite is in Porto in March.")
    core.notes.write(owner(), "team", "saved", "lunch.md", "Lunch is at noon.", {"title": "Lunch", "source": "model"})
    answer = core.search.search(owner(), "team", "Porto")
    assert [p.model_dump() for p in answer.results] == [
        {"ref": 1, "document": "notes:team/plans/offsite.md", "title": "Offsite", "where": "Offsite › line 3",
         "text": "The offsite is in Porto in March."}
    ]
    saved = core.search.search(owner(), "team", "lunch noon").results[0]
    assert (saved.document, saved.title, saved.where) == ("saved:team/lunch.md", "Lunch", "line 6")
    core.notes.delete(owner(), "team", "notes", "plans/offsite.md")
    assert core.search.search(owner(), "team", "Porto").results == []


def test_reindex_after_the_index_file_is_deleted(core, tmp_path):
    src = tmp_path / "handbook"
    src.mkdir()
    (src / "leave.md").write_text("# Leave policy\n\n## Vacation\n\nEach person has 25 vacation days a year.\n")
    base = make_base(core, "handbook", embedder=ConceptEmbedder(), sources=[src])
    core.notes.write(owner(), "handbook", "notes", "faq.md", "# FAQ\n\nParking is free on weekends.")
    core.documents.sync(owner(), "handbook")
    before = core.search.search(owner(), "handbook", "vacation days")
    assert before.mode == "hybrid" and labels(before)[0] == "docs:handbook/leave.md"

    if core.db.engine == "sqlite":  # the file is deleted
        core.index.close(base)
        (base.folder / "index.db").unlink()
    else:  # the index's schema is dropped
        core.index.drop(base)
    assert core.search.search(owner(), "handbook", "vacation days").results == []  # an empty new index
    report = core.documents.reindex(owner(), "handbook")
    assert (report["added"], report["documents"], report["dimensions"]) == (2, 2, 64)
    assert core.search.search(owner(), "handbook", "vacation days") == before
    assert labels(core.search.search(owner(), "handbook", "parking"))[0] == "notes:handbook/faq.md"


def test_a_change_of_embedding_starts_the_vectors_over(core, tmp_path):
    src = tmp_path / "docs"
    src.mkdir()
    (src / "cars.md").write_text("# Cars\n\nThe company car is parked in the garage.\n")
    make_base(core, "fleet", embedder=ConceptEmbedder(64), sources=[src])
    core.documents.sync(owner(), "fleet")
    assert core.search.search(owner(), "fleet", "automobile").mode == "hybrid"

    bigger = ConceptEmbedder(32, name="other-model")
    core.index.embedder_for = lambda base: bigger
    # Until the base is synced with the new model its old vectors are not used: keywords answer.
    assert core.search.search(owner(), "fleet", "garage").mode == "keywords"
    report = core.documents.sync(owner(), "fleet")
    assert (report["changed"], report["dimensions"]) == (1, 32)
    answer = core.search.search(owner(), "fleet", "automobile")
    assert answer.mode == "hybrid" and labels(answer) == ["docs:fleet/cars.md"]


def test_a_base_without_embedding_searches_by_keywords(core, tmp_path):
    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.txt").write_text("Coffee machines are on every floor.\n")
    make_base(core, "office", sources=[src])
    report = core.documents.sync(owner(), "office")
    assert report["dimensions"] is None
    answer = core.search.search(owner(), "office", "coffee")
    assert answer.mode == "keywords" and labels(answer) == ["docs:office/a.txt"]


def test_readers_by_prefix_attrs_on_hits_and_the_memory_paths(core):
    make_base(core, "team", kind="memory")
    # Without the memory's reader, facts are not indexed as plain notes.
    base = core.bases.find("default", "team")
    atomic_write(base.folder / "notes/memory/f_1.md", "Ana leads the data team.")
    core.index.update_file(base, "notes/memory/f_1.md")
    assert core.search.search(owner(), "team", "Ana").results == []

    seen = []

    def read_fact(base, relpath, text):
        fact_id = relpath.rsplit("/", 1)[1][:-3]
        current = "/history/" not in relpath
        return ParsedDocument(
            label=f"memory:{base.name}/{fact_id}", title="Ana — role", kind="memory",
            chunks=[Chunk(text.strip(), [], None, None)], attrs={"current": current, "said": "2026-10-12"},
        )

    def current_first(base, hits, as_of, query):
        seen.append((as_of, [h.attrs for h in hits]))
        return sorted(hits, key=lambda h: not h.attrs["current"])

    core.index.register_reader("notes/memory/", read_fact)
    core.search.rerankers["memory"] = current_first
    atomic_write(base.folder / "notes/memory/history/f_0.md", "Ana leads the data team, a team of data people.")
    core.index.update_file(base, "notes/memory/history/f_0.md")
    core.index.update_file(base, "notes/memory/f_1.md")
    answer = core.search.search(owner(), "team", "Ana data team", as_of="2026-11-01")
    assert labels(answer) == ["memory:team/f_1", "memory:team/f_0"]
    assert answer.results[0].where == ""
    assert seen[-1][0] == "2026-11-01"
    assert sorted(a["current"] for a in seen[-1][1]) == [False, True]


def test_deleting_a_base_closes_its_index(core):
    make_base(core, "temp")
    core.notes.write(owner(), "temp", "notes", "a.md", "alpha")
    assert core.search.search(owner(), "temp", "alpha").results
    core.bases.delete(owner(), "temp")
    assert not core.bases.folder("default", "temp").exists()
    make_base(core, "temp")  # a new base of the same name starts empty
    assert core.search.search(owner(), "temp", "alpha").results == []






def test_a_note_written_during_a_sync_does_not_wait_for_it_and_is_indexed_after(core, tmp_path):
    with sync_held(core, tmp_path) as order:
        core.notes.write(owner(), "busy", "notes", "late.md", "# Late\n\nwritten during the sync")
        order.append("note written")
    assert order == ["note written", "synced"]
    assert labels(core.search.search(owner(), "busy", "written during"))[0] == "notes:busy/late.md"
    assert labels(core.search.search(owner(), "busy", "alpha"))[0] == "docs:busy/a.md"
