"""The index kept in step by several processes (replicas) on one data directory (issue 31, point 3).

"A file indexed since the sync read it is not overwritten" held within one process only (a count per file, in
memory): a sync in one replica that read a note before another replica indexed a newer copy wrote the older one
over it. And a reindex's swap on SQLite held only its own process's lock: a note another process wrote between the
last catch-up round and the rename went with the old index.db. Both now hold under the base's folder lock, the
one the writer takes (fcntl, or an advisory lock on PostgreSQL), with the file as it was read compared to the file
as it is.
"""

from __future__ import annotations

import threading

import pytest

from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.errors import NotFound

from ..conftest import run
from .kit import ConceptEmbedder, GatedEmbedder, make_base, owner

pytestmark = pytest.mark.engines  # on SQLite and on PostgreSQL


def documents(core) -> set[str]:
    return {d["document"] for d in core.index.documents(core.bases.get(owner(), "team"))}


def three_notes(core) -> None:
    """Base `team` (embedded by concepts) with notes base0.md to base2.md."""
    make_base(core, "team", embedder=ConceptEmbedder())
    for i in range(3):
        core.notes.write(owner(), "team", "notes", f"base{i}.md", f"# Base {i}\n\nA note about rotas, {i}.\n")


def texts(core, query: str) -> dict[str, str]:
    return {r.document: r.text for r in core.search.search(owner(), "team", query).results}


def test_a_sync_does_not_write_what_it_read_over_a_newer_copy_another_replica_indexed(core, other):
    gated = GatedEmbedder()  # the sync's first batch held: read, not yet written
    make_base(core, "team", embedder=gated)
    other.index.embedder_for = lambda base: ConceptEmbedder() if base.spec.embedding else None
    note = core.bases.get(owner(), "team").folder / "notes" / "plan.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("# Plan\n\nThe offsite is in Porto.\n")  # changed by hand: the next sync reads it
    done: list = []
    sync = threading.Thread(target=lambda: done.append(core.documents.sync(owner(), "team")))
    sync.start()
    try:
        assert gated.entered.wait(60)  # the sync read plan.md (Porto)
        # meanwhile another replica writes a newer copy, and indexes it
        other.notes.write(owner(), "team", "notes", "plan.md", "# Plan\n\nThe offsite moved to Lisbon.\n")
        assert "Lisbon" in texts(other, "offsite Lisbon").get("notes:team/plan.md", "")
    finally:
        gated.release.set()
        sync.join(60)
    assert done and not sync.is_alive()
    for replica in (core, other):  # the newer copy stays, in both
        found = texts(replica, "offsite")
        assert "Lisbon" in found["notes:team/plan.md"], found
        assert "Porto" not in found["notes:team/plan.md"]


def test_a_note_written_by_hand_during_a_sync_is_indexed_as_it_is_now(core):
    gated = GatedEmbedder()
    make_base(core, "team", embedder=gated)
    note = core.bases.get(owner(), "team").folder / "notes" / "plan.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("# Plan\n\nThe offsite is in Porto.\n")
    sync = threading.Thread(target=lambda: core.documents.sync(owner(), "team"))
    sync.start()
    try:
        assert gated.entered.wait(60)
        note.write_text("# Plan\n\nThe offsite moved to Lisbon, for good.\n")  # no writer, no change told
    finally:
        gated.release.set()
        sync.join(60)
    assert not sync.is_alive()
    assert "Lisbon" in texts(core, "offsite")["notes:team/plan.md"]


class WritesMeanwhile(ConceptEmbedder):
    """At each of its first `times` calls, another replica writes a note (n1.md, n2.md, …) in a thread of its own,
    waited for a moment: on a call within a reindex's last catch-up, that write waits for the swap."""

    def __init__(self, other, times: int) -> None:
        super().__init__()
        self.other, self.times = other, times
        self.writes: list[threading.Thread] = []
        self._guard = threading.Lock()

    def embed_passages(self, texts):
        with self._guard:
            n = len(self.writes) + 1
            write = None
            if n <= self.times:
                write = threading.Thread(target=self.other.notes.write, args=(
                    owner(), "team", "notes", f"n{n}.md", f"# Kayak {n}\n\nKayak number {n} is in shed {n}.\n"))
                self.writes.append(write)
        if write is not None:
            write.start()
            write.join(2)  # done at once, unless it waits for a lock this call's caller holds (then it goes on later)
        return super().embed_passages(texts)


