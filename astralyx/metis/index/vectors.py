"""An approximate-nearest-neighbour sidecar of a base's vectors: `index.vectors.usearch` (HNSW, usearch).

Derived from `chunks_vec` in index.db, never the truth. index.db keeps a generation number in
`meta` (`vectors_generation`, one more for every transaction that changes vectors) and an id of
its own (`index_id`); the sidecar records both in `index.vectors.json` beside the graph. The
code that writes chunks (SqliteIndexStore.write/remove) hands each committed change to the sidecar,
which applies it when it was in step with the generation before, so it follows adds, replaces
and deletes without a rebuild. Anything else — no sidecar, a crash before it was saved, a copied
index.db, another process writing, a corrupt file — shows as a generation that does not match:
searches then use the exact vec0 scan while the sidecar is rebuilt in a background thread.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy is imported where vectors are handled
    import numpy as np
    import usearch.index

from ...util import atomic_write, fsync_dir

log = logging.getLogger("astralyx.metis")

CONNECTIVITY = 16  # HNSW M: links per node
EXPANSION_ADD = 128  # ef at build time
EXPANSION_SEARCH = 128  # ef at search time, at least (recall@10 0.990 on e5 vectors for the 50 candidates asked)
# ef grows with the candidates asked: at a fixed ef the tail of a longer list is approximate (recall@100
# 0.932 at ef 128, 0.987 at 300, 0.999 at 1000 on SciFact's e5 vectors), which cost hybrid search 0.003
# nDCG@10 when 100 candidates were asked; at 8× the candidates hybrid is the exact path's (docs/benchmarks.md).
EXPANSION_PER_CANDIDATE = 8
EXHAUSTIVE_UP_TO = 10_000  # vectors up to which the sidecar compares them all (exact, ~1 ms), HNSW above
SYNC_BUILD = 256  # vectors up to which a (re)build is done in the caller's thread
HANDED_WAIT = 1.0  # seconds a search waits for a write being handed to the sidecar, at most
SAVE_DELAY = 2.0  # seconds without a change before the sidecar is written to disk, at least
# ... and at least this many times the last save's duration. A save writes the whole graph (0.3 s at 100k
# vectors, seconds at 1M) holding it and Python's GIL meanwhile: the whole process stands still
# (bench/sidecar_save.py). And a graph saved while writes go on is of no use: the next write makes it
# stale, and a stale file is rebuilt, not loaded. So it is saved once the changes pause (a sync's batches
# come every few seconds: a large graph waits for the sync's end), and at close.
SAVE_SPACING = 20

# What a rebuild reads: (generation, ids, vectors) from one consistent snapshot of index.db.
Snapshot = Callable[[], "tuple[int, np.ndarray, np.ndarray]"]


class VectorSidecar:
    """HNSW over the chunk vectors of one index.db, kept in step by generation number."""

    def __init__(
        self, path: Path, index_id: str, dimensions: int, snapshot: Snapshot, count: Callable[[], int]
    ) -> None:
        self.path = path  # …/index.vectors.usearch; its header is …/index.vectors.json
        self.header = path.with_suffix(".json")
        self.index_id = index_id
        self.dimensions = dimensions
        self.snapshot = snapshot
        self.count = count  # vectors in index.db now (a small base is rebuilt at once)
        self.generation: int | None = None  # the index.db generation the graph reflects (None: not usable)
        self._index: Any = None  # usearch.index.Index once loaded or built
        self._lock = threading.RLock()
        self._building: threading.Thread | None = None
        self._pending: list[tuple[int, dict[int, np.ndarray | None]]] = []  # changes seen while building
        self._dirty = False
        self._saver: threading.Timer | None = None
        self._save_seconds = 0.0  # how long the last save took
        self._changed = 0.0  # when the graph last changed (monotonic)
        self._closed = False
        self._tried_load = False  # the saved graph is loaded once, at the first search or write
        self.builds = 0  # rebuilds started (for tests and the bench)
        self.answered = 0  # searches this sidecar answered

    # -- answering ----------------------------------------------------------------------------
    def search(self, vector: np.ndarray, limit: int, generation: int, oldest: int | None = None) -> list[int] | None:
        """Nearest chunk ids, or None when the sidecar cannot answer for this generation (the
        caller scans exactly; a rebuild is started if none is under way). `oldest`: a generation from which
        it may answer too (writes up to `generation` are being handed to it: it is in step, or about to be)."""
        oldest = generation if oldest is None else oldest
        found = self._answer(vector, limit, oldest, generation)
        if found is None and oldest < generation:  # a write being handed to it: a few ms, not a rebuild
            found = self._answer(vector, limit, oldest, generation, wait=HANDED_WAIT)
        if found is None:
            self.ensure(generation)  # a small base is rebuilt at once and answers now
            found = self._answer(vector, limit, generation, generation)
        return found

    def _answer(self, vector: np.ndarray, limit: int, oldest: int, generation: int, wait: float = 0.0) -> list[int] | None:
        import numpy as np

        acquired = self._lock.acquire(timeout=wait) if wait else self._lock.acquire(blocking=False)
        if not acquired:
            return None  # being changed or saved: never make a search wait for it (but for a write's few ms)
        try:
            if (self._index is None or self.generation is None or not oldest <= self.generation <= generation
                    or self._building is not None):
                return None
            if len(self._index) == 0:
                return []
            size = len(self._index)
            breadth = max(EXPANSION_SEARCH, EXPANSION_PER_CANDIDATE * limit)
            if self._index.expansion_search != breadth:  # searches of one sidecar run one at a time (the lock)
                self._index.expansion_search = breadth
            matches = self._index.search(
                np.asarray(vector, dtype=np.float32), min(limit, size), exact=size <= EXHAUSTIVE_UP_TO
            )
            self.answered += 1
            return [int(k) for k in matches.keys]
        finally:
            self._lock.release()

    # -- keeping in step ----------------------------------------------------------------------
    def apply(self, generation: int, changes: dict[int, np.ndarray | None]) -> None:
        """A committed change of index.db (chunk id → its vector, or None when it is gone),
        which moved the generation to `generation`."""
        with self._lock:
            if self._building is not None:
                self._pending.append((generation, changes))
                return
            if self._index is None and not self._tried_load:
                self._tried_load = True  # a write before the first search: the saved graph, if it is in step
                self._load(generation - 1)
            if self._index is None or self.generation != generation - 1:
                self.generation = None  # missed a change: the next search rebuilds
                return
            self._change(changes)
            self.generation = generation
            self._schedule_save()

    def reset(self, generation: int, dimensions: int | None) -> None:
        """Vectors started over (another embedding): an empty graph of the new dimension."""
        with self._lock:
            self._pending.clear()
            self.dimensions = dimensions or 0
            self._index = _new_index(self.dimensions) if dimensions else None
            self.generation = generation if dimensions else None
            self._schedule_save()

    def _change(self, changes: dict[int, np.ndarray | None]) -> None:
        import numpy as np

        ids = np.fromiter(changes, dtype=np.uint64, count=len(changes))
        if len(ids):
            present = ids[self._index.contains(ids)] if len(self._index) else ids[:0]
            if len(present):
                self._index.remove(present)
        adds = [(k, v) for k, v in changes.items() if v is not None]
        if adds:
            keys = np.array([k for k, _ in adds], dtype=np.uint64)
            vectors = np.stack([np.asarray(v, dtype=np.float32) for _, v in adds])
            self._index.add(keys, vectors, threads=os.cpu_count() or 1)
        # usearch keeps removed slots as tombstones; once they outnumber the live ones, rebuild
        if len(ids) and self._removed() > max(len(self._index), 1000):
            self.generation = None

    def _removed(self) -> int:
        try:
            return int(self._index.stats.nodes) - len(self._index)
        except Exception:  # pragma: no cover - stats not available in this build
            return 0

    # -- loading and rebuilding -----------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self._index is not None and self.generation is not None and self._building is None

    def ensure(self, generation: int) -> None:
        """Make the sidecar usable for `generation`: load the saved one if it is that generation,
        else rebuild (in the background unless the base is small)."""
        with self._lock:
            if self._closed or self._building is not None:
                return
            if self._index is not None and self.generation == generation:
                return
            if self._index is None and not self._tried_load:
                self._tried_load = True
                if self._load(generation):
                    return
            thread = threading.Thread(target=self._rebuild, name=f"vectors:{self.path.parent.name}", daemon=True)
            self._building = thread
            self._pending.clear()
            self.builds += 1
        if self._small():
            self._rebuild()
        else:
            thread.start()

    def _small(self) -> bool:
        try:
            return self.count() <= SYNC_BUILD
        except Exception:
            return False

    def _load(self, generation: int) -> bool:
        try:
            head = json.loads(self.header.read_text())
        except (OSError, ValueError):
            return False
        if (
            head.get("index_id") != self.index_id
            or head.get("generation") != generation
            or head.get("dimensions") != self.dimensions
        ):
            return False
        try:
            index = _usearch().restore(str(self.path))
            if index is None or index.ndim != self.dimensions or len(index) != head.get("count"):
                raise ValueError("not the graph its header describes")
        except Exception as e:  # a damaged file is rebuilt
            log.warning("vector sidecar %s unusable (%s): rebuilding", self.path, e)
            return False
        self._index, self.generation, self._dirty = index, generation, False
        return True

    def _rebuild(self) -> None:
        import numpy as np

        try:
            generation, ids, vectors = self.snapshot()
            index = _new_index(self.dimensions)
            if len(ids):
                index.add(ids.astype(np.uint64), vectors, threads=os.cpu_count() or 1)
            with self._lock:
                if self._closed:
                    self._building = None
                    return
                self._index = index
                for gen, changes in self._pending:  # what was written while the graph was built
                    if gen <= generation:
                        continue
                    if gen != generation + 1:
                        generation = -1  # a change was missed: stays unusable, the next search retries
                        break
                    self._change(changes)
                    generation = gen
                self._pending.clear()
                self.generation = generation if generation >= 0 else None
                self._building = None
                self._schedule_save()
        except Exception:
            if not self._closed:  # else its index was closed meanwhile (the base deleted, or reindexed)
                log.exception("rebuilding the vector sidecar %s failed; searches scan exactly", self.path)
            with self._lock:
                self._building = None
                self._index, self.generation = None, None

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a background rebuild; True when the sidecar is usable (tests, the bench)."""
        thread = self._building
        if thread is not None and thread.is_alive():
            thread.join(timeout)
        return self.ready

    # -- saving -------------------------------------------------------------------------------
    def _schedule_save(self) -> None:
        """After a change (the lock held): save once the graph has gone `_quiet()` seconds unchanged."""
        self._dirty = True
        self._changed = time.monotonic()
        if self._saver is None and not self._closed:
            self._arm(self._quiet())

    def _quiet(self) -> float:
        return max(SAVE_DELAY, SAVE_SPACING * self._save_seconds)

    def _arm(self, seconds: float) -> None:
        self._saver = threading.Timer(seconds, self._timed_save)
        self._saver.daemon = True
        self._saver.start()

    def _timed_save(self) -> None:
        with self._lock:
            unchanged = time.monotonic() - self._changed
            if self._closed:
                self._saver = None
                return
            if unchanged < self._quiet():  # changed since: wait until the changes pause
                self._arm(self._quiet() - unchanged)
                return
        try:
            self.save()
        except Exception:
            log.exception("saving the vector sidecar %s failed (it is rebuilt when needed)", self.path)
        finally:
            # The timer is done only once its save is (a save pending reads as one, never as none and nothing
            # saved); a change the save could not include (a rebuild was under way) arms the next one.
            with self._lock:
                self._saver = None
                if self._dirty and self._building is not None and not self._closed:
                    self._arm(self._quiet())

    def save(self) -> None:
        """Graph first (temp file, fsync, rename), then the header naming its generation: a crash
        in between leaves a header of an older generation, which reads as stale."""
        with self._lock:
            if not self._dirty or self._index is None or self.generation is None or self._building is not None:
                return
            if not self.path.parent.is_dir():
                return  # the base is being deleted
            start = time.monotonic()
            tmp = self.path.with_name(f".{self.path.name}.tmp")
            self._index.save(str(tmp))
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
            fsync_dir(self.path.parent)
            head = {
                "index_id": self.index_id, "generation": self.generation, "dimensions": self.dimensions,
                "count": len(self._index), "library": "usearch", "metric": "cos",
            }
            atomic_write(self.header, json.dumps(head))
            self._dirty = False
            self._save_seconds = time.monotonic() - start

    def close(self, save: bool = True) -> None:
        """Save what is in step (a rebuild under way is dropped: the next open starts it again)."""
        saver = self._saver
        if saver is not None:
            saver.cancel()
            self._saver = None
        if save:
            try:
                self.save()
            except Exception:
                log.exception("saving the vector sidecar %s failed (it is rebuilt when needed)", self.path)
        with self._lock:
            self._closed = True
            self._index, self.generation = None, None


def _usearch() -> type[usearch.index.Index]:
    """usearch's Index class, imported after onnxruntime.

    Importing onnxruntime after usearch kills the process (a segmentation fault, seen with usearch 2.x
    and onnxruntime 1.2x on this CPU: their bundled native libraries clash when usearch's load first);
    the other way round both work. The embedded embedders import onnxruntime on first use, which may come
    after a base's sidecar is loaded, so onnxruntime is loaded here first when it is installed.
    """
    try:
        import onnxruntime  # noqa: F401
    except ImportError:  # pragma: no cover - installed with the default embedder
        pass
    from usearch.index import Index

    return Index


def _new_index(dimensions: int) -> usearch.index.Index:
    Index = _usearch()

    return Index(
        ndim=dimensions, metric="cos", dtype="f32", connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH,
    )
