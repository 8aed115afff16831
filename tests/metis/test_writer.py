"""One write path: notes, a model's saves, a memory's facts and uploads are written by core.writer, which
tells its subscribers (the index, subscribed once in core.py) a typed change for every file."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from astralyx.metis.writer import FileChange
from astralyx.util import sha256

from .kit import labels, make_base, owner, sync_held

pytestmark = pytest.mark.engines  # the tests of a core run on SQLite and on PostgreSQL

FACT = {"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team.", "source": "chat", "said_at": "2026-09-01"}


def test_every_write_of_a_base_is_one_typed_change_the_index_hears(core):
    assert core.writer.subscribers == [core.index.on_change]  # the index subscribes once
    heard: list[FileChange] = []
    core.writer.subscribers.append(heard.append)
    docs, team = make_base(core, "docs"), make_base(core, "team", kind="memory")

    core.notes.write(owner(), "docs", "notes", "plans/offsite.md", "# Offsite\n\nPorto in March.")
    core.documents.upload(owner(), "docs", "leave.md", b"# Leave\n\nTwenty-five days a year.\n")
    save = core.saves.save_now(docs, "qwen3", None, "Lunch", "Lunch is at noon.")
    kept = core.memory.keep(owner(), "team", [FACT]).model_dump()["facts"][0]
    written = [(c.base.name, c.area, c.path) for c in heard]
    assert written == [
        ("docs", "notes", "notes/plans/offsite.md"),
        ("docs", "files", "files/leave.md"),
        ("docs", "saved", f"saved/{save.path}"),
        ("team", "facts", f"notes/memory/{kept['id']}.md"),
    ]
    for change in heard:  # the version is the file's as written
        assert not change.removed and change.version == sha256((change.base.folder / change.path).read_bytes())
    with pytest.raises(dataclasses.FrozenInstanceError):
        heard[0].path = "elsewhere.md"  # type: ignore[misc]
    # Every one of them was indexed through that one subscription.
    assert labels(core.search.search(owner(), "docs", "Porto")) == ["notes:docs/plans/offsite.md"]
    assert labels(core.search.search(owner(), "docs", "Twenty-five days")) == ["docs:docs/leave.md"]
    assert labels(core.search.search(owner(), "docs", "noon"))[0] == f"saved:docs/{save.path}"
    assert labels(core.search.search(owner(), "team", "data team")) == [f"memory:team/{kept['id']}"]

    heard.clear()
    core.notes.delete(owner(), "docs", "notes", "plans/offsite.md")
    core.documents.delete_file(owner(), "docs", "leave.md")
    core.saves.undo(owner(), "docs", save.id)
    core.memory.forget(owner(), "team", kept["id"])
    assert [(c.area, c.path, c.removed, c.version) for c in heard] == [
        ("notes", "notes/plans/offsite.md", True, None),
        ("files", "files/leave.md", True, None),
        ("saved", f"saved/{save.path}", True, None),
        ("facts", f"notes/memory/{kept['id']}.md", True, None),
    ]
    assert not (docs.folder / "notes/plans").exists()  # a note's emptied folders go with it
    for base, query in (("docs", "Porto"), ("docs", "Twenty-five days"), ("docs", "noon"), ("team", "data team")):
        assert core.search.search(owner(), base, query).results == []
    assert team.folder.exists()


def test_a_subscriber_that_fails_loses_no_file(core):
    make_base(core, "docs")

    def broken(change: FileChange) -> None:
        raise RuntimeError("a subscriber on fire")

    core.writer.subscribers.insert(0, broken)
    note, created = core.notes.write(owner(), "docs", "notes", "a.md", "alpha beta")
    assert created and core.notes.read(owner(), "docs", "notes", "a.md").version == note.version
    assert labels(core.search.search(owner(), "docs", "alpha")) == ["notes:docs/a.md"]  # the others still hear


def test_an_upload_during_a_sync_does_not_wait_for_it_and_is_indexed_after(core, tmp_path):
    with sync_held(core, tmp_path) as order:
        answer = core.documents.upload(owner(), "busy", "late.md", b"# Late\n\nuploaded during the sync\n")
        order.append("uploaded")
        assert answer.name == "late.md" and answer.size > 0
    assert order == ["uploaded", "synced"]
    assert labels(core.search.search(owner(), "busy", "uploaded during"))[0] == "docs:busy/late.md"


def test_notes_written_side_by_side_are_all_indexed(core):
    make_base(core, "team")
    words = ["amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "heath"]
    threads = [threading.Thread(target=core.notes.write, args=(owner(), "team", "notes", f"{w}.md", f"The {w} note."))
               for w in words]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for w in words:
        assert labels(core.search.search(owner(), "team", w)) == [f"notes:team/{w}.md"]
