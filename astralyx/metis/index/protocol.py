"""What a base's index store promises, whichever engine keeps it: `IndexStore`, the one type the index
service, search and the documents code hold. Two stores implement it: `SqliteIndexStore` (sqlite_store.py: index.db in
the base's folder, FTS5 and sqlite-vec, HNSW and keyword sidecars beside it) and `PgIndexStore`
(pg_store.py: a schema per base, GIN tsvector and pgvector, a keyword sidecar per replica); each is
checked against it by mypy where it is defined. With it, the shared part of every store: who uses it now
(`Users`, `used`) and the errors a store raises whatever its engine.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec, Protocol, TypeVar, cast

from ...errors import NotFound, Unavailable
from .keywords import KeywordSidecar
from .passages import Entry, Row, StoredDocument

if TYPE_CHECKING:
    import numpy as np

    from ...engines import Database
    from ...migrations import Step

CLOSE_WAIT = 60.0  # seconds a store's closing waits for its users (a search, a batch of a sync) to end


class IndexClosed(Unavailable):
    """A store used after it was closed: its base was deleted, or its index dropped to be rebuilt."""

    status, code = 503, "INDEX_CLOSED"


class IndexMoved(Exception):
    """A reindex's swap found the old index written since its new one caught up (another replica's write): the swap
    did not happen, the new index catches up again first."""


class Users:
    """Who uses a base's store now. Closing it (a reindex, the base deleted, the server stopping) waits until
    no one does, then refuses every new use: a connection is never closed under a statement (SQLite's
    extension crashed the process), nor used once closed, nor a file removed under a reader."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._count = 0
        self.closed = False

    def enter(self) -> None:
        with self._cond:
            if self.closed:
                raise IndexClosed("The base's index was closed meanwhile (the base deleted, or its index rebuilt): "
                                  "try again")
            self._count += 1

    def leave(self) -> None:
        with self._cond:
            self._count -= 1
            if not self._count:
                self._cond.notify_all()

    @contextmanager
    def use(self) -> Iterator[None]:
        self.enter()
        try:
            yield
        finally:
            self.leave()

    def close(self, timeout: float = CLOSE_WAIT) -> bool:
        """Refuse new uses once the current ones end; False if they did not end within `timeout` (the
        store's resources are then left to the garbage collector rather than closed under a user)."""
        with self._cond:
            ended = self._cond.wait_for(lambda: not self._count, timeout)
            self.closed = True
            return ended


class _Used(Protocol):
    users: Users
    path: Path  # index.db, in the base's folder


_S = TypeVar("_S", bound=_Used)
_P = ParamSpec("_P")
_R = TypeVar("_R")


