"""A lock per folder that holds across threads and processes, and across replicas.

The core builds one `Locks` for its data directory and hands it to whoever writes there (the writer, notes, saves,
memory, documents, imports, exchange). On one machine (SQLite) a folder's lock is an fcntl lock on `folder/.lock`.
When the data directory's engine is PostgreSQL, its folders are locked with PostgreSQL advisory locks instead,
named by the folder's path inside the data directory, so replicas on several machines sharing one data directory
never interleave writes to one base. Each core locks by its own engine: nothing here is switched process-wide.

`Locks.job(name)` is the lock of a job that should run once, not once per process or replica (start-up repair,
the sync of every base): whoever gets it runs the job, the others skip it.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# Within this process a folder is one lock whichever core takes it (flock excludes open files, not threads):
# a thread lock per resolved path, and how deep each thread holds it (re-entrant).
_thread_locks: dict[str, threading.RLock] = {}
_guard = threading.Lock()
_held = threading.local()


class Locks:
    """How the folders of one data directory are locked: fcntl, or advisory locks of the PostgreSQL database at
    `url` (a folder outside `home` is locked with fcntl either way)."""

    def __init__(self, home: Path, url: str | None = None) -> None:
        self.home = home
        self.url = url or None
        self._root = str(home.resolve())

    @contextmanager
    def folder(self, folder: Path, *, create: bool = True) -> Iterator[None]:
        """Exclusive lock on a folder; re-entrant within a thread. `create=False`: a folder that is not there (any
        more) is not made again for its lock: FileNotFoundError."""
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
            if create:
                folder.mkdir(parents=True, exist_ok=True)
            elif not folder.is_dir():
                raise FileNotFoundError(folder)
            with self._exclusive(folder, key, wait=True):
                held[key] = 1
                try:
                    yield
                finally:
                    held[key] = 0

    @contextmanager
    def job(self, name: str, under: Path | None = None) -> Iterator[bool]:
        """True inside when this process runs the job `name` (of the data directory, or of the folder `under`) now;
        False when another process or replica is running it (then skip it)."""
        folder = (under or self.home) / ".jobs" / name
        folder.mkdir(parents=True, exist_ok=True)
        with self._exclusive(folder, str(folder.resolve()), wait=False) as got:
            yield got

    @contextmanager
    def _exclusive(self, folder: Path, key: str, *, wait: bool) -> Iterator[bool]:
        if self.url and (key == self._root or key.startswith(self._root + os.sep)):
            from .engines.postgres import advisory  # psycopg: only under PostgreSQL

            with advisory(self.url, "astralyx:folder:" + os.path.relpath(key, self._root), wait=wait) as got:
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