def test_a_note_another_replica_writes_during_a_reindex_s_catch_up_is_not_lost_at_the_swap(core, other):
    three_notes(core)
    other.index.embedder_for = lambda base: ConceptEmbedder() if base.spec.embedding else None
    texts(other, "rotas")  # the other replica has the base's index open
    # Each catch-up round of the reindex indexes the note written during the one before: the last one's note
    # (without the folder lock) came after the last round, into the old index only.
    writes = WritesMeanwhile(other, times=4)
    core.index.embedder_for = lambda base: writes
    core.index.reindex(core.bases.get(owner(), "team"))
    for write in writes.writes:
        write.join(60)
    written = {f"notes:team/n{n}.md" for n in range(1, len(writes.writes) + 1)}
    assert len(written) >= 2  # one at least during the catch-up
    expected = written | {f"notes:team/base{i}.md" for i in range(3)}
    for replica in (core, other):
        assert documents(replica) == expected
    # The other replica's old index.db let go (its connections closed): the new one is whole, for a process after
    other.index.close_all()
    after = Astralyx(Settings.load(core.home))
    try:
        assert documents(after) == expected
        found = after.search.search(owner(), "team", "kayak shed").results  # a turn may be shown as another's context
        assert "notes:team/n1.md" in {d for r in found for d in (r.document, *(r.with_documents or ()))}
    finally:
        after.close()


class HeldOnKayaks(ConceptEmbedder):
    """Writes a note about a kayak while a reindex embeds its files (indexed on its own, then by the reindex's
    catch-up into the new index), then holds the catch-up's embedding of it until the test lets it go."""

    def __init__(self, core) -> None:
        super().__init__()
        self.core, self.kayaks = core, 0
        self.held, self.release = threading.Event(), threading.Event()

    def embed_passages(self, texts):
        if any("Kayak" in t for t in texts):
            self.kayaks += 1
            if self.kayaks == 2:  # the first: the note indexed on its own; the second: into the new index
                self.held.set()
                self.release.wait(60)
        elif not self.held.is_set() and not (self.core.home / "bases").joinpath("default", "team", "notes", "n1.md").exists():
            self.core.notes.write(owner(), "team", "notes", "n1.md", "# Kayak\n\nThe kayak is in shed 1.\n")
        return super().embed_passages(texts)


def test_a_note_written_while_a_reindex_catches_up_does_not_wait_for_its_embedding(core, other):
    three_notes(core)
    other.index.embedder_for = lambda base: ConceptEmbedder() if base.spec.embedding else None
    embedder = HeldOnKayaks(core)
    core.index.embedder_for = lambda base: embedder
    reindex = threading.Thread(target=core.index.reindex, args=(core.bases.get(owner(), "team"),))
    reindex.start()
    try:
        assert embedder.held.wait(60)  # the catch-up embeds the note written meanwhile, and is held there
        # Writers (of any replica) do not wait for that: only for the short end, the last round and the swap.
        run(lambda: other.notes.write(owner(), "team", "notes", "late.md", "# Late\n\nWritten while it caught up.\n"), 30)
        run(lambda: core.notes.write(owner(), "team", "notes", "later.md", "# Later\n\nAnd one more.\n"), 30)
    finally:
        embedder.release.set()
        reindex.join(60)
    expected = {"notes:team/n1.md", "notes:team/late.md", "notes:team/later.md"} | {f"notes:team/base{i}.md" for i in range(3)}
    for replica in (core, other):
        assert documents(replica) == expected


def test_a_base_another_replica_deletes_during_a_reindex_is_not_made_again(core, other):
    three_notes(core)
    folder = core.bases.get(owner(), "team").folder

    class DeletedMeanwhile(ConceptEmbedder):
        def embed_passages(self, texts):
            if folder.is_dir():
                other.bases.delete(owner(), "team")
            return super().embed_passages(texts)

    core.index.embedder_for = lambda base: DeletedMeanwhile()
    with pytest.raises(NotFound) as e:
        core.index.reindex(core.bases.get(owner(), "team"))
    assert e.value.code == "BASE_NOT_FOUND"
    assert not folder.exists()  # no folder made again for a lock, no index.db left behind
    assert "team" not in {b.name for b in core.bases.list(owner())}
