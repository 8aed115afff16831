"""A lock per folder that holds across threads and processes (the server and a local CLI)."""

from __future__ import annotations

import fcntl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_thread_locks: dict[str, threading.RLock] = {}
_guard = threading.Lock()
_held = threading.local()


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Exclusive lock on `folder/.lock`; re-entrant within a thread."""
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
        with open(folder / ".lock", "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            held[key] = 1
            try:
                yield
            finally:
                held[key] = 0
                fcntl.flock(f, fcntl.LOCK_UN)
