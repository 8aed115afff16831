"""A base's index while it is searched: a reindex, or the base's deletion, under searches from several threads.

Issue 29: searches around a reindex answered 500 (`no such table: meta`, `disk I/O error`, a closed database)
and the server died in the sqlite3 extension; a search around a base's deletion answered 500 too. Each search
must answer 200 (from the old index until the new one, built aside, takes its place: test_reindex_aside.py) or a
documented code: 404 BASE_NOT_FOUND once the base is gone; never a 500, and the process stays up.
"""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
from starlette.testclient import TestClient

from ..conftest import ADMIN_TOKEN
from .kit import ConceptEmbedder, make_base, owner

pytestmark = pytest.mark.engines  # on SQLite and on PostgreSQL

BASE = "/v1/metis/knowledge-bases/{}"
NOTES = 150
SEARCHERS = 3


def fill(core, name: str) -> None:
    make_base(core, name, embedder=ConceptEmbedder())
    for i in range(NOTES):
        text = f"# Note {i}\n\nTeam note number {i} about budgets, rotas and the quarterly review.\n"
        if i == 77:
            text = "# Offsite\n\nThe offsite is in Porto in March.\n"
        core.notes.write(owner(), name, "notes", f"n{i:03}.md", text)


class Searchers:
    """SEARCHERS threads searching the base over HTTP until stopped; every answer's status and code kept
    (a server error too: the app's own 500 answer, not an exception raised in the test)."""

    def __init__(self, app, name: str) -> None:
        self.client = TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, raise_server_exceptions=False)
        self.name = name
        self.stop = threading.Event()
        self.answers: Counter[tuple[int, str]] = Counter()
        self.bodies: list[str] = []
        self._lock = threading.Lock()
        self.threads = [threading.Thread(target=self._loop, daemon=True) for _ in range(SEARCHERS)]

    def _loop(self) -> None:
        while not self.stop.is_set():
            try:
                r = self.client.post(BASE.format(self.name) + "/search", json={"query": "offsite Porto"})
                code = "" if r.status_code == 200 else r.json().get("error", {}).get("code", "")
            except Exception as e:  # counted, and the loop goes on
                r, code = None, repr(e)
            with self._lock:
                self.answers[(r.status_code if r is not None else 0, code)] += 1
                if r is None or r.status_code >= 500:
                    self.bodies.append(code if r is None else r.text)

    def __enter__(self) -> Searchers:
        for t in self.threads:
            t.start()
        while sum(self.answers.values()) < SEARCHERS:  # each searching before the test goes on
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(60)
        assert not any(t.is_alive() for t in self.threads)


def test_reindex_while_searched_never_answers_500(core, app, client):
    fill(core, "team")
    reindexes: Counter[int] = Counter()
    with Searchers(app, "team") as searches:
        for _ in range(15):
            r = client.post(BASE.format("team") + "/reindex?wait=false")
            reindexes[r.status_code] += 1  # 202 started, 409 SYNC_RUNNING: one is under way
            time.sleep(0.2)
        job = core.documents.jobs.get("default", "team")
        assert job is not None and core.documents.jobs.join(job, 120)
        client.post(BASE.format("team") + "/reindex")  # one more, searched from start to end
    assert set(reindexes) <= {202, 409}, reindexes
    assert reindexes[202] >= 2, reindexes
    assert set(searches.answers) == {(200, "")}, (searches.answers, searches.bodies[:3])
    assert job.state == "finished", job.error
    found = client.post(BASE.format("team") + "/search", json={"query": "offsite Porto"}).json()["results"]
    assert found[0]["document"] == "notes:team/n077.md"
    assert client.get(BASE.format("team") + "/documents").json()["index"]["documents"] == NOTES


