"""A lock per folder that holds across threads and processes, and across replicas.

On one machine (SQLite) it is an fcntl lock on `folder/.lock`. Under the PostgreSQL engine
(`use_postgres(home, url)`, set by the core) the folders of that data directory are locked with
PostgreSQL advisory locks instead, named by the folder's path inside the data directory, so
replicas on several machines sharing one data directory never interleave writes to one base.

`job(home, name)` is the lock of a job that should run once, not once per process or replica
(start-up repair, the sync of every base): whoever gets it runs the job, the others skip it.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_thread_locks: dict[str, threading.RLock] = {}
_guard = threading.Lock()
_held = threading.local()
_postgres: dict[str, str] = {}  # resolved data directory → PostgreSQL URL whose advisory locks it uses


def use_postgres(home: Path, url: str | None) -> None:
    """Lock the folders under `home` with advisory locks of the database at `url` (None: fcntl again)."""
    key = str(home.resolve())
    with _guard:
        if url:
            _postgres[key] = url
        else:
            _postgres.pop(key, None)


def _postgres_name(path: str) -> tuple[str, str] | None:
    """(URL, lock name) when `path` is under a data directory on PostgreSQL."""
    with _guard:
        for root, url in _postgres.items():
            if path == root or path.startswith(root + os.sep):
                return url, "astralyx:folder:" + os.path.relpath(path, root)
    return None


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Exclusive lock on a folder; re-entrant within a thread."""
    key = str(folder.resolve())
    with _guard:
        tlock = _thread_locks.setdefault(key, threading.RLock())
    with tlock:
        held: dict[str, int] = getattr(_held, "counts", None) or {}
        _held.counts = held
        if held.get(key):
            held[key] += 1
            try:
                yield
            finally:
                held[key] -= 1
            return
        folder.mkdir(parents=True, exist_ok=True)
        with _exclusive(folder, key, wait=True):
            held[key] = 1
            try:
                yield
            finally:
                held[key] = 0


@contextmanager
def job(home: Path, name: str) -> Iterator[bool]:
    """True inside when this process runs the job `name` now; False when another process or
    replica is running it (then skip it)."""
    folder = home / ".jobs" / name
    folder.mkdir(parents=True, exist_ok=True)
    with _exclusive(folder, str(folder.resolve()), wait=False) as got:
        yield got


@contextmanager
def advisory(url: str, name: str, *, wait: bool) -> Iterator[bool]:
    """A PostgreSQL session advisory lock named `name` (True inside when held; `wait=False`: False at once when
    another session holds it). A process that dies lets it go. Held on a connection of the engine's lock pool,
    which this thread keeps while it holds any (apart from the statements' pool: a holder never waits on itself)."""
    from .engines import lock_id
    from .engines.postgres import borrow, busy

    lock = lock_id(name)
    with borrow(url, "locks") as conn:
        try:
            if wait:
                conn.execute("SELECT pg_advisory_lock(%s)", (lock,))
                got = True
            else:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (lock,)).fetchone()
                got = bool(row and row[0])
        except Exception as e:
            translated = busy(e)
            if translated is None:
                raise
            raise translated from e
        try:
            yield got
        finally:
            if got:
                try:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (lock,))
                except Exception:
                    if not conn.broken:  # a session that broke let its locks go with it
                        raise


@contextmanager
def _exclusive(folder: Path, key: str, *, wait: bool) -> Iterator[bool]:
    on_postgres = _postgres_name(key)
    if on_postgres is not None:
        url, name = on_postgres
        with advisory(url, name, wait=wait) as got:
            yield got
        return
    with open(folder / ".lock", "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            got = True
        except BlockingIOError:
            got = False
        try:
            yield got
        finally:
            if got:
                fcntl.flock(f, fcntl.LOCK_UN)
