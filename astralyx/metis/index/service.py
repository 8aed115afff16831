"""`core.index`: keeps every base's index in step with its files.

Files of a base's folder are read by the reader registered for the longest prefix of their
path: `notes/` (notes people write), `saved/` (notes models save), `files/` (uploads); the
memory helper adds `notes/memory/` for facts. Folders named in `spec.sources` are read by
extension. Vectors come from the base's embedding deployment, in batches. Changes to the
base's own files come from the writer (metis/writer.py): `on_change`, subscribed in core.py.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ...eos.runtimes.base import Embedder
from ...errors import AstralyxError, NotFound, Unavailable
from ...locks import Locks
from ...util import sha256
from ..bases import KnowledgeBase, KnowledgeBases
from ..chunking import VERSION as CHUNKING
from ..document_ids import document_id, source_names
from ..jobs import IndexStatus, SyncJob, checkpoint
from ..notes import note_title
from ..parsing import ParsedDocument, decode, parse_file, read_markdown, split_front_matter, supported
from ..sources import Rule, walk
from ..writer import FileChange, holds_facts
from . import copies
from .keywords import USE_FROM as KEYWORDS_FROM
from .passages import Entry, embedding_text
from .protocol import IndexClosed, IndexMoved, IndexStore
from .sqlite_store import SqliteIndexStore

if TYPE_CHECKING:
    import numpy as np

    from ...eos.runtimes import Runtimes

log = logging.getLogger("astralyx.metis")

INDEX_FILE = "index.db"
VECTORS_FILE = "index.vectors.usearch"  # the HNSW sidecar of index.db (vectors.py), and its .json header
KEYWORDS_DIR = "index.keywords.tantivy"  # the keyword sidecar of index.db (keywords.py)
EMBED_BATCH = 64  # chunks per call to the embedder, and per write transaction of a sync (searchable at once)
SYNC_SLICE = 16  # chunks per call to the embedder in a sync, and per write while searches come: a search waits for one
YIELD_MAX = 0.5  # seconds a sync's next step waits for the searches under way to end
RECENT = 2.0  # seconds after a search during which a sync writes a slice at a time
KEEP_PARSED = 20_000  # passages a sync keeps parsed between reading and indexing; files beyond are read again
LARGE_FILE = 1000  # passages from one file above which a sync reports it (Settings.large_file_passages)
CATCH_UP_ROUNDS = 3  # rounds a reindex's new index catches up with the writes made meanwhile, at most

# reader(base, relpath, text) -> ParsedDocument (None: not a document, leave it out)
Reader = Callable[[KnowledgeBase, str, str], "ParsedDocument | None"]
# A file as it was read: (inode, size, mtime). Every write through the writer is a new file (atomic rename); an edit
# by hand moves its mtime. (Not its ctime: an export's hard links change that, and nothing of what is read.)
FileIdentity = tuple[int, int, int]


def identity(file: Path) -> FileIdentity | None:
    """The file as it is now (None: not there)."""
    try:
        st = file.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class _Replaced(IndexClosed):
    """The store was replaced since it was opened (another process's reindex swapped index.db): not written."""

    def __init__(self) -> None:
        super().__init__("The base's index was rebuilt by another process meanwhile: try again")


@dataclass
class Candidate:
    """A file that may be indexed: its key in the index and where to read it."""

    key: str
    file: Path
    origin: str  # files | notes | saved | source | …
    relpath: str | None = None  # for files in the base's folder
    label: str | None = None  # for files of a source folder


@dataclass
class _Planned:
    """A changed file of a sync, between reading it and writing it."""

    candidate: Candidate
    digest: str
    version: int  # of its key when read (a newer one means it was indexed on its own since)
    seen: FileIdentity | None  # its file when read (another now: changed since, maybe by another process)
    passages: int
    entry: Entry | None  # parsed (None: read again when its turn comes)


@dataclass
class SyncReport:
    added: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "added": self.added,
            "changed": self.changed,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "failed": self.failed,
        }


def read_note(base: KnowledgeBase, relpath: str, data: bytes) -> ParsedDocument | None:
    """The reader of notes/ and saved/: a markdown note (front matter, headings) as a document."""
    area, path = relpath.split("/", 1)
    if not path.endswith(".md"):
        return None
    if holds_facts(base, relpath):
        return None  # facts: the memory's own reader indexes them
    text = decode(data)
    meta, body, _ = split_front_matter(text)
    title, chunks = read_markdown(text, PurePosixPath(path).stem)
    title = note_title(meta, body, path) if not meta.get("title") else str(meta["title"])
    attrs = {k: v for k, v in meta.items() if isinstance(v, str | int | float | bool)}
    return ParsedDocument(label=f"{area}:{base.name}/{path}", title=title, chunks=chunks, attrs=attrs, kind=area)