def test_deleting_a_base_while_searched_answers_base_not_found(core, app, client):
    for round_ in range(3):
        name = f"gone{round_}"
        fill(core, name)
        folder = core.bases.get(owner(), name).folder
        with Searchers(app, name) as searches:
            time.sleep(0.2)
            assert client.delete(BASE.format(name)).status_code == 200
            deadline = time.monotonic() + 60
            while searches.answers[(404, "BASE_NOT_FOUND")] < SEARCHERS and time.monotonic() < deadline:
                time.sleep(0.01)
        assert set(searches.answers) <= {(200, ""), (404, "BASE_NOT_FOUND")}, (searches.answers, searches.bodies[:3])
        assert not folder.exists()  # a search that came late did not make its folder again


def test_a_base_made_again_under_the_same_name_is_searched(core, app, client):
    fill(core, "again")
    with Searchers(app, "again"):
        assert client.delete(BASE.format("again")).status_code == 200
        make_base(core, "again", embedder=ConceptEmbedder())
        core.notes.write(owner(), "again", "notes", "new.md", "# New\n\nThe offsite moved to Lisbon.\n")
    found = client.post(BASE.format("again") + "/search", json={"query": "offsite Lisbon"}).json()["results"]
    assert [r["document"] for r in found] == ["notes:again/new.md"]


def test_a_sync_writes_a_slice_at_a_time_while_searches_come(core, tmp_path, monkeypatch):
    """Issue 29, point 13: with an embedder that answers at once, the sync's own writing is what a search waits
    for; while searches come, it writes a slice of passages (SYNC_SLICE) per transaction, the searches under way
    first before each, not a whole batch (EMBED_BATCH) in one."""
    from astralyx.metis.index import service

    monkeypatch.setattr(service, "YIELD_MAX", 0.01)  # each step waits this long for the search held open below
    src = tmp_path / "docs"
    src.mkdir()
    base = make_base(core, "kb", embedder=ConceptEmbedder(), sources=[src])
    core.documents.sync(owner(), "kb")  # empty: the embedding set up
    files = 4
    for f in range(files):
        paragraphs = [f"Paragraph {p} of file {f}: " + " ".join(f"word{f}x{p}x{w}" for w in range(60)) for p in range(12)]
        (src / f"f{f}.md").write_text(f"# File {f}\n\n" + "\n\n".join(paragraphs) + "\n")
    store = core.index.store(base)
    before = store.keywords_generation  # one more per write transaction
    with core.index.reading():  # a search under way from the sync's start to its end
        report = core.documents.sync(owner(), "kb")
    assert report["added"] == files
    passages = report["chunks"]
    assert service.SYNC_SLICE < passages <= service.EMBED_BATCH  # one batch, before: one transaction
    assert store.keywords_generation - before == files  # each file (12 passages) a transaction of its own


def test_a_thread_that_first_reads_a_store_after_its_base_folder_went_gets_base_not_found(core):
    """The race the storm once hit (1 search in 57): a search's keyword thread opened its own connection after
    the deleted base's folder had moved to the trash, and the missing file answered 500. It is BASE_NOT_FOUND."""
    from astralyx.errors import AstralyxError

    make_base(core, "gone", embedder=ConceptEmbedder())
    core.notes.write(owner(), "gone", "notes", "a.md", "# Offsite\n\nThe offsite is in Porto in March.\n")
    base = core.bases.get(owner(), "gone")
    store = core.index.store(base)
    if not store.path.exists():
        pytest.skip("PostgreSQL's index has no file in the base's folder: nothing to open there")
    assert store.meta("chunking")  # opened and read on this thread
    base.folder.rename(base.folder.with_name("moved-away"))  # as bases.delete does, after the index let go
    errors: list[BaseException] = []

    def read() -> None:
        try:
            store.meta("chunking")  # a new thread: a connection of its own, opened now
        except BaseException as e:  # noqa: B036 - kept for the assertion
            errors.append(e)

    thread = threading.Thread(target=read)
    thread.start()
    thread.join(30)
    assert len(errors) == 1 and isinstance(errors[0], AstralyxError), errors
    assert errors[0].code == "BASE_NOT_FOUND"
