"""Folder locks and job locks: fcntl on one machine, PostgreSQL advisory locks under that engine."""

from __future__ import annotations

import os
import threading

import psycopg
import pytest

from astralyx.auth.actor import Actor
from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.engines import lock_id
from astralyx.locks import Locks
from astralyx.metis.bases import parse_request
from astralyx.metis.memory.service import KeptFacts

OWNER = Actor.local_owner("default")


def advisory_locks(url: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted").fetchone()[0]


def in_another_thread(fn):
    out: list = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join(10)
    return out[0]


def other_job(locks: Locks, name) -> bool:
    def attempt() -> bool:
        with locks.job(name) as mine:
            return mine

    return in_another_thread(attempt)


@pytest.fixture(params=["sqlite", "postgres"])
def engine_locks(request, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    if request.param == "sqlite":
        yield Locks(home), None
        return
    with request.getfixturevalue("postgres_server").database() as url:
        yield Locks(home, url), url


def test_a_job_runs_in_one_place_at_a_time(engine_locks):
    locks, _ = engine_locks
    with locks.job("sync-all") as mine:
        assert mine
        assert other_job(locks, "sync-all") is False  # another process or replica skips it
        assert other_job(locks, "start") is True  # another job is free
    assert other_job(locks, "sync-all") is True


def test_a_folder_lock_waits_for_its_holder_and_is_reentrant(engine_locks):
    locks, url = engine_locks
    folder = locks.home / "bases/default/team"
    order: list[str] = []

    def other() -> None:
        with locks.folder(folder):
            order.append("other")

    with locks.folder(folder):
        with locks.folder(folder):  # the same thread again: no deadlock
            if url:
                assert advisory_locks(url) == 1
                assert not (folder / ".lock").exists()  # not a file lock on PostgreSQL
            waiter = threading.Thread(target=other)
            waiter.start()
            waiter.join(0.3)
            order.append("holder")
    waiter.join(10)
    assert order == ["holder", "other"]


def fact(text: str) -> dict:
    return {"subject": "Ana", "attribute": "role", "fact": text, "source": "chat: x", "said_at": "2026-09-01"}


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_closing_one_core_leaves_another_on_the_same_home_locking_by_its_engine(core, database_url):
    """Two cores on one data directory in one process (two replicas, as the domain sees them): closing one does
    not turn the other's folder locks into file locks of this machine."""
    core.bases.create(OWNER, parse_request({"metadata": {"name": "team"}, "spec": {"kind": "memory"}}))
    second = Astralyx(Settings.load(core.home)).start()
    second.close()
    folder = core.bases.folder("default", "team")
    core.memory.keep(OWNER, "team", [fact("Ana leads the data team.")])
    assert not (folder / ".lock").exists()  # still PostgreSQL's advisory lock, not an fcntl lock file

    # A replica elsewhere holding the base's lock is waited for.
    lock = lock_id("astralyx:folder:" + os.path.relpath(folder.resolve(), core.home.resolve()))
    kept: list[KeptFacts] = []
    with psycopg.connect(database_url, autocommit=True) as replica:
        replica.execute("SELECT pg_advisory_lock(%s)", (lock,))
        writer = threading.Thread(target=lambda: kept.append(core.memory.keep(OWNER, "team", [fact("Ana joined research.")])))
        writer.start()
        writer.join(0.3)
        assert writer.is_alive() and not kept
        replica.execute("SELECT pg_advisory_unlock(%s)", (lock,))
        writer.join(30)
    assert kept and kept[0].facts
