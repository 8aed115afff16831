"""Folder locks and job locks: fcntl on one machine, PostgreSQL advisory locks under that engine."""

from __future__ import annotations

import threading

import psycopg
import pytest

from astralyx import locks


def advisory_locks(url: str) -> int:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted").fetchone()[0]


def in_another_thread(fn):
    out: list = []
    thread = threading.Thread(target=lambda: out.append(fn()))
    thread.start()
    thread.join(10)
    return out[0]


def other_job(home, name) -> bool:
    def attempt() -> bool:
        with locks.job(home, name) as mine:
            return mine

    return in_another_thread(attempt)


@pytest.fixture(params=["sqlite", "postgres"])
def engine_home(request, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    if request.param == "sqlite":
        yield home, None
        return
    with request.getfixturevalue("postgres_server").database() as url:
        locks.use_postgres(home, url)
        try:
            yield home, url
        finally:
            locks.use_postgres(home, None)


def test_a_job_runs_in_one_place_at_a_time(engine_home):
    home, _ = engine_home
    with locks.job(home, "sync-all") as mine:
        assert mine
        assert other_job(home, "sync-all") is False  # another process or replica skips it
        assert other_job(home, "start") is True  # another job is free
    assert other_job(home, "sync-all") is True


def test_a_folder_lock_waits_for_its_holder_and_is_reentrant(engine_home):
    home, url = engine_home
    folder = home / "bases/default/team"
    order: list[str] = []

    def other() -> None:
        with locks.folder_lock(folder):
            order.append("other")

    with locks.folder_lock(folder):
        with locks.folder_lock(folder):  # the same thread again: no deadlock
            if url:
                assert advisory_locks(url) == 1
                assert not (folder / ".lock").exists()  # not a file lock on PostgreSQL
            waiter = threading.Thread(target=other)
            waiter.start()
            waiter.join(0.3)
            order.append("holder")
    waiter.join(10)
    assert order == ["holder", "other"]
