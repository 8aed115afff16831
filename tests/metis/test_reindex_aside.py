"""A reindex builds the base's new index aside and swaps it in once whole (issue 29, point 1).

Searches meanwhile answer from the old index, whole: never from a new one still filling (which answered with fewer
passages). A note written, changed or removed during the reindex is in the new index after it. Another process
(another replica) answers from the new index after the swap, its keyword sidecar made again, not caught up from
the log of another index. A reindex killed mid-way (kill -9) leaves the old index answering and, once the base is
opened again, nothing of the index it was building.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from starlette.testclient import TestClient

from astralyx.metis.index.pg_store import ASIDE, schema_of
from astralyx.metis.search import SearchResult

from ..conftest import ADMIN_TOKEN
from .kit import FACTS, Child, ConceptEmbedder, a_memory_of_facts, make_base, owner, restarted, searchable

pytestmark = pytest.mark.engines  # on SQLite and on PostgreSQL

BASE = "/v1/metis/knowledge-bases/{}"
NOTES = 150
PORTO = (5, 40, 77, 101, 133, 149)  # the notes "offsite Porto" finds, spread over the base (and over a reindex's batches)
SEARCHERS = 3
REINDEXES = 4


def fill(core, name: str) -> set[str]:
    """NOTES notes (not named as numbered in a row: search shows those with their neighbours); answers the
    documents a search for "offsite Porto" finds (each of them, within its 8 results)."""
    make_base(core, name, embedder=ConceptEmbedder())
    for i in range(NOTES):
        text = f"# Note {i}\n\nTeam note number {i} about budgets, rotas and the quarterly review.\n"
        if i in PORTO:
            text = f"# Offsite {i}\n\nThe offsite of group {i} is in Porto in March.\n"
        core.notes.write(owner(), name, "notes", f"{i:03}-note.md", text)
    return {f"notes:{name}/{i:03}-note.md" for i in PORTO}


def found(answer: SearchResult | dict) -> set[str]:
    """The documents a search answered: the domain's answer, or the API's JSON."""
    if isinstance(answer, dict):
        return {r["document"] for r in answer["results"]}
    return {r.document for r in answer.results}


class Searchers:
    """SEARCHERS threads searching "offsite Porto" over HTTP until stopped: how many answers were whole (200, with
    every expected passage), and the others."""

    def __init__(self, app, name: str, expected: set[str]) -> None:
        self.client = TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, raise_server_exceptions=False)
        self.name, self.expected = name, expected
        self.stop = threading.Event()
        self.whole = 0
        self.short: Counter[tuple[int, int]] = Counter()  # (status, expected passages missing) → answers
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._loop, daemon=True) for _ in range(SEARCHERS)]

    def _loop(self) -> None:
        while not self.stop.is_set():
            r = self.client.post(BASE.format(self.name) + "/search", json={"query": "offsite Porto"})
            missing = len(self.expected - found(r.json())) if r.status_code == 200 else -1
            with self._lock:
                if r.status_code == 200 and not missing:
                    self.whole += 1
                else:
                    self.short[(r.status_code, missing)] += 1

    def __enter__(self) -> Searchers:
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)
        assert not any(t.is_alive() for t in self.threads)


def test_searches_during_reindexes_answer_from_a_whole_index(core, app, client):
    expected = fill(core, "team")
    assert found(client.post(BASE.format("team") + "/search", json={"query": "offsite Porto"}).json()) >= expected
    with Searchers(app, "team", expected) as searches:
        reports = [client.post(BASE.format("team") + "/reindex") for _ in range(REINDEXES)]
    assert [r.status_code for r in reports] == [200] * REINDEXES, [r.text for r in reports]
    assert all(r.json()["added"] == NOTES for r in reports)
    # every search answered from a whole index: the old one until the new one took its place, then the new one
    assert not searches.short, (searches.short, searches.whole)
    assert searches.whole > 0
    assert found(client.post(BASE.format("team") + "/search", json={"query": "offsite Porto"}).json()) >= expected
    assert client.get(BASE.format("team") + "/documents").json()["index"]["documents"] == NOTES


class Gated(ConceptEmbedder):
    """Holds its `at`-th call of passages (a reindex's, mid-way) until let go; every other call passes."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at
        self.reached, self.go = threading.Event(), threading.Event()
        self._count = 0
        self._lock = threading.Lock()

    def embed_passages(self, texts):
        with self._lock:
            self._count += 1
            held = self._count == self.at
        if held:
            self.reached.set()
            assert self.go.wait(120)
        return super().embed_passages(texts)


def test_notes_written_during_a_reindex_are_in_the_new_index(core, client):
    expected = fill(core, "team")
    gated = Gated(at=6)  # after its first batch (64 passages, 16 a call) is written aside
    core.index.embedder_for = lambda base: gated
    notes = BASE.format("team") + "/notes/"
    search = BASE.format("team") + "/search"
    started = client.post(BASE.format("team") + "/reindex?wait=false")
    assert started.status_code == 202
    try:
        assert gated.reached.wait(120)
        # mid-way: the old index answers, whole
        assert found(client.post(search, json={"query": "offsite Porto"}).json()) >= expected
        assert client.get(BASE.format("team") + "/documents").json()["index"]["documents"] == NOTES
        # a note written, one changed, one removed: searchable (or gone) at once, from the old index
        assert client.put(notes + "new.md", json={"content": "# Kayaks\n\nThe kayaks are stored in shed nine.\n"}
                          ).status_code == 201
        assert client.put(notes + "010-note.md", json={"content": "# Note 10\n\nThe harbour tour starts at the lighthouse.\n"}
                          ).status_code == 200
        assert client.delete(notes + "040-note.md").status_code == 200
        assert "notes:team/new.md" in found(client.post(search, json={"query": "kayaks shed"}).json())
    finally:
        gated.go.set()
    job = core.documents.jobs.get("default", "team")
    assert job is not None and core.documents.jobs.join(job, 120)
    assert job.state == "finished", job.error
    # the new index holds them as they are now
    assert client.get(BASE.format("team") + "/documents").json()["index"]["documents"] == NOTES  # one more, one less
    assert "notes:team/new.md" in found(client.post(search, json={"query": "kayaks shed"}).json())
    lighthouse = client.post(search, json={"query": "harbour lighthouse"}).json()["results"]
    assert lighthouse[0]["document"] == "notes:team/010-note.md"
    assert "lighthouse" in lighthouse[0]["text"]
    porto = found(client.post(search, json={"query": "offsite Porto"}).json())
    assert porto >= expected - {"notes:team/040-note.md"} and "notes:team/040-note.md" not in porto
    budgets = client.post(search, json={"query": "budgets quarterly review"}).json()["results"]
    assert not [r for r in budgets if r["document"] == "notes:team/010-note.md" and "budgets" in r["text"]]


def test_a_note_written_on_another_replica_during_a_reindex_is_in_the_new_index(core, other):
    fill(core, "team")
    other.index.embedder_for = lambda base: ConceptEmbedder()
    gated = Gated(at=6)
    core.index.embedder_for = lambda base: gated
    job, started = core.documents.start(owner(), "team", "reindex")
    assert started
    try:
        assert gated.reached.wait(120)
        # another process (another replica on PostgreSQL) writes into the index that answers, the old one
        other.notes.write(owner(), "team", "notes", "kayaks.md", "# Kayaks\n\nThe kayaks are stored in shed nine.\n")
        other.notes.delete(owner(), "team", "notes", "040-note.md")
    finally:
        gated.go.set()
    assert core.documents.jobs.join(job, 120)
    assert job.state == "finished", job.error
    for replica in (core, other):
        assert "notes:team/kayaks.md" in found(replica.search.search(owner(), "team", "kayaks shed"))
        assert "notes:team/040-note.md" not in found(replica.search.search(owner(), "team", "offsite Porto"))
    assert core.index.status(core.bases.get(owner(), "team")).documents == NOTES


def keyword_documents(core, name: str, query: str) -> set[str]:
    """What the keyword half of a search finds (on PostgreSQL, this replica's tantivy sidecar)."""
    base = core.bases.get(owner(), name)
    return {hit.document for hit in core.search.hits(base, query, mode="keywords")[1]}


def test_another_replica_answers_from_the_new_index_after_a_reindex(core, other):
    fill(core, "team")
    other.index.embedder_for = core.index.embedder_for
    base = core.bases.get(owner(), "team")
    core.index.reindex(base)
    assert "notes:team/077-note.md" in keyword_documents(other, "team", "offsite Porto")  # its sidecar built (PostgreSQL)
    # n077 changed on disk behind the index's back: only a reindex reads it again
    (base.folder / "notes" / "077-note.md").write_text("# Group 77\n\nGroup 77 moved to Lisbon.\n")
    core.index.reindex(base)
    for i in range(20):  # the new index's keyword generation past the old one's
        core.notes.write(owner(), "team", "notes", f"{i:02}-extra.md", f"# Extra {i}\n\nAnother note about rotas, {i}.\n")
    assert keyword_documents(other, "team", "Lisbon") == {"notes:team/077-note.md"}
    assert "notes:team/077-note.md" not in keyword_documents(other, "team", "offsite Porto")
    assert "notes:team/07-extra.md" in keyword_documents(other, "team", "rotas 7")


def strays(core) -> list[str]:
    """What a reindex left of the index it was building: files beside index.db, or a schema on PostgreSQL."""
    folder = core.bases.get(owner(), "team").folder
    files = sorted(f.name for f in folder.iterdir() if "building" in f.name)
    if getattr(core.db, "engine", "sqlite") != "postgres":
        return files
    aside = schema_of("default", "team") + ASIDE
    return files + [r[0] for r in core.db.query("SELECT nspname FROM pg_namespace WHERE nspname = ?", (aside,))]


@pytest.mark.usefixtures("no_stale")
def test_a_reindex_killed_mid_way_leaves_the_old_index_answering(home):
    a_memory_of_facts(home)
    child = Child(home, "reindex")  # another process, mid-reindex: its new index aside, partly built
    watcher = restarted(home)
    try:
        assert strays(watcher)  # (what the kill leaves behind)
    finally:
        watcher.close()
    child.kill()

    core = restarted(home)
    try:
        assert searchable(core) == 50  # the old index answers, whole
        assert strays(core) == []  # what the dead reindex was building went when the base's index was opened again
        report = core.index.reindex(core.bases.get(owner(), "team"))  # and a reindex now runs to its end
        assert report.added == FACTS
        assert searchable(core) == 50 and strays(core) == []
    finally:
        core.close()
