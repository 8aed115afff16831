"""The memory's files: reading every fact, changing several files as one step, repairing after a crash.

A change to several files (keep a batch, forget with history) is written first as a journal
(`.memory-journal.json` in the base's folder, written atomically), then applied file by file, then
the journal is removed. A crash in between leaves the journal: the next start replays it (each
operation is idempotent), so a batch is all or nothing. Then every key's timeline is re-arranged
from the files, which settles anything else (two current facts for one key: the later said wins;
a fact in both folders: the history copy is read, and the timeline decides where it belongs; two
notes of one fact side by side: one note, with the other's sayings). A memory whose files agree with
the rule (timeline.py) is left as it is.

Every file is written through the base's writer (metis/writer.py); the index hears of a step's
changes once the step is whole. Callers hold the base's folder lock (Locks.folder).
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from pathlib import Path

from ...util import atomic_write, fsync_dir
from ..writer import FileChange, KnowledgeBaseFiles
from .facts import CURRENT_DIR, HISTORY_DIR, Fact, parse, render
from .timeline import arrange, key_of

JOURNAL = ".memory-journal.json"

# (path relative to the base's folder, the file's new text or None to delete it)
Op = tuple[str, str | None]


class ParsedFacts:
    """Facts parsed from their files, each valid while its file's (inode, size, mtime) is unchanged: every write is a
    new file (atomic rename), so a changed fact is always read again. One per `Memory` (a core's): a store lives for
    one step, the facts it read serve the next. At most `limit` files (a memory's every fact is read at each step:
    past that, it starts over rather than keep what a deleted base's facts were)."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self._facts: dict[str, tuple[tuple[int, int, int], Fact | None]] = {}
        self._guard = threading.Lock()

    def __len__(self) -> int:
        return len(self._facts)

    def read(self, file: Path, status: str) -> Fact | None:
        st = file.stat()
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        key = str(file)
        hit = self._facts.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        fact = parse(file.read_text("utf-8", errors="replace"), file.stem, status)
        with self._guard:
            if len(self._facts) >= self.limit:
                self._facts.clear()
            self._facts[key] = (stamp, fact)
        return fact


def _parse_file(file: Path, status: str) -> Fact | None:
    return parse(file.read_text("utf-8", errors="replace"), file.stem, status)


class MemoryStore:
    def __init__(self, folder: Path, files: KnowledgeBaseFiles | None = None, parsed: ParsedFacts | None = None) -> None:
        self.folder = folder
        self.files = files  # how it writes; None: a store that only reads
        self._read = parsed.read if parsed is not None else _parse_file  # (no ParsedFacts: each file parsed at each read)
        self.current_dir = folder / CURRENT_DIR
        self.history_dir = folder / HISTORY_DIR
        self.journal = folder / JOURNAL

    # -- reading -----------------------------------------------------------
    def _scan(self) -> tuple[dict[str, Fact], dict[str, list[str]]]:
        """Every fact by id (the history copy wins over a current one), and where each has files."""
        found: dict[str, Fact] = {}
        places: dict[str, list[str]] = defaultdict(list)
        for status, folder in (("current", self.current_dir), ("history", self.history_dir)):
            if not folder.is_dir():
                continue
            for file in sorted(folder.glob("f_*.md")):
                if file.is_symlink() or not file.is_file():
                    continue
                try:
                    fact = self._read(file, status)
                except FileNotFoundError:
                    continue
                if fact is None:
                    continue
                places[fact.id].append(f"{folder.relative_to(self.folder).as_posix()}/{file.name}")
                found[fact.id] = fact  # history is read second: it wins
        return found, places

    def facts(self) -> list[Fact]:
        return list(self._scan()[0].values())

    @staticmethod
    def timelines(facts: list[Fact]) -> dict[tuple[str, str], list[Fact]]:
        groups: dict[tuple[str, str], list[Fact]] = defaultdict(list)
        for fact in facts:
            groups[key_of(fact)].append(fact)
        return {key: arrange(group) for key, group in groups.items()}

    # -- writing -----------------------------------------------------------
    def ops_for(self, before: dict[str, Fact], after: dict[str, Fact]) -> list[Op]:
        """The file operations that turn the facts `before` into `after` (by id)."""
        writes: list[Op] = []
        deletes: list[Op] = []
        for fid, fact in after.items():
            old = before.get(fid)
            if old != fact or old.status != fact.status:
                writes.append((fact.relpath, render(fact)))
            if old is not None and old.relpath != fact.relpath:
                deletes.append((old.relpath, None))
        for fid, old in before.items():
            if fid not in after:
                deletes.append((old.relpath, None))
        return writes + deletes

    def commit(self, ops: list[Op]) -> None:
        if not ops:
            return
        if len(ops) == 1:  # one file: atomic on its own
            self._told(self._apply(ops))
            return
        # The journal is the store's own bookkeeping, not a file of the base: nobody is told of it.
        atomic_write(self.journal, json.dumps({"ops": ops}, ensure_ascii=False), mode=0o600)
        changes = self._apply(ops)
        self.journal.unlink()
        fsync_dir(self.folder)
        self._told(changes)

    def _apply(self, ops: list[Op]) -> list[FileChange]:
        if self.files is None:
            raise RuntimeError("this memory store only reads: give it the base's files to write")
        changes: list[FileChange] = []
        for relpath, text in ops:
            change = self.files.write(relpath, text, emit=False) if text is not None else \
                self.files.remove(relpath, emit=False)
            if change is not None:
                changes.append(change)
        return changes

    def _told(self, changes: list[FileChange]) -> None:
        """The step is whole: the index hears of its changes, in the order they were made."""
        if self.files is not None:
            self.files.emit(changes)

    # -- repair --------------------------------------------------------------
    def repair(self) -> list[str]:
        """Finish an interrupted change, then make every file agree with its timeline.

        Returns the paths (relative to the base's folder) that changed, for the index.
        """
        changed: list[str] = []
        if self.journal.exists():
            try:
                ops: list[Op] = [(str(p), t) for p, t in json.loads(self.journal.read_text("utf-8"))["ops"]]
            except (ValueError, KeyError, TypeError):
                ops = []  # unreadable: written atomically, so this is not ours to replay
            replayed = self._apply(ops)
            changed.extend(p for p, _ in ops)
            self.journal.unlink()
            self._told(replayed)
        found, places = self._scan()
        arranged = {f.id: f for timeline in self.timelines(list(found.values())).values() for f in timeline}
        ops = []
        for fid, fact in arranged.items():
            stored = found.get(fid)
            if stored is None or stored != fact or stored.status != fact.status or places[fid] != [fact.relpath]:
                ops.append((fact.relpath, render(fact)))
            ops.extend((p, None) for p in places.get(fid, []) if p != fact.relpath)
        for fid in found.keys() - arranged.keys():  # one fact in two notes (edited by hand): one note now
            ops.extend((p, None) for p in places[fid])
        self.commit(ops)
        changed.extend(p for p, _ in ops)
        return sorted(set(changed))