class Index:
    """Built by the core with all it needs: the bases, the runtimes (embedders), the data directory's `Locks`, where
    a base's index lives (`open_store`), the readers of other prefixes (a memory's facts) and the settings' options."""

    def __init__(
        self, bases: KnowledgeBases, runtimes: Runtimes | None = None, *, locks: Locks,
        open_store: Callable[[KnowledgeBase], IndexStore] | None = None, readers: Mapping[str, Reader] | None = None,
        large_file: int = LARGE_FILE, exact: bool = False, yield_to_searches: bool = True,
        keywords_from: int | None = KEYWORDS_FROM,
    ) -> None:
        self.bases = bases
        self.runtimes = runtimes  # core.runtimes: embedders of the bases' embedding deployments
        # A base's folder lock across processes and replicas (the writer's): held while the index writes what it
        # read, so that a file changed since is seen changed (see _writing).
        self.locks = locks
        # The seam for the embedding of a base: (base) -> Embedder | None. By default the base's
        # spec.embedding deployment through core.runtimes.
        self.embedder_for: Callable[[KnowledgeBase], Embedder | None] = self._deployment_embedder
        self._readers: list[tuple[str, Callable[[KnowledgeBase, str, bytes], ParsedDocument | None]]] = []
        self._open: dict[tuple[str, str], IndexStore] = {}
        self._locks: dict[tuple[str, str], threading.RLock] = {}
        self._deferred: dict[tuple[str, str], set[str]] = {}  # files changed while the index was busy
        self._versions: dict[tuple[str, str], dict[str, int]] = {}  # files indexed on their own (see _mark_changed)
        self._closing: set[tuple[str, str]] = set()  # bases whose store is being closed or dropped
        # Bases being reindexed (their new index built aside) → the files indexed on their own meanwhile (into the
        # index that answers), to index into the new one too before it takes its place.
        self._rebuilding: dict[tuple[str, str], set[str]] = {}
        self._held = threading.local()  # the stores this thread uses (`using`)
        self.large_file = large_file
        # Searches first: a sync embeds in slices and, between two, waits while searches run (the
        # embedder would otherwise take both cores from the query's own embedding). Settings.yield_to_searches.
        self.yield_to_searches = yield_to_searches
        self._searching = 0  # searches under way
        self._started = self._ended = 0  # searches started and ended so far
        self._searched = 0.0  # when the last search ended (monotonic)
        self._guard = threading.Lock()
        self._changed = threading.Condition(self._guard)  # a store closed or dropped (_closing)
        # True: searches use index.db alone (FTS5 and the exact vec0 scan), never the sidecars
        # (Settings.exact_search; the benches compare both on one core).
        self.exact = exact
        # Passages from which keywords are ranked by the tantivy sidecar (keywords.py; FTS5's order,
        # SciFact nDCG@10 0.689 against FTS5's 0.688), None: never (FTS5 always). Below, FTS5 answers.
        self.keywords_from = keywords_from
        # Where a base's index lives: index.db in its folder, or (engines.index_opener) PostgreSQL.
        self.open_store: Callable[[KnowledgeBase], IndexStore] = open_store or (
            lambda base: SqliteIndexStore(base.folder / INDEX_FILE))
        self._readers.append(("files/", self._read_upload))
        self._readers.append(("notes/", read_note))
        self._readers.append(("saved/", read_note))
        for prefix, reader in (readers or {}).items():
            self.register_reader(prefix, reader)

    # -- readers ------------------------------------------------------------------------------
    def register_reader(self, prefix: str, reader: Reader) -> None:
        """Read files whose path in the base's folder starts with prefix (the longest prefix wins)."""
        self._readers.append((prefix, lambda base, relpath, data: reader(base, relpath, decode(data))))

    def reader_for(self, relpath: str) -> Callable[[KnowledgeBase, str, bytes], ParsedDocument | None] | None:
        """The reader of a path: (base, relpath, data: bytes) -> document. Longest prefix; the latest of equals."""
        best = None
        for prefix, reader in self._readers:
            if relpath.startswith(prefix) and (best is None or len(prefix) >= len(best[0])):
                best = (prefix, reader)
        return best[1] if best else None

    def _read_upload(self, base: KnowledgeBase, relpath: str, data: bytes) -> ParsedDocument | None:
        path = relpath.split("/", 1)[1]
        if not supported(path):
            return None
        return parse_file(document_id(base.name, path), path, data)

    # -- the store of a base ------------------------------------------------------------------
    # A store is closed (a reindex drops it, the base is deleted, the server stops) only once no one uses it:
    # each of its methods counts as a use (store.Users), and `using` holds one across a search's several
    # reads. Meanwhile a new store of the base waits (`store` blocks until the old one's files are gone), and
    # once a deleted base's folder is gone, its searches answer BASE_NOT_FOUND (its folder is not made again).
    def store(self, base: KnowledgeBase) -> IndexStore:
        key = (base.workspace, base.name)
        stale = None
        with self._changed:
            while key in self._closing:
                self._changed.wait()  # its index is being closed or dropped (a reindex, the base deleted)
            if not base.folder.is_dir():
                raise _deleted(base)
            index = self._open.get(key)
            if index is None or not index.current():
                # (not current: the files it has open went with a base of that name, deleted since, or another
                # process's reindex put a new index.db in its place)
                stale, index = index, self._configured(self._open_store(base))
                self._open[key] = index
        if stale is not None:  # closed once its last reader lets go, not in this caller's time
            threading.Thread(target=stale.close, name=f"close:{base.name}", daemon=True).start()
        return index

    def _configured(self, index: IndexStore) -> IndexStore:
        at_any_size = self.keywords_from is not None and index.keywords_at_any_size
        index.keywords.use_from = 0 if at_any_size else self.keywords_from
        index.keywords.pause = self._yield_to_readers  # its build, in steps, lets searches end first
        return index

    def _open_store(self, base: KnowledgeBase) -> IndexStore:
        try:
            return self.open_store(base)
        except Exception:
            if not base.folder.is_dir():  # its folder went meanwhile (the base deleted)
                raise _deleted(base) from None
            raise

    @contextmanager
    def using(self, base: KnowledgeBase) -> Iterator[IndexStore]:
        """The base's store, not closed before the block ends (a search's reads all see one index: the one
        before a reindex, or the new one). Within it, the same thread gets the same store again."""
        key = (base.workspace, base.name)
        held: dict[tuple[str, str], IndexStore] = self._held.__dict__.setdefault("stores", {})
        if key in held:
            yield held[key]
            return
        for _ in range(10):
            store = self.store(base)
            try:
                store.users.enter()
            except IndexClosed:
                continue  # closed between the two (a reindex): the new one
            break
        else:
            raise IndexClosed(f"The index of {base.name!r} is being rebuilt again and again: try again")
        held[key] = store
        try:
            yield store
        finally:
            del held[key]
            store.users.leave()

    def lock(self, base: KnowledgeBase) -> threading.RLock:
        with self._guard:
            return self._locks.setdefault((base.workspace, base.name), threading.RLock())

    def close(self, base: KnowledgeBase) -> None:
        """Close the base's index (once no one uses it); the next use opens it again."""
        self._let_go(base, remove=False)

    def drop(self, base: KnowledgeBase) -> None:
        """Remove the base's index and its sidecars (the base goes: bases.on_delete), once no one uses them."""
        self._let_go(base, remove=True)

    def _let_go(self, base: KnowledgeBase, remove: bool) -> None:
        """Close the base's store (and with `remove`, its files), its users gone first; no new store is opened
        for the base meanwhile, so none opens the files being removed."""
        key = (base.workspace, base.name)
        with self._changed:
            while key in self._closing:
                self._changed.wait()
            self._closing.add(key)
            index = self._open.pop(key, None)
        try:
            if remove:
                if index is None and base.folder.is_dir():  # not opened since the start: opened to remove what it holds
                    index = self.open_store(base)
                if index is not None:
                    index.drop()
            elif index is not None:
                index.close()
        finally:
            with self._changed:
                self._closing.discard(key)
                self._changed.notify_all()

    def close_all(self) -> None:
        with self._guard:
            opened, self._open = list(self._open.values()), {}
        for index in opened:
            index.close()

    # -- embeddings ---------------------------------------------------------------------------
    def _deployment_embedder(self, base: KnowledgeBase) -> Embedder | None:
        if base.spec.embedding is None:
            return None
        runtimes = self.runtimes
        if runtimes is None:
            raise Unavailable(
                f"The embedding deployment {base.spec.embedding.deployment!r} cannot run here (no runtimes)",
                code="EMBEDDING_UNAVAILABLE",
            )
        return runtimes.embedder(base.workspace, base.spec.embedding.deployment)

    def embedding_identity(self, base: KnowledgeBase, embedder: Embedder | None) -> str | None:
        if embedder is None or base.spec.embedding is None:
            return None
        name = getattr(embedder, "name", type(embedder).__name__)
        return f"{base.spec.embedding.deployment}|{name}|{embedder.dimensions}"

    def _prepare(self, base: KnowledgeBase, store: IndexStore) -> Embedder | None:
        """The base's store made ready for the base's current embedding (a change starts the vectors over)."""
        embedder = self.embedder_for(base)
        identity = self.embedding_identity(base, embedder)
        if store.embedding != identity:
            log.info("index of %s/%s: embedding is now %s, vectors start over", base.workspace, base.name, identity)
            store.set_embedding(identity, embedder.dimensions if embedder else None)
        return embedder

    # -- searches first ------------------------------------------------------------------------
    # A sync's work is cut in steps (a file read, a slice of passages embedded, a slice written), and before each
    # it lets the searches under way end: a search waits at most for the step under way when it came, whatever
    # the embedder's speed. (With a fast embedder the sync's own Python work is most of it: while it runs, a
    # search gets Python's GIL back only every switch interval, 5 ms, after each of its calls into C.)
    @contextmanager
    def reading(self) -> Iterator[None]:
        """Around a search: a sync's next step waits until it ends (up to YIELD_MAX)."""
        with self._guard:
            self._searching += 1
            self._started += 1
        try:
            yield
        finally:
            with self._guard:
                self._searching -= 1
                self._ended += 1
                self._searched = time.monotonic()

    def _yield_to_readers(self) -> None:
        """A sync's step boundary: the searches under way end first (as many as there are: those that come
        meanwhile share the machine with the next step, so that searches one after another never starve it)."""
        if not self.yield_to_searches or not self._searching:
            return
        until = self._started
        deadline = time.monotonic() + YIELD_MAX
        while self._searching and self._ended < until and time.monotonic() < deadline:
            time.sleep(0.001)

    def _searched_lately(self) -> bool:
        return self.yield_to_searches and (self._searching > 0 or time.monotonic() - self._searched < RECENT)

    # -- keeping in step ----------------------------------------------------------------------
    def _mark_changed(self, base: KnowledgeBase, key: str) -> None:
        """A file indexed or dropped on its own (with the base's lock held): a sync that read it
        before then must not write its older copy over this."""
        with self._guard:
            versions = self._versions.setdefault((base.workspace, base.name), {})
            versions[key] = versions.get(key, 0) + 1
            rebuilding = self._rebuilding.get((base.workspace, base.name))
            if rebuilding is not None:  # a reindex builds a new index aside: indexed into it too, before the swap
                rebuilding.add(key)

    def _version(self, base: KnowledgeBase, key: str) -> int:
        with self._guard:
            return self._versions.get((base.workspace, base.name), {}).get(key, 0)

    @contextmanager
    def _writing(self, base: KnowledgeBase, store: IndexStore) -> Iterator[None]:
        """Around a write of what was read (a file, a sync's batch), and a reindex's last catch-up and swap: the base's
        lock in this process and its folder's lock across processes and replicas (the writer's, held while it writes
        a file). Within it a file of the folder is as it will be when the write commits (so one changed since it was
        read is seen changed: its newer copy is indexed instead, by this process or the one that changed it), and no
        other process swaps the base's index (`store`, if another process's reindex replaced it since it was opened,
        is not written: _Replaced)."""
        with self.lock(base), self._folder_lock(base):
            if not store.current():
                raise _Replaced()
            yield

    @contextmanager
    def _folder_lock(self, base: KnowledgeBase) -> Iterator[None]:
        """The base's folder lock across processes, for the index: a base deleted meanwhile (by another process or
        replica) is BASE_NOT_FOUND, its folder never made again for the lock."""
        try:
            with self.locks.folder(base.folder, create=False):
                if not base.folder.is_dir():  # deleted while this waited for the lock
                    raise _deleted(base)
                yield
        except FileNotFoundError as e:
            raise _deleted(base) from e

    def _in_current_store(self, base: KnowledgeBase, write: Callable[[IndexStore], bool]) -> bool:
        """`write` into the base's store; again into the new one if another process's reindex replaced it meanwhile."""
        for _ in range(CATCH_UP_ROUNDS):
            with self.using(base) as store:
                try:
                    return write(store)
                except _Replaced:
                    continue  # the next `using` opens the new index.db
        raise IndexClosed(f"The index of {base.name!r} is being rebuilt again and again: try again")

    def update_file(self, base: KnowledgeBase, relpath: str) -> bool:
        """Index (or drop) one file of the base's folder. True if the index changed."""
        file = base.folder / relpath
        if not file.is_file():
            return self.remove_file(base, relpath)
        with self.lock(base):
            self._mark_changed(base, relpath)
            return self._in_current_store(base, lambda store: self._index_file(base, store, relpath))

    def _index_file(self, base: KnowledgeBase, store: IndexStore, relpath: str) -> bool:
        """Index one file of the base's folder into `store` as it is now (gone: dropped). True if that changed it.
        Changed again before the write (by another process): left to the drain, which reads it again (_writing)."""
        file = base.folder / relpath
        seen = identity(file)
        if seen is None or not file.is_file():
            return self._remove_gone(base, store, relpath)
        embedder = self._prepare(base, store)
        if store.meta("chunking") is None and not store.count()[0]:  # a new index: of today's chunking
            store.set_meta("chunking", CHUNKING)
        candidate = Candidate(key=relpath, file=file, origin=relpath.split("/", 1)[0], relpath=relpath)
        doc = store.document(relpath)
        try:
            data = file.read_bytes()
            digest = sha256(data)
            if doc is not None and doc.hash == digest:
                return False
            entry = self._entry(base, candidate, data, digest)
        except AstralyxError as e:
            raise AstralyxError(e.message, code="INDEX_FAILED") from None
        except Exception as e:
            raise AstralyxError(f"cannot read {relpath}: {e}", code="INDEX_FAILED") from None
        if entry is None:
            with self._writing(base, store):
                return store.remove([relpath]) > 0
        self._embed_entries(store, embedder, [entry], set())
        with self._writing(base, store):
            if identity(file) != seen:  # written again meanwhile: indexed as it is now, by the drain
                self._defer(base, relpath)
                return False
            store.write([entry])
        return True

    def _remove_gone(self, base: KnowledgeBase, store: IndexStore, relpath: str) -> bool:
        """Drop a file that is gone, unless it is back by the time the lock is held (then it is indexed, by the drain)."""
        with self._writing(base, store):
            if (base.folder / relpath).is_file():
                self._defer(base, relpath)
                return False
            return store.remove([relpath]) > 0

    def _defer(self, base: KnowledgeBase, relpath: str) -> None:
        with self._guard:
            self._deferred.setdefault((base.workspace, base.name), set()).add(relpath)

    def remove_file(self, base: KnowledgeBase, relpath: str) -> bool:
        with self.lock(base):
            self._mark_changed(base, relpath)
            return self._in_current_store(base, lambda store: self._remove_gone(base, store, relpath))

    def on_change(self, change: FileChange) -> None:
        """Subscriber of core.writer: a file written or removed is indexed at once (a sync under way holds
        the base's lock only to write a batch) or, while the lock is held, by its holder before letting go:
        the writer never waits for a sync, and what it wrote is searchable when it returns, or a batch later."""
        base = change.base
        key = (base.workspace, base.name)
        self._defer(base, change.path)
        lock = self.lock(base)
        while lock.acquire(blocking=False):
            try:
                self._drain_deferred(base)
            finally:
                lock.release()
            with self._guard:  # one more came between the holder's last look and its letting go
                if not self._deferred.get(key):
                    return

    def _file_changed(self, base: KnowledgeBase, relpath: str) -> None:
        try:
            self.update_file(base, relpath)  # a file that is gone leaves the index
        except Exception:  # the file is safe on disk; the next sync indexes it
            log.exception("indexing %s of %s/%s failed; `astra metis sync` retries", relpath, base.workspace, base.name)

    def _drain_deferred(self, base: KnowledgeBase) -> None:
        """Files that changed while the base's index was busy or being synced."""
        while True:
            with self._guard:
                paths = self._deferred.pop((base.workspace, base.name), set())
            if not paths:
                return
            for relpath in sorted(paths):
                self._file_changed(base, relpath)

    def candidates(self, base: KnowledgeBase) -> list[Candidate]:
        """Every file the index should hold: the base's own folder, then its source folders."""
        found: list[Candidate] = []
        for area in ("files", "notes", "saved"):
            root = base.folder / area
            for file in _walk(root):
                relpath = f"{area}/{file.relative_to(root).as_posix()}"
                if self.reader_for(relpath) is not None:
                    found.append(Candidate(key=relpath, file=file, origin=area, relpath=relpath))
        if base.kind == "documents":
            names = source_names([s.folder for s in base.spec.sources])
            for source, name in zip(base.spec.sources, names, strict=True):
                root = Path(source.folder).expanduser()
                for file in _walk(root, source.rule()):
                    rel = file.relative_to(root).as_posix()
                    if supported(rel):
                        label = document_id(base.name, rel, name)
                        found.append(Candidate(key=f"source:{root}/{rel}", file=file, origin="source", label=label))
        return found

    @staticmethod
    def _stale(store: IndexStore, candidates: list[Candidate], known: dict[str, str]) -> dict[str, str]:
        """The hashes a sync compares files with, but "" (read again, as changed) for the documents made
        by an older chunking (all, once, after an upgrade), or whose id is now another (a second source)."""
        if store.meta("chunking") != CHUNKING:
            return dict.fromkeys(known, "")
        labels = {d.key: d.label for d in store.documents("source")}
        stale = {c.key for c in candidates if c.label and c.key in labels and labels[c.key] != c.label}
        return {key: "" if key in stale else digest for key, digest in known.items()}

    def sync(self, base: KnowledgeBase, progress: SyncJob | None = None) -> SyncReport:
        """Bring the index in step with the files: removed ones dropped, new and changed ones indexed.

        Files are read first (so the job knows how many passages are to come), then embedded and
        written a batch at a time: each batch is one short write transaction, searchable once it
        commits. The base's lock is held only for those writes, never while embedding, so a search,
        an upload or a note written meanwhile waits for one small transaction at most."""
        job = progress or SyncJob(workspace=base.workspace, base=base.name, kind="sync")
        try:
            return self._sync(base, None, job)
        finally:
            self._drain_deferred(base)

    def _sync(self, base: KnowledgeBase, fresh: IndexStore | None, job: SyncJob) -> SyncReport:
        """A sync of the base's index, or of `fresh`: a reindex's new index, built aside."""
        with self.lock(base):
            store = fresh or self.store(base)
            embedder = self._prepare(base, store)
            candidates = self.candidates(base)
            known = self._stale(store, candidates, store.hashes())
            seen = {c.key for c in candidates}
            report = SyncReport()
            with self._writing(base, store):  # a file of the folder written since the walk (by another process) stays
                back = {k for k in known if k not in seen and not k.startswith("source:")
                        and (base.folder / k).is_file() and not (base.folder / k).is_symlink()}
                for key in back:
                    self._defer(base, key)
                report.removed = store.remove([k for k in known if k not in seen and k not in back])
        planned = self._plan(base, store, candidates, known, report, job)
        with store.bulk(sum(item.passages for item in planned)):
            self._write_all(base, store, embedder, planned, known, report, job)
        store.set_meta("chunking", CHUNKING)  # every file read with it (one that failed is tried again anyway)
        job.phase = "finishing"
        store.build_sidecars()  # (in the background) now rather than at the first search
        return report

    def reindex(self, base: KnowledgeBase, progress: SyncJob | None = None) -> SyncReport:
        """Build the base's index again from its files, aside: searches answer from the index as it was until the
        new one is whole (its sidecars too), which then takes its place at once (`_swap`). A file indexed on its
        own meanwhile (a note saved) goes into the index that answers, and into the new one before the swap."""
        job = progress or SyncJob(workspace=base.workspace, base=base.name, kind="reindex")
        key = (base.workspace, base.name)
        with self.lock(base):
            fresh = self._configured(self.store(base).aside())
            with self._guard:
                self._rebuilding[key] = set()
        placed = False
        try:
            report = self._sync(base, fresh, job)
            fresh.wait_sidecars()  # a large base's are built in the background: whole before they answer
            checkpoint()  # stopped meanwhile (the base deleted, the server stopping): the old index stays
            # What was written meanwhile, caught up (embedded) while writers go on; then the last catch-up (nothing,
            # or the few files written since), the seal and the swap under the folder's lock across processes too
            # (_writing): no other process writes a file of the base or the old index between the last round and
            # the swap (nor, on SQLite, into the old index.db's -wal once it is removed: its writes wait, then find
            # it replaced). Writers wait for that short end only, never for the embedding of what they wrote.
            with self.lock(base):
                self._drain_deferred(base)
                self._catch_up(base, fresh)
            with self.lock(base), self._folder_lock(base):
                for attempt in range(CATCH_UP_ROUNDS):
                    self._drain_deferred(base)  # into the index that answers, and noted for the new one
                    settled = self._catch_up(base, fresh)
                    fresh.seal()
                    try:
                        self._swap(base, fresh, settled)
                    except IndexMoved:  # another replica wrote to the old index since (PostgreSQL): again
                        if attempt == CATCH_UP_ROUNDS - 1:
                            raise
                        continue
                    placed = True
                    break
            return report
        finally:
            with self._guard:
                self._rebuilding.pop(key, None)
            if not placed:
                fresh.discard()
            self._drain_deferred(base)

    def _catch_up(self, base: KnowledgeBase, fresh: IndexStore) -> int:
        """Into a reindex's new index, before it takes the old one's place (the base's lock held): the files of the
        base's folder indexed on their own since it began (noted by `_mark_changed`) and those the two indexes hold
        differently (written meanwhile by another process or replica), each as it is now. Until a round finds
        nothing to change (a few at most: another process may write meanwhile). Answers the old index's keyword
        generation that round began at (`settled`: the swap checks that no write came after it)."""
        key = (base.workspace, base.name)
        old = self.store(base)
        settled = old.keywords_generation
        for _ in range(CATCH_UP_ROUNDS):
            settled = old.keywords_generation
            with self._guard:
                noted, self._rebuilding[key] = self._rebuilding.get(key, set()), set()
            theirs, mine = old.hashes(), fresh.hashes()
            differ = {k for k in theirs.keys() | mine.keys() if theirs.get(k) != mine.get(k) and not k.startswith("source:")}
            changed = False
            for relpath in sorted(noted | differ):
                try:
                    changed = self._index_file(base, fresh, relpath) or changed
                except Exception:  # the file is safe on disk; the next sync indexes it
                    log.exception("indexing %s of %s/%s into its new index failed", relpath, base.workspace, base.name)
            if not changed:
                break
        return settled

    def _swap(self, base: KnowledgeBase, fresh: IndexStore, settled: int | None = None) -> None:
        """A reindex's new index (sealed) in the place of the base's: once the searches using the old one end
        (those that come meanwhile wait for the swap, as for `_let_go`)."""
        key = (base.workspace, base.name)
        with self._changed:
            while key in self._closing:
                self._changed.wait()
            self._closing.add(key)
            old = self._open.pop(key, None)
        try:
            if not base.folder.is_dir():
                raise _deleted(base)
            placed = self._configured(fresh.swap(old, settled))
            with self._guard:
                self._open[key] = placed
        finally:
            with self._changed:
                self._closing.discard(key)
                self._changed.notify_all()

    def _plan(
        self, base: KnowledgeBase, store: IndexStore, candidates: list[Candidate], known: dict[str, str],
        report: SyncReport, job: SyncJob,
    ) -> list[_Planned]:
        """Phase 1: every file read and hashed; the changed ones parsed (kept in memory up to KEEP_PARSED
        passages, read again later beyond), so the job knows the passages to come."""
        total = len(candidates)
        planned: list[_Planned] = []
        kept = passages = 0
        job.reading(0, total, "")
        for done, c in enumerate(candidates, start=1):
            self._yield_to_readers()
            document = c.label or c.key
            job.reading(done, total, document)  # each file: a stop (a delete, the server stopping) ends the sync here
            version = self._version(base, c.key)  # before reading: a change after it shows as a newer one
            seen = identity(c.file) if c.relpath is not None else None  # so does another process's
            try:
                data = c.file.read_bytes()
                digest = sha256(data)
                if known.get(c.key) == digest:
                    report.unchanged += 1
                    job.file_done()
                    continue
                entry = self._entry(base, c, data, digest)
            except AstralyxError as e:
                self._failed(report, job, document, e.message)
                continue
            except OSError as e:
                self._failed(report, job, document, f"cannot read: {e}")
                continue
            except Exception as e:  # a broken file must not stop the others
                log.exception("reading %s failed", c.file)
                self._failed(report, job, document, f"cannot read: {e}")
                continue
            if entry is None:  # not a document (any more)
                if c.key in known:
                    with self.lock(base):
                        report.removed += store.remove([c.key])
                job.file_done()
                continue
            n = len(entry.chunks)
            if n > self.large_file:
                job.large_file(document, n, self.large_file)
            passages += n
            if kept + n > KEEP_PARSED:
                planned.append(_Planned(c, digest, version, seen, n, None))
            else:
                kept += n
                planned.append(_Planned(c, digest, version, seen, n, entry))
        job.planned(total, passages)
        return planned

    def _write_all(
        self, base: KnowledgeBase, store: IndexStore, embedder: Embedder | None, planned: list[_Planned],
        known: dict[str, str], report: SyncReport, job: SyncJob,
    ) -> None:
        """Phase 2: embed a batch of about EMBED_BATCH passages (no lock held), write it in one short
        transaction, let the notes written meanwhile in, go on."""
        batch: list[_Planned] = []
        size = 0
        embedded: set[str] = set()  # passages embedded in this sync (a copy of one is not embedded again)
        for item in planned:
            entry = item.entry or self._reread(base, item, report, job)
            if entry is None:
                continue
            item.entry = entry
            if embedder is not None and len(entry.chunks) > EMBED_BATCH:
                self._flush(base, store, embedder, batch, known, report, job, embedded)  # what came before it, first
                batch, size = [], 0
                # a long file: progress by slices
                self._embed_entries(store, embedder, [entry], embedded, job, yielding=True)
                self._flush(base, store, embedder, [item], known, report, job, embedded, embed=False)
                continue
            batch.append(item)
            size += len(entry.chunks)
            if size >= EMBED_BATCH:
                self._flush(base, store, embedder, batch, known, report, job, embedded)
                batch, size = [], 0
        self._flush(base, store, embedder, batch, known, report, job, embedded)

    def _flush(
        self, base: KnowledgeBase, store: IndexStore, embedder: Embedder | None, batch: list[_Planned],
        known: dict[str, str], report: SyncReport, job: SyncJob, embedded: set[str], embed: bool = True,
    ) -> None:
        if not batch:
            return
        entries = [item.entry for item in batch if item.entry is not None]
        if embedder is not None and embed:
            self._embed_entries(store, embedder, entries, embedded, yielding=True)
        fresh = []
        for part in _slices(batch, SYNC_SLICE if self._searched_lately() else None):
            self._yield_to_readers()
            fresh += self._write_part(base, store, embedder, part)
        for item in fresh:
            if known.get(item.candidate.key) is None:
                report.added += 1
            else:
                report.changed += 1
        passages = 0 if not embed else sum(item.passages for item in batch)
        job.indexed(passages, entries[-1].label if entries else "", files=len(batch))
        for item in batch:
            item.entry = None  # written: its text and vectors need not stay in memory
        self._drain_deferred(base)  # notes written during the sync, searchable now
        time.sleep(0)  # let a waiting reader or writer thread run before the next batch

    def _write_part(
        self, base: KnowledgeBase, store: IndexStore, embedder: Embedder | None, part: list[_Planned]
    ) -> list[_Planned]:
        """Write these files of a batch in one transaction; the ones written (not those indexed on their own since)."""
        while True:
            with self._writing(base, store):
                # A file indexed or dropped on its own since it was read (a note, an upload): that is newer. So is a
                # file of the base's folder changed since (by another process too, or by hand): indexed as it is now,
                # by the drain after this batch (it holds the same lock: no older copy is written over a newer one).
                fresh = []
                for item in part:
                    if self._version(base, item.candidate.key) != item.version:
                        continue
                    relpath = item.candidate.relpath
                    if relpath is not None and identity(item.candidate.file) != item.seen:
                        self._defer(base, relpath)
                        continue
                    fresh.append(item)
                written = [item.entry for item in fresh if item.entry is not None]
                # Passages left unembedded to share a vector held already, whose holder went meanwhile: embedded after all.
                missing = copies.missing_vectors(store, written) if embedder is not None else []
                if not missing:
                    store.write(written)
                    return fresh
            _fill(embedder, written, missing)

    def _reread(self, base: KnowledgeBase, item: _Planned, report: SyncReport, job: SyncJob) -> Entry | None:
        """A file planned beyond KEEP_PARSED, read again (it may have changed: then as it is now)."""
        c = item.candidate
        item.version = self._version(base, c.key)
        item.seen = identity(c.file) if c.relpath is not None else None
        try:
            data = c.file.read_bytes()
            item.digest = sha256(data)
            entry = self._entry(base, c, data, item.digest)
        except Exception as e:
            job.replanned(-item.passages)
            self._failed(report, job, c.label or c.key, e.message if isinstance(e, AstralyxError) else f"cannot read: {e}")
            return None
        if entry is None:
            job.replanned(-item.passages)
            job.file_done()
        elif len(entry.chunks) != item.passages:
            job.replanned(len(entry.chunks) - item.passages)
            item.passages = len(entry.chunks)
        return entry

    @staticmethod
    def _failed(report: SyncReport, job: SyncJob, document: str, error: str) -> None:
        report.failed.append({"document": document, "error": error})
        job.failed(document, error)
        job.file_done()

    def _entry(self, base: KnowledgeBase, c: Candidate, data: bytes, digest: str) -> Entry | None:
        parsed = self._parse(base, c, data)
        if parsed is None:
            return None
        return Entry(
            key=c.key, origin=c.origin, kind=parsed.kind, label=parsed.label, title=parsed.title, hash=digest,
            chunks=parsed.chunks, attrs=parsed.attrs, size=len(data),
        )

    def _embed_entries(
        self, store: IndexStore, embedder: Embedder | None, entries: list[Entry], embedded: set[str],
        job: SyncJob | None = None, yielding: bool = False,
    ) -> None:
        """Vectors for the chunks of the entries, EMBED_BATCH texts per call to the embedder (for a sync,
        `yielding`: SYNC_SLICE texts per call, each after the searches under way). A passage the base holds
        already with its vector, or one of `embedded` (this sync's, which this adds to), is not embedded
        again (copies.to_embed): its row is NaN, and it is written as a copy of the first."""
        if embedder is None:
            return
        import numpy as np

        need = copies.to_embed(store, entries, embedded)
        texts = [embedding_text(e.title, c) for e, flags in zip(entries, need, strict=True)
                 for c, flag in zip(e.chunks, flags, strict=True) if flag]
        step = SYNC_SLICE if yielding and self.yield_to_searches else EMBED_BATCH
        parts = []
        for i in range(0, len(texts), step):
            if yielding:
                self._yield_to_readers()
            parts.append(_embed(embedder, texts[i : i + step]))
            if job is not None:
                job.indexed(len(parts[-1]), entries[-1].label)
        vectors = np.vstack(parts) if parts else np.zeros((0, embedder.dimensions), dtype=np.float32)
        at = 0
        for e, flags in zip(entries, need, strict=True):
            rows = np.full((len(e.chunks), embedder.dimensions), np.nan, dtype=np.float32)
            for i, flag in enumerate(flags):
                if flag:
                    rows[i] = vectors[at]
                    at += 1
            e.vectors = rows

    def _parse(self, base: KnowledgeBase, c: Candidate, data: bytes) -> ParsedDocument | None:
        if c.relpath is not None:
            reader = self.reader_for(c.relpath)
            return reader(base, c.relpath, data) if reader else None
        return parse_file(c.label or c.key, c.file.name, data)

    # -- what is indexed ----------------------------------------------------------------------
    def documents(self, base: KnowledgeBase) -> list[dict[str, Any]]:
        with self.using(base) as store:
            stored = store.documents()
        return [
            {
                "document": d.label,
                "title": d.title,
                "kind": d.kind,
                "origin": d.origin,
                "chunks": d.chunks,
                "size": d.size,
                "indexed_at": d.indexed_at,
            }
            for d in stored
        ]

    def status(self, base: KnowledgeBase) -> IndexStatus:
        with self.using(base) as store:
            docs, chunks = store.count()
            return IndexStatus.model_construct(documents=docs, chunks=chunks, embedding=store.embedding,
                                               dimensions=store.dimensions)


