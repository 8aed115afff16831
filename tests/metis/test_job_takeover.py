"""A sync or reindex whose process was killed (kill -9) is taken over at the next start, at once: not followed
until its heartbeat goes stale, and a start-up sync that followed it runs again."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.metis import jobs
from astralyx.server import create_app

from ..conftest import ADMIN_TOKEN, run
from .test_index import ConceptEmbedder, make_base, owner
from .test_sync_jobs import wait_for

pytestmark = pytest.mark.engines  # the sync jobs' rows on SQLite and on PostgreSQL

ROOT = Path(__file__).resolve().parents[2]
FACTS = 300
SYNC = "/v1/metis/knowledge-bases/team/sync"

# Another process on the same data directory: it starts a job of the base (argv: home, base, kind) with an
# embedder that embeds one batch and then holds every call, says "held", and waits to be killed.
CHILD = r"""
import sys, threading
from astralyx.config import Settings
from astralyx.core import Astralyx
from tests.metis.test_index import ConceptEmbedder, owner

class Held(ConceptEmbedder):
    def embed_passages(self, texts):
        if self.calls:
            print("held", flush=True)
            threading.Event().wait()
        return super().embed_passages(texts)

core = Astralyx(Settings.load(sys.argv[1])).start()
held = Held()
core.index.embedder_for = lambda base: held
job, _ = core.documents.start(owner(), sys.argv[2], sys.argv[3])
print(job.id, flush=True)
threading.Event().wait()
"""


def a_memory_of_facts(home: Path) -> None:
    """A memory `team` of FACTS facts, indexed, in a core that is closed again (a server that stopped)."""
    core = Astralyx(Settings.load(home)).start()
    try:
        make_base(core, "team", embedder=ConceptEmbedder(), kind="memory")
        core.memory.keep(owner(), "team", [
            {"subject": f"Person {i}", "attribute": "project", "fact": f"Person {i} works on project zeta{i}.",
             "said_at": "2026-09-01", "source": "chat: takeover"}
            for i in range(FACTS)
        ])
    finally:
        core.close()


class Child:
    """The other process: `astra serve`'s core, mid-job, until it is killed."""

    started: list[Child] = []  # killed at the end of each test, whatever happened

    def __init__(self, home: Path, kind: str) -> None:
        Child.started.append(self)
        self.process = subprocess.Popen([sys.executable, "-c", CHILD, str(home), "team", kind], cwd=ROOT,
                                        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        self.job = self.line()
        assert self.line() == "held"  # its job is mid-way: one batch embedded, the next held

    def line(self) -> str:
        got: list[str] = []
        reader = threading.Thread(target=lambda: got.append(self.process.stdout.readline().strip()), daemon=True)
        reader.start()
        reader.join(120)
        assert got and got[0], self.process.stderr.read() if self.process.poll() is not None else "no answer"
        return got[0]

    def kill(self) -> None:
        self.process.kill()  # SIGKILL: no clean-up at all
        self.process.wait(30)


def restarted(home: Path) -> Astralyx:
    core = Astralyx(Settings.load(home)).start()
    core.index.embedder_for = lambda base: ConceptEmbedder() if base.spec.embedding else None
    return core


def searchable(core: Astralyx) -> int:
    found = 0
    for i in range(0, FACTS, FACTS // 50):  # 50 of them
        texts = [r["text"] for r in core.search.search(owner(), "team", f"zeta{i}")["results"]]
        found += f"Person {i} works on project zeta{i}." in texts
    return found


@pytest.fixture
def no_stale(monkeypatch):
    # A heartbeat never goes stale in these tests: what ends the dead job is its process being gone.
    monkeypatch.setattr(jobs, "STALE", 3600.0)
    yield
    while Child.started:
        child = Child.started.pop()
        if child.process.poll() is None:
            child.kill()


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
        assert status["state"] == "finished" and status["kind"] == "reindex" and status["id"] != child.job
        assert searchable(core) == 50
    finally:
        core.close()