def used(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """A store's method that reads or writes it: counted among its users (IndexClosed once it is closed)."""

    def wrapper(self: _S, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self.users.use():
            try:
                return method(self, *args, **kwargs)
            except Exception:
                # The base deleted meanwhile: its folder went while a search ran (a thread of it opening its
                # connection after the folder moved to the trash finds no file), which is not a server error.
                if not self.path.parent.is_dir():
                    raise NotFound("The knowledge base was deleted meanwhile: `astra metis bases` lists those there are",
                                   code="BASE_NOT_FOUND") from None
                raise

    return cast("Callable[Concatenate[_S, _P], _R]", functools.wraps(method)(wrapper))


class IndexStore(Protocol):
    """One base's index: documents and their passages, searched by keywords and by vectors. Derived from the
    base's files, so it can be dropped and rebuilt at any time. Every method that reads or writes is a use
    (`users`): once the store is closed, IndexClosed. Left off on purpose, as only one engine has them:
    SQLite's HNSW sidecar in files (`vectors_sidecar`, `generation`, `sidecar_paths`; PostgreSQL's vector
    index is pgvector's, in the database) and PostgreSQL's search indexes built after a load (`repair`,
    `missing_indexes`; SQLite keeps its own in step as it writes)."""

    users: Users  # who uses it now: closing waits for them, then refuses new uses
    path: Path  # index.db in the base's folder (PostgreSQL: not a file; its folder is the base's)
    keywords: KeywordSidecar  # the tantivy keyword sidecar, in step with the index by `keywords_generation`

    @property
    def keywords_at_any_size(self) -> bool:
        """Whether the keyword sidecar answers a base of any size (else only past `Index.keywords_from` passages)."""
        ...

    @property
    def steps(self) -> Sequence[Step]:
        """Its schema's migration steps (`astra db migrate` reports them)."""
        ...

    @property
    def version_table(self) -> str:
        """The table its schema's version is kept in."""
        ...

    @property
    def db(self) -> Database:
        """The database it is kept in (its version read by `astra db migrate`)."""
        ...

    # -- its life ---------------------------------------------------------------------------------
    def close(self) -> None:
        """Once no one uses it, its resources let go; every later use raises IndexClosed."""
        ...

    def current(self) -> bool:
        """Whether it still reaches the base's index (not a file removed or replaced since it was opened)."""
        ...

    def drop(self) -> None:
        """Closed, then removed with everything derived from it (the base is deleted)."""
        ...

    def aside(self) -> IndexStore:
        """A new, empty index of this base built beside this one, which answers meanwhile; it holds the base's
        reindex lock until `swap` or `discard` (Conflict SYNC_RUNNING if another reindex holds it)."""
        ...

    def seal(self) -> None:
        """An index built aside, complete: made ready for `swap` to put it in place at once."""
        ...

    def swap(self, old: IndexStore | None, settled: int | None = None) -> IndexStore:
        """This index, built aside and sealed, in the base's index's place (`old` closed first); IndexMoved and
        nothing swapped if the old index's keyword generation is not `settled` any more. Answers the store
        open on it."""
        ...

    def discard(self) -> None:
        """An index built aside that is not to be used: closed, removed, the reindex lock let go."""
        ...

    def bulk(self, adding: int) -> AbstractContextManager[None]:
        """Around a sync's writes of `adding` passages: whatever the engine prepares for a large load."""
        ...

    # -- sidecars ---------------------------------------------------------------------------------
    @property
    def keywords_generation(self) -> int:
        """How many committed changes of keywords this index has seen (the keyword sidecar's step)."""
        ...

    def build_sidecars(self) -> None:
        """Its sidecars brought in step now (a large base's in the background), not at the first search."""
        ...

    def wait_sidecars(self) -> None:
        """Until the sidecar builds under way end (a reindex's new index takes its place only whole)."""
        ...

    # -- meta and embedding -----------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        """A value of its meta (the chunking it was read with, its embedding, its id …), None if unset."""
        ...

    def set_meta(self, key: str, value: str | None) -> None:
        """A meta value set (None: removed)."""
        ...

    @property
    def dimensions(self) -> int | None:
        """Its vectors' dimension, None without vectors."""
        ...

    @property
    def embedding(self) -> str | None:
        """Which embedding made its vectors (deployment, model, dimensions), None without."""
        ...

    def set_embedding(self, identity: str | None, dimensions: int | None) -> None:
        """Start over with another embedding: its vectors gone, every document to be embedded again."""
        ...

    # -- documents --------------------------------------------------------------------------------
    def document(self, key: str) -> StoredDocument | None:
        """The document of this key, None if it holds none."""
        ...

    def documents(self, origin: str | None = None) -> list[StoredDocument]:
        """Its documents (of one origin), by label."""
        ...

    def hashes(self) -> dict[str, str]:
        """Each document's key → the hash of the file it was read from (empty: read it again at the next sync)."""
        ...

    def count(self) -> tuple[int, int]:
        """(documents, passages) it holds, copies of a passage counted."""
        ...

    def write(self, entries: Iterable[Entry]) -> None:
        """These documents' passages in place of what it held for their keys, all in one transaction. A text it holds
        already (the same fingerprint) is written as a copy of its holder, the passage searched for it: not searched
        itself, counted in the holder's `also_in`, its vector given to a holder that has none (copies.place)."""
        ...

    def texts_with_vectors(self, texts: set[str], outside: set[str]) -> set[str]:
        """Of these texts (fingerprints), those it holds with a vector in a document whose key is not in `outside`
        (the documents about to be replaced): what copies.to_embed and copies.missing_vectors ask."""
        ...

    def remove(self, keys: Iterable[str]) -> int:
        """These documents removed, each text they held that others hold too taken over by its successor, the
        oldest copy in another document, with the holder's vector (copies.successors); how many it held."""
        ...

    # -- search -----------------------------------------------------------------------------------
    def keyword_ids(self, query: str, limit: int, exact: bool = False) -> list[int]:
        """Passage ids by BM25 (FTS5's order on either engine), best first; `exact`: never from a sidecar."""
        ...

    def vector_ids(self, vector: np.ndarray, limit: int, exact: bool = False) -> list[int]:
        """Passage ids by cosine distance, nearest first ([] without vectors); `exact`: a scan of every vector."""
        ...

    def kinds(self, chunk_ids: list[int]) -> dict[int, str]:
        """The document kind of each passage that still exists (what re-ranking goes by)."""
        ...

    def rows(self, chunk_ids: list[int]) -> dict[int, Row]:
        """Each passage that still exists with its document, as a search hit is made of."""
        ...
