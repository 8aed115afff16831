"""Syncs as background jobs: status for readers, joining, 409 for a reindex mid-sync, searchable as it goes,
notes written mid-sync, large files, errors per file, the CLI following the job."""

from __future__ import annotations

import json
import threading
import time

import pytest

from .kit import ConceptEmbedder, PacedEmbedder, folder, labels, make_base, owner, wait_for, write

pytestmark = pytest.mark.engines  # the tests of a core run on SQLite and on PostgreSQL

BASE = "/v1/metis/knowledge-bases/{}"








def test_a_sync_is_a_job_readers_can_follow_and_documents_are_searchable_as_it_goes(client, core, key_client, tmp_path):
    src = folder(tmp_path, 200)  # 200 passages: batches of 64, so four write transactions
    embedder = PacedEmbedder()
    make_base(core, "handbook", embedder=embedder, sources=[src])
    viewer = key_client("viewer")

    idle = viewer.get(BASE.format("handbook") + "/sync").json()
    assert idle["state"] == "idle" and idle["index"]["documents"] == 0

    started = client.post(BASE.format("handbook") + "/sync?wait=false")
    assert started.status_code == 202 and started.json()["started"] is True
    job_id = started.json()["id"]
    wait_for(embedder.waiting.is_set)  # the first batch is written; the second waits
    status = wait_for(lambda: (s := viewer.get(BASE.format("handbook") + "/sync").json())["passages"]["done"] and s)
    assert status["id"] == job_id and status["state"] == "running" and status["phase"] == "indexing"
    assert status["files"] == {"done": 64, "read": 200, "total": 200}
    assert status["passages"] == {"done": 64, "total": 200}
    assert status["knowledge_base"] == "handbook" and status["kind"] == "sync" and status["started_at"]
    # searchable as it goes: the first batch answers while the sync waits on its second
    assert labels(viewer.post(BASE.format("handbook") + "/search", json={"query": "topic3"}).json())[0] \
        == "docs:handbook/doc003.md"
    later_one = viewer.post(BASE.format("handbook") + "/search", json={"query": "topic150"}).json()
    assert "docs:handbook/doc150.md" not in labels(later_one)

    # another start joins it; a reindex is refused with the job; a viewer may not start one
    again = client.post(BASE.format("handbook") + "/sync?wait=false")
    assert again.status_code == 202 and again.json()["id"] == job_id and again.json()["started"] is False
    refused = client.post(BASE.format("handbook") + "/reindex?wait=false")
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "SYNC_RUNNING" and error["details"]["job"]["id"] == job_id
    assert "64 of 200 passages" in error["message"]
    assert viewer.post(BASE.format("handbook") + "/sync?wait=false").status_code == 403

    embedder.step()
    later = wait_for(lambda: (s := client.get(BASE.format("handbook") + "/sync").json())["passages"]["done"] >= 128 and s)
    assert later["passages_per_second"] > 0 and later["eta_seconds"] is not None

    # a blocking POST joins the running job and answers its report when it ends
    joined: dict = {}
    waiter = threading.Thread(target=lambda: joined.update(client.post(BASE.format("handbook") + "/sync").json()))
    waiter.start()
    embedder.finish()
    waiter.join(30)
    assert (joined["added"], joined["chunks"], joined["failed"]) == (200, 200, [])
    done = viewer.get(BASE.format("handbook") + "/sync").json()
    assert done["state"] == "finished" and done["id"] == job_id and done["finished_at"]
    assert done["report"]["added"] == 200 and done["eta_seconds"] is None
    assert done["files"]["done"] == done["files"]["total"] == 200
    assert labels(viewer.post(BASE.format("handbook") + "/search", json={"query": "topic150"}).json())[0] \
        == "docs:handbook/doc150.md"

    # the next start is a new job
    nxt = client.post(BASE.format("handbook") + "/sync").json()
    assert nxt["unchanged"] == 200
    assert client.get(BASE.format("handbook") + "/sync").json()["id"] != job_id


def test_a_note_written_mid_sync_is_searchable_when_the_write_returns(core, tmp_path):
    src = folder(tmp_path, 200)
    embedder = PacedEmbedder(solo=True)  # the sync is held between two batches; the note's own passage is not
    make_base(core, "busy", embedder=embedder, sources=[src])
    job, _ = core.documents.start(owner(), "busy")
    wait_for(embedder.waiting.is_set)
    core.notes.write(owner(), "busy", "notes", "late.md", "# Late\n\nwritten while indexing")
    # The sync holds the base's lock only to write a batch: the note went in at once.
    assert labels(core.search.search(owner(), "busy", "written while indexing"))[0] == "notes:busy/late.md"
    assert job.state == "running"
    embedder.finish()
    report = core.documents.wait(job, 30)
    assert report["added"] == 200  # the sync's own count: the note was indexed on its own
    assert labels(core.search.search(owner(), "busy", "written while indexing"))[0] == "notes:busy/late.md"


