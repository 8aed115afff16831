"""The one way a base's files are written: atomic writes and removals under the base's folder lock,
each told as a typed change to the subscribers (the index, subscribed once in core.py).

Notes, a model's saves (through notes), a memory's facts and uploads all write here, so whatever
follows the files (the index today, a second engine tomorrow) hears of every change the same way.
A subscriber reads the file as it is when told, so the order it is told in never leaves it stale.
The areas of a base's folder and the one rule of which files are a memory's facts live here too.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..locks import Locks
from ..util import atomic_write, fsync_dir, sha256
from .bases import KnowledgeBase

log = logging.getLogger("astralyx.metis")

UPLOADS = "files"  # documents uploaded to a base
FACTS_DIR = "notes/memory"  # in a memory: its facts (current; history/ below), changed through the memory only
FACTS = "facts"  # the area of a memory's facts


def holds_facts(base: KnowledgeBase, relpath: str) -> bool:
    """Whether a path of the base's folder is one of a memory's facts: a memory's notes/memory/ holds its
    facts (a documents base's notes/memory/ is ordinary notes)."""
    return base.kind == "memory" and relpath.startswith(FACTS_DIR + "/")


def area_of(base: KnowledgeBase, relpath: str) -> str:
    """The area a path belongs to: files (uploads), notes, saved (a model's notes) or facts."""
    return FACTS if holds_facts(base, relpath) else relpath.split("/", 1)[0]


@dataclass(frozen=True)
class FileChange:
    """A file of a base's folder written or removed (path relative to the folder; version: the new
    content's SHA-256, None when removed)."""

    base: KnowledgeBase
    path: str
    area: str
    version: str | None

    @property
    def removed(self) -> bool:
        return self.version is None


Subscriber = Callable[[FileChange], None]


class Writer:
    def __init__(self, locks: Locks, subscribers: Iterable[Subscriber] = ()) -> None:
        self.locks = locks  # a base's folder is locked while a file of it is written
        self.subscribers: list[Subscriber] = list(subscribers)  # told of every change, in this order (core.py: the index)

    def of(self, base: KnowledgeBase) -> KnowledgeBaseFiles:
        return KnowledgeBaseFiles(self, base)

    def write(self, base: KnowledgeBase, relpath: str, data: bytes | str, *, emit: bool = True) -> FileChange:
        """Write the file atomically (a crash leaves the old file or the new) and tell the subscribers."""
        data = data.encode() if isinstance(data, str) else data
        with self.locks.folder(base.folder):
            atomic_write(base.folder / relpath, data)
        change = FileChange(base, relpath, area_of(base, relpath), sha256(data))
        if emit:
            self.emit([change])
        return change

    def remove(self, base: KnowledgeBase, relpath: str, *, prune: bool = False, emit: bool = True) -> FileChange | None:
        """Remove the file (None: it was not there); prune: its emptied folders too, up to its area's."""
        file = base.folder / relpath
        with self.locks.folder(base.folder):
            try:
                file.unlink()
            except FileNotFoundError:
                return None
            fsync_dir(file.parent)
            if prune:
                _prune_empty(file.parent, base.folder / relpath.split("/", 1)[0])
        change = FileChange(base, relpath, area_of(base, relpath), None)
        if emit:
            self.emit([change])
        return change

    def emit(self, changes: Iterable[FileChange]) -> None:
        """Tell every subscriber of each change. With emit=False above the caller tells once its step is done
        (after letting go of the folder lock: it is not held while the index reads the file). A subscriber
        that fails is logged: the file is safe on disk, and what follows it catches up (`astra metis sync`)."""
        for change in changes:
            for subscriber in self.subscribers:
                try:
                    subscriber(change)
                except Exception:
                    log.exception("after %s %s of %s/%s", "removing" if change.removed else "writing", change.path,
                                  change.base.workspace, change.base.name)


@dataclass(frozen=True)
class KnowledgeBaseFiles:
    """The writer for one base (what a memory's store writes its facts with)."""

    writer: Writer
    base: KnowledgeBase

    def write(self, relpath: str, data: bytes | str, *, emit: bool = True) -> FileChange:
        return self.writer.write(self.base, relpath, data, emit=emit)

    def remove(self, relpath: str, *, emit: bool = True) -> FileChange | None:
        return self.writer.remove(self.base, relpath, emit=emit)

    def emit(self, changes: Iterable[FileChange]) -> None:
        self.writer.emit(changes)


def _prune_empty(folder: Path, root: Path) -> None:
    while folder != root and folder.is_relative_to(root):
        try:
            os.rmdir(folder)
        except OSError:
            return
        folder = folder.parent