def _deleted(base: KnowledgeBase) -> NotFound:
    return NotFound(f"Knowledge base {base.name!r} was deleted: `astra metis bases` lists those there are",
                    code="BASE_NOT_FOUND")


def _embed(embedder: Embedder, texts: list[str]) -> np.ndarray:
    import numpy as np

    if not texts:
        return np.zeros((0, embedder.dimensions), dtype=np.float32)
    return np.asarray(embedder.embed_passages(texts), dtype=np.float32)


def _fill(embedder: Embedder | None, entries: list[Entry], where: list[tuple[int, int]]) -> None:
    """Embed the chunks at (entry, chunk) positions into their entries' rows (left NaN by to_embed)."""
    if embedder is None:
        return
    vectors = _embed(embedder, [embedding_text(entries[i].title, entries[i].chunks[j]) for i, j in where])
    for (i, j), vector in zip(where, vectors, strict=True):
        vectors_of = entries[i].vectors
        if vectors_of is not None:
            vectors_of[j] = vector


def _slices(batch: list[_Planned], passages: int | None) -> list[list[_Planned]]:
    """The batch's files in runs of about `passages` passages (whole files), or all in one (None)."""
    if passages is None:
        return [batch]
    out: list[list[_Planned]] = [[]]
    size = 0
    for item in batch:
        if out[-1] and size + item.passages > passages:
            out.append([])
            size = 0
        out[-1].append(item)
        size += item.passages
    return out


def _walk(root: Path, rule: Rule | None = None) -> list[Path]:
    """Files under root, sorted; hidden names and links skipped; for a source folder, what its rule keeps."""
    return walk(root, rule)