def test_large_files_and_unreadable_ones_are_reported_in_the_job(client, core, tmp_path):
    src = folder(tmp_path, 2)
    write(src, "print.md", "# All\n\n" + "\n\n".join(f"## S{j}\n\nsection {j}" for j in range(12)) + "\n")
    (src / "bad.pdf").write_bytes(b"%PDF-1.4 broken")
    make_base(core, "big", embedder=ConceptEmbedder(), sources=[src])
    core.index.large_file = 10
    report = client.post(BASE.format("big") + "/sync").json()
    assert report["added"] == 3  # a large file is still indexed: the warning says what to do
    job = client.get(BASE.format("big") + "/sync").json()
    assert job["state"] == "finished"
    assert [w["document"] for w in job["warnings"]] == ["docs:big/print.md"]
    assert job["warnings"][0]["passages"] == 12 and job["warnings"][0]["code"] == "LARGE_FILE"
    assert "more than 10" in job["warnings"][0]["message"] and "exclude it" in job["warnings"][0]["message"]
    assert [e["document"] for e in job["errors"]] == ["docs:big/bad.pdf"]
    assert job["files"] == {"done": 4, "read": 4, "total": 4}


def test_a_sync_that_fails_says_so_in_its_status(client, core, tmp_path):
    class Broken(ConceptEmbedder):
        def embed_passages(self, texts):
            raise RuntimeError("the embedding model fell over")

    make_base(core, "kb", embedder=Broken(), sources=[folder(tmp_path, 3)])
    r = client.post(BASE.format("kb") + "/sync")
    assert r.status_code == 500 and r.json()["error"]["code"] == "SYNC_FAILED"
    job = client.get(BASE.format("kb") + "/sync").json()
    assert job["state"] == "failed" and "fell over" in job["error"]["message"] and job["finished_at"]
    lines = [json.loads(x) for x in client.post(BASE.format("kb") + "/sync?progress=true").iter_lines() if x]
    assert lines[-1]["error"]["code"] == "SYNC_FAILED"


def test_start_up_sync_queues_every_base_and_runs_them_one_after_another(core, tmp_path):
    embedder = PacedEmbedder(free=0)
    one, two = tmp_path / "one", tmp_path / "two"
    write(one, "a.md", "# A\n\nalpha\n")
    write(two, "b.md", "# B\n\nbeta\n")
    make_base(core, "one", embedder=embedder, sources=[one])
    make_base(core, "two", embedder=embedder, sources=[two])
    done: dict = {}
    runner = threading.Thread(target=lambda: done.update(core.sync_all()))
    runner.start()
    wait_for(embedder.waiting.is_set)
    states = sorted(core.documents.status(owner(), name).state for name in ("one", "two"))
    assert states == ["queued", "running"]
    embedder.finish()
    runner.join(30)
    assert done["default/one"]["added"] == done["default/two"]["added"] == 1


@pytest.mark.parametrize("where", ["here", "in another process"])
def test_a_base_deleted_mid_sync_stops_its_job(core, tmp_path, request, where):
    embedder = PacedEmbedder()
    make_base(core, "gone", embedder=embedder, sources=[folder(tmp_path, 200)])
    deleting = core if where == "here" else request.getfixturevalue("other")  # another replica, as the domain sees it
    job, _ = core.documents.start(owner(), "gone")
    wait_for(embedder.waiting.is_set)
    deleter = threading.Thread(target=lambda: deleting.bases.delete(owner(), "gone"))
    deleter.start()
    wait_for(job.cancel.is_set, 10)  # the job's process heard the stop
    embedder.finish()
    deleter.join(30)
    assert job.done.is_set() and job.state == "failed" and job.error["code"] == "SYNC_CANCELLED"
    assert not core.bases.folder("default", "gone").exists()


