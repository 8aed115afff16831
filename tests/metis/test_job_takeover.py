"""A sync or reindex whose process was killed (kill -9) is taken over at the next start, at once: not followed
until its heartbeat goes stale, and a start-up sync that followed it runs again."""

from __future__ import annotations

import logging
import threading

import pytest
from starlette.testclient import TestClient

from astralyx.server import create_app

from ..conftest import ADMIN_TOKEN, run
from .kit import FACTS, Child, a_memory_of_facts, owner, restarted, searchable, wait_for

pytestmark = pytest.mark.engines  # the sync jobs' rows on SQLite and on PostgreSQL

SYNC = "/v1/metis/knowledge-bases/team/sync"













def test_a_reindex_killed_mid_way_is_taken_over_at_the_next_start(home, no_stale):
    a_memory_of_facts(home)
    child = Child(home, "reindex")
    child.kill()

    core = restarted(home)
    try:
        with TestClient(create_app(core), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
            # GET …/sync tells the truth at once: the job's process is gone (not "running" for 30 s)
            shown = client.get(SYNC).json()
            assert shown["id"] == child.job and shown["kind"] == "reindex" and shown["state"] == "failed"
            assert shown["error"]["code"] == "SYNC_CANCELLED"
            assert f"pid {child.process.pid}" in shown["error"]["message"]

            report = run(core.sync_all)["default/team"]  # the start-up sync: takes the job over, as a reindex
            assert report is not None and "error" not in report and report["added"] == FACTS

            after = client.get(SYNC).json()
            assert after["state"] == "finished" and after["kind"] == "reindex" and after["id"] != child.job
            assert searchable(core) == 50
    finally:
        core.close()


def test_a_start_up_sync_that_followed_a_job_whose_process_died_runs_it_again(home, no_stale, caplog):
    a_memory_of_facts(home)
    child = Child(home, "reindex")
    core = restarted(home)
    try:
        caplog.set_level(logging.INFO, logger="astralyx.metis")
        answer: dict = {}
        starting = threading.Thread(target=lambda: answer.update(core.sync_all()), daemon=True)
        starting.start()
        # the child's job is alive: the start-up sync follows it …
        wait_for(lambda: any("following it" in r.getMessage() and child.job in r.getMessage() for r in caplog.records),
                 120)
        child.kill()  # … and its process dies: the start-up sync runs it again here
        starting.join(120)
        assert not starting.is_alive()
        report = answer["default/team"]
        assert report is not None and "error" not in report and report["added"] == FACTS
        status = core.documents.status(owner(), "team")
        assert status.state == "finished" and status.kind == "reindex" and status.id != child.job
        assert searchable(core) == 50
    finally:
        core.close()

