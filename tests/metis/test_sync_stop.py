"""A sync is stopped at once (a delete of its base, the server stopping): in the walk of a source folder, between
two files, or while it waits for the indexing slot; the slot goes to the next base's sync."""

from __future__ import annotations

import pytest

from astralyx.metis.bases import parse_request
from astralyx.metis.jobs import SyncJobs
from astralyx.metis.sources import Rule, walk

from ..conftest import run
from .kit import DEEP, ConceptEmbedder, PacedEmbedder, deep_folder, folder, make_base, owner, wait_for, write

pytestmark = pytest.mark.engines


def test_a_sync_stopped_as_it_walks_a_source_folder_ends_in_the_walk(tmp_path):
    src = tmp_path / "wide"
    for i in range(200):
        write(src, f"part{i}/page.md", "# Page\n\ntext\n")
    walked: list[int] = []

    def work(job):
        job.cancel.set()  # the base is deleted (or the server stops) as the walk begins
        walked.append(len(walk(src, Rule())))
        return {}

    jobs = SyncJobs()
    job, _ = jobs.start("default", "wide", "sync", work)
    assert jobs.join(job, 60)
    assert job.state == "failed" and job.error["code"] == "SYNC_CANCELLED"
    assert walked == []  # stopped inside the walk, not after 200 folders


def test_deleting_a_base_whose_sync_is_queued_ends_it_without_waiting_for_the_slot(core, tmp_path):
    embedder = PacedEmbedder(free=0)  # the first base's sync holds the indexing slot until the test lets it go
    make_base(core, "first", embedder=embedder, sources=[folder(tmp_path / "one", 3)])
    make_base(core, "second", embedder=embedder, sources=[folder(tmp_path / "two", 3)])
    first, _ = core.documents.start(owner(), "first")
    wait_for(embedder.waiting.is_set)
    second, _ = core.documents.start(owner(), "second")
    assert second.state == "queued"
    core.bases.delete(owner(), "second")
    assert second.done.is_set() and second.error["code"] == "SYNC_CANCELLED"  # ended when the delete returned
    assert first.state == "running"
    embedder.finish()
    assert core.documents.wait(first, 60)["added"] == 3


def test_deleting_a_base_mid_walk_frees_the_slot_for_the_next_base(core, tmp_path):
    # The case: 20 deep `**` excludes on a 40-level folder held the only indexing slot for minutes,
    # a delete of the base did not end the walk, and another base's sync waited behind it.
    core.index.embedder_for = lambda base: ConceptEmbedder() if base.spec.embedding else None
    core.bases.create(owner(), parse_request({"metadata": {"name": "deep"}, "spec": {
        "sources": [{"folder": str(deep_folder(tmp_path)), "exclude": DEEP}]}}))
    make_base(core, "next", embedder=ConceptEmbedder(), sources=[folder(tmp_path / "next", 3)])
    deep, _ = core.documents.start(owner(), "deep")
    after, _ = core.documents.start(owner(), "next")
    run(lambda: core.bases.delete(owner(), "deep") or True)
    assert deep.done.is_set()  # its job ended when the delete returned (stopped, or done before it)
    assert run(lambda: core.documents.wait(after))["added"] == 3  # the slot went to the next base
    assert core.bases.find("default", "deep") is None


def test_a_sync_stopped_while_it_reads_files_reads_no_further_file(core):
    make_base(core, "kb")
    base = core.bases.find("default", "kb")
    for name in "abcdef":
        write(base.folder / "notes", f"{name}.md", f"# {name}\n\ntext\n")
    read: list[str] = []

    def reader(b, relpath, text):
        read.append(relpath)
        core.documents.jobs.get(b.workspace, b.name).cancel.set()  # the base is deleted (or the server stops) now
        return None

    core.index.register_reader("notes/", reader)
    job, _ = core.documents.start(owner(), "kb")
    assert core.documents.jobs.join(job, 60)
    assert job.state == "failed" and job.error["code"] == "SYNC_CANCELLED"
    assert read == ["notes/a.md"]  # stopped before the next file, not 20 files later