def test_an_upload_during_a_sync_is_not_overwritten_by_the_copy_the_sync_read_before(core, tmp_path):
    embedder = PacedEmbedder(solo=True)
    make_base(core, "hb", embedder=embedder)
    uploads = core.bases.find("default", "hb").folder / "files"
    for i in range(100):  # on disk before the sync: it reads all, then indexes 64 at a time
        write(uploads, f"u{i:03}.md", f"# U{i}\n\nold text of upload {i} oldword{i}\n")
    job, _ = core.documents.start(owner(), "hb")
    wait_for(embedder.waiting.is_set)  # u000–u063 written; u090 read (old) but not yet written
    core.documents.upload(owner(), "hb", "u090.md", b"# U90\n\nnew text newword90\n")
    assert labels(core.search.search(owner(), "hb", "newword90"))[0] == "docs:hb/u090.md"
    embedder.finish()
    report = core.documents.wait(job, 30)
    assert report["added"] == 99  # u090 was indexed by its upload, newer than what the sync had read
    hit = core.search.search(owner(), "hb", "newword90").results[0]
    assert hit.document == "docs:hb/u090.md" and "new text" in hit.text
    assert not any("oldword90" in r.text for r in core.search.search(owner(), "hb", "oldword90").results)


# -- one job per base across processes and replicas (the status in the records database) ---------


def test_another_process_sees_a_sync_follows_it_and_joins_it_instead_of_starting_a_second(core, other, tmp_path):
    embedder = PacedEmbedder()
    make_base(core, "shared", embedder=embedder, sources=[folder(tmp_path, 200)])
    assert other.documents.status(owner(), "shared").state == "idle"
    job, started = core.documents.start(owner(), "shared")
    assert started
    wait_for(embedder.waiting.is_set)  # 64 passages embedded, the rest held
    seen = wait_for(lambda: (s := other.documents.status(owner(), "shared")).passages.done >= 64 and s)
    assert (seen.id, seen.state, seen.kind) == (job.id, "running", "sync")
    assert seen.passages.total == job.passages_total and seen.files.total == 200

    joined, started = other.documents.start(owner(), "shared")  # a sync asked of the other process
    assert not started and joined.id == job.id and joined.active
    with pytest.raises(Exception) as refused:  # a reindex there is refused as it is here
        other.documents.start(owner(), "shared", "reindex")
    assert getattr(refused.value, "code", None) == "SYNC_RUNNING"

    embedder.finish()
    report = other.documents.wait(joined, 30)  # the other process waits for the job it joined
    assert report is not None and report["added"] == 200
    assert embedder.embedded == job.passages_total  # one sync: nothing embedded twice
    after = other.documents.status(owner(), "shared")
    assert after.report is not None and (after.id, after.state, after.report.added) == (job.id, "finished", 200)
    assert labels(other.search.search(owner(), "shared", "item7x0"))[0] == "docs:shared/doc007.md"


def test_a_job_followed_from_another_process_ends_as_it_ended_even_when_a_newer_job_took_its_row(core, other, tmp_path):
    embedder = PacedEmbedder()
    make_base(core, "hb", embedder=embedder, sources=[folder(tmp_path, 100)])
    first, _ = core.documents.start(owner(), "hb")
    wait_for(embedder.waiting.is_set)
    followed, started = other.documents.start(owner(), "hb")  # the CLI's `astra metis sync` on another replica
    assert not started and followed.id == first.id
    embedder.finish()
    assert core.documents.wait(first, 30)["added"] == 100
    second, started = core.documents.start(owner(), "hb")  # before the follower looks again (one poll: 0.5 s)
    assert started and second.id != first.id
    assert other.documents.wait(followed, 30)["added"] == 100  # finished, with its report: not SYNC_CANCELLED
    assert followed.state == "finished" and followed.error is None
    assert core.documents.wait(second, 30)["unchanged"] == 100


def test_a_sync_whose_process_stopped_giving_news_is_shown_stopped_and_a_new_one_starts(core, tmp_path, monkeypatch):
    from astralyx.metis import jobs

    make_base(core, "hb", sources=[folder(tmp_path, 3)])
    # a process that claimed the base's sync and then died (kill -9): its row never moves again
    dead = jobs.SyncJobs(jobs.JobStore(core.db))
    dead_job = jobs.SyncJob(workspace="default", base="hb", kind="sync")
    assert dead.store is not None and dead.store.claim(dead_job) is None
    assert core.documents.status(owner(), "hb").state == "queued"  # fresh: taken as alive
    monkeypatch.setattr(jobs, "STALE", 0.2)
    time.sleep(0.3)
    shown = core.documents.status(owner(), "hb")
    assert shown.id == dead_job.id and shown.state == "failed" and shown.error.code == "SYNC_CANCELLED"
    job, started = core.documents.start(owner(), "hb")
    assert started and job.id != dead_job.id
    assert core.documents.wait(job, 30)["added"] == 3
    assert core.documents.status(owner(), "hb").id == job.id
