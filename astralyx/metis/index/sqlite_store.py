"""One base's index on SQLite (`SqliteIndexStore`, the default engine's `IndexStore`, protocol.py): a file in the
base's folder with FTS5 (keywords) and sqlite-vec (vectors).

Derived from the files, so it can be dropped and rebuilt at any time. Chunks live in a plain
table; `chunks_fts` (contentless, BM25) and `chunks_vec` (vec0, cosine) share their rowids.
The vector table is created when the first vectors arrive, with their dimension; the
embedding that made them is kept in `meta` so a change of model is noticed.

Searches by vector go to an HNSW sidecar (`index.vectors.usearch`, vectors.py) derived from
`chunks_vec`; every change of vectors here moves `meta.vectors_generation` on and is handed to
the sidecar after its commit. When the sidecar is not in step, the exact vec0 scan answers.

A reindex builds a new index aside (`aside`: index.building.db and its sidecars, in the base's folder)
while searches go on answering from this one, then `swap` puts it in place with one rename of index.db.
What a reindex killed mid-way left is removed when the base's index is next opened (`_sweep`).
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import threading
import uuid
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

if TYPE_CHECKING:  # numpy is imported where vectors are read or written (listing bases does not load it)
    import numpy as np

from ...engines.sqlite import Database, connect, sqlite3
from ...errors import Conflict
from ...migrations import migrate
from ...migrations.index import STEPS
from ...util import fsync_dir, iso
from . import copies
from .keywords import KeywordSidecar, Text
from .passages import Entry, Row, StoredDocument, fingerprint, passage_row, query_words, stored_document
from .protocol import CLOSE_WAIT, IndexStore, Users, used
from .vectors import VectorSidecar

log = logging.getLogger("astralyx.metis")

ASIDE = ".building"  # a reindex's new index, beside index.db until it is complete: index.building.db, its sidecars
REINDEX_LOCK = ".reindex.lock"  # in the base's folder: held while a reindex builds aside (fcntl; a dead process's is free)


def fts_query(text: str) -> str:
    """Any of the query's words (BM25 ranks by how many and how rare); quoted so nothing is syntax."""
    return " OR ".join(f'"{w}"' for w in query_words(text))


class SqliteIndexStore:
    steps = STEPS  # its schema's migration steps, kept in `version_table` (`astra db migrate` reports them)
    version_table = "schema_version"
    # The keyword sidecar at any size (True), or only past `Index.keywords_from` passages: up to there FTS5's
    # bm25() answers in a few milliseconds, in the same order.
    keywords_at_any_size = False

    def __init__(self, path: Path, *, sweep: bool = True) -> None:
        self.path = path
        self.users = Users()
        if sweep:
            _sweep(path)
        self._held: IO[str] | None = None  # the reindex lock, held by an index built aside (`aside`)
        self.db = Database(path, extensions=True)  # in the base's folder (never made here: a deleted base's stays gone)
        migrate(self.db, STEPS)
        with self.db.transaction() as conn:  # who this index.db is: a copy of another one is told apart
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('index_id', ?)", (uuid.uuid4().hex,))
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('vectors_generation', '0')")
            conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('keywords_generation', '0')")
        self._file = _file_id(path)
        self._handed: set[tuple[str, int]] = set()  # (sidecar, generation) written, not yet handed to it (_changed)
        self._handing = threading.Lock()
        self._vectors: VectorSidecar | None = None
        self._vectors_guard = threading.Lock()
        self.keywords = KeywordSidecar(
            self.path.with_name(f"{self.path.stem}.keywords.tantivy"), self.meta("index_id") or "",
            self._keyword_snapshot, self._answered_count,
        )

    def close(self) -> None:
        """Once no one uses it (see Users): the sidecars saved and closed, the connections closed."""
        ended = self.users.close()
        if self._vectors is not None:
            self._vectors.close()
        self.keywords.close()
        if ended:
            self.db.close()
        else:
            log.warning("the index %s was still in use after %.0f s: its connections are left open", self.path, CLOSE_WAIT)

    def current(self) -> bool:
        """Is index.db still the file this opened (not removed, nor another in its place: the base deleted and
        one of the same name made since)?"""
        return _file_id(self.path) == self._file

    def drop(self) -> None:
        """Remove index.db and the sidecars derived from it (closed first)."""
        self.close()
        _remove(_files(self.path))

    # -- a reindex: a new index built aside, then swapped in -----------------------------------
    def aside(self) -> SqliteIndexStore:
        """A new, empty index of this base, built beside this one (index.building.db and its sidecars) while
        this one answers; `swap` puts it in this one's place once complete, `discard` removes it. It holds the
        base's reindex lock until then: what a process killed meanwhile left is nobody's, removed at next open."""
        held = _lock(self.path.parent)
        if held is None:
            raise Conflict("The base's index is being rebuilt by another process: wait for that reindex to finish",
                           code="SYNC_RUNNING")
        try:
            _remove(_files(_aside_path(self.path)))  # a reindex killed mid-way left them
            fresh = SqliteIndexStore(_aside_path(self.path), sweep=False)
        except BaseException:
            held.close()
            raise
        fresh._held = held
        return fresh

    def seal(self) -> None:
        """An index built aside, complete: closed (its sidecars saved), its writes moved from its WAL into
        index.building.db, so that one rename puts all of it in place."""
        self.close()
        conn = connect(self.path, extensions=True)
        try:
            conn.execute("PRAGMA journal_mode=DELETE")  # checkpoints the WAL and removes it (and the -shm)
        finally:
            conn.close()

    def swap(self, old: IndexStore | None, settled: int | None = None) -> SqliteIndexStore:
        """Put this index, built aside and sealed, in the base's index's place: `old` (the store open on it, if
        any) closed once no one uses it, index.db replaced in one rename (a crash before it leaves the old index,
        after it the new one: sidecars that do not match their index.db are rebuilt), then its sidecars moved
        in. Answers the store open on the new index.db. (`settled`, the old index's keyword generation the new
        one caught up with, is PostgreSQL's check against other replicas' writes: one process writes index.db.)"""
        target = _main_path(self.path)
        if old is not None:
            old.close()
        for suffix in ("-wal", "-shm", "-journal"):  # the old index's: never to be read with the new file
            target.with_name(target.name + suffix).unlink(missing_ok=True)
        os.replace(self.path, target)
        fsync_dir(target.parent)
        mine, theirs = _files(self.path), _files(target)
        for built, place in zip(mine[4:7], theirs[4:7], strict=True):  # the sidecars
            _remove([place])
            if built.exists():
                os.replace(built, place)
        _remove(mine[7:])
        fsync_dir(target.parent)
        self._let_go_lock()
        return SqliteIndexStore(target)

    def discard(self) -> None:
        """An index built aside that is not to be used (its reindex failed or was stopped): closed, removed."""
        try:
            self.users.close()
            if self._vectors is not None:
                self._vectors.close(save=False)
            self.keywords.close()
            self.db.close()
            _remove(_files(self.path))
        finally:
            self._let_go_lock()

    def _let_go_lock(self) -> None:
        if self._held is not None:
            self._held.close()  # closing the file lets the lock go
            self._held = None

    # -- the keyword sidecar ------------------------------------------------------------------
    @property
    def keywords_generation(self) -> int:
        return int(self.meta("keywords_generation") or 0)

    @used
    def _keyword_snapshot(self, after: int = -1, limit: int | None = None) -> tuple[int, list[tuple[int, Text]]]:
        """(keywords.Snapshot) The chunks of ids above `after`, by id, at most `limit`, and their generation."""
        conn = self.db.conn
        conn.execute("BEGIN")
        try:
            generation = int(conn.execute("SELECT value FROM meta WHERE key='keywords_generation'").fetchone()[0])
            rows = conn.execute(
                "SELECT c.id, d.title, c.headings, c.text FROM chunks c JOIN documents d ON d.id = c.doc_id "
                "WHERE c.copy_of IS NULL AND c.id > ? ORDER BY c.id LIMIT ?", (after, -1 if limit is None else limit),
            ).fetchall()
        finally:
            conn.execute("COMMIT")
        return generation, [(r[0], (r[1], " ".join(json.loads(r[2])), r[3])) for r in rows]

    @staticmethod
    def _bump(conn: sqlite3.Connection, key: str) -> int:
        """The next generation of a sidecar (`vectors_generation`, `keywords_generation`), in the write's transaction."""
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key=?", (key,))
        return int(conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()[0])

    def _changed(self, conn: sqlite3.Connection, changes: dict[int, np.ndarray | None],
                 texts: dict[int, Text | None]) -> Callable[[], None]:
        """Within a write's transaction, the sidecars' next generations; returns what hands the change to
        them, to call once the transaction has committed."""
        generation = self._bump(conn, "vectors_generation") if changes else 0
        words_generation = self._bump(conn, "keywords_generation") if texts else 0
        marks = [m for m in (("vectors", generation), ("keywords", words_generation)) if m[1]]
        with self._handing:
            self._handed.update(marks)

        def publish() -> None:
            try:
                if changes:
                    self._vectors_changed(generation, changes)
                if texts:
                    self.keywords.apply(words_generation, texts)
            finally:
                with self._handing:
                    self._handed.difference_update(marks)

        return publish

    def _oldest(self, sidecar: str, generation: int) -> int:
        """The oldest generation a sidecar may answer a search for: the one before the writes whose change
        is being handed to it (committed, or committing), else `generation`. A search that comes in between
        is answered as of just before them, instead of taking the sidecar for stale (a rebuild)."""
        with self._handing:
            handed = [g for name, g in self._handed if name == sidecar]
        return min(generation, min(handed) - 1) if handed else generation

    def build_sidecars(self) -> None:
        """The HNSW and keyword sidecars brought in step now (a large base's in the background)."""
        sidecar = self.vectors_sidecar()
        if sidecar is not None:
            sidecar.ensure(self.generation)
        self.keywords.ensure(self.keywords_generation)

    def wait_sidecars(self) -> None:
        """Until the sidecars' builds under way end."""
        sidecar = self.vectors_sidecar()
        if sidecar is not None:
            sidecar.wait()
        self.keywords.wait()

    # -- the vector sidecar -------------------------------------------------------------------
    @property
    def sidecar_paths(self) -> tuple[Path, Path]:
        """The derived files beside index.db: the HNSW graph and its header."""
        graph = self.path.with_name(f"{self.path.stem}.vectors.usearch")
        return graph, graph.with_suffix(".json")

    @property
    def generation(self) -> int:
        """How many committed changes the vectors of this index.db have seen."""
        return int(self.meta("vectors_generation") or 0)

    def bulk(self, adding: int) -> AbstractContextManager[None]:
        """Around a sync's writes of `adding` passages: nothing to prepare here (the HNSW sidecar is
        kept in step in memory; PostgreSQL's store builds its index after a large load)."""
        return nullcontext()

    def vectors_sidecar(self) -> VectorSidecar | None:
        """The sidecar for the current dimension (None without vectors)."""
        dims = self.dimensions
        if not dims:
            return None
        with self._vectors_guard:
            if self._vectors is None or self._vectors.dimensions != dims:
                if self._vectors is not None:
                    self._vectors.close(save=False)
                self._vectors = VectorSidecar(
                    self.sidecar_paths[0], self.meta("index_id") or "", dims, self._vector_snapshot, self._vector_count
                )
            return self._vectors

    @used
    def _vector_count(self) -> int:
        return int(self.db.scalar("SELECT count(*) FROM chunks_vec"))

    @used
    def _vector_snapshot(self) -> tuple[int, np.ndarray, np.ndarray]:
        """Every vector with the generation it belongs to, read in one transaction."""
        import numpy as np

        conn = self.db.conn
        conn.execute("BEGIN")
        try:
            generation = int(conn.execute("SELECT value FROM meta WHERE key='vectors_generation'").fetchone()[0])
            rows = conn.execute("SELECT rowid, embedding FROM chunks_vec").fetchall()
        finally:
            conn.execute("COMMIT")
        dims = self.dimensions or 0
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        vectors = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dims)
        return generation, ids, vectors

    def _vectors_changed(self, generation: int, changes: dict[int, np.ndarray | None]) -> None:
        sidecar = self.vectors_sidecar()
        if sidecar is not None:
            sidecar.apply(generation, changes)

    # -- meta ---------------------------------------------------------------------------------
    @used
    def meta(self, key: str) -> str | None:
        row = self.db.one("SELECT value FROM meta WHERE key=?", (key,))
        return row["value"] if row else None

    @used
    def set_meta(self, key: str, value: str | None) -> None:
        if value is None:
            self.db.execute("DELETE FROM meta WHERE key=?", (key,))
        else:
            self.db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?,?)", (key, value))

    @property
    def dimensions(self) -> int | None:
        value = self.meta("dimensions")
        return int(value) if value else None

    @property
    def embedding(self) -> str | None:
        """Which embedding made the vectors (deployment, model, dimensions), or None."""
        return self.meta("embedding")

    @used
    def set_embedding(self, identity: str | None, dimensions: int | None) -> None:
        """Start over with another embedding: old vectors go, every document is to be embedded again."""
        with self.db.transaction() as conn:
            conn.execute("DROP TABLE IF EXISTS chunks_vec")
            if dimensions:
                conn.execute(
                    f"CREATE VIRTUAL TABLE chunks_vec USING vec0(embedding float[{int(dimensions)}] distance_metric=cosine)"
                )
            conn.execute("UPDATE documents SET hash=''")  # so the next sync embeds each again
            self.set_meta("embedding", identity)
            self.set_meta("dimensions", str(dimensions) if dimensions else None)
            generation = self._bump(conn, "vectors_generation")
        sidecar = self.vectors_sidecar()
        if sidecar is not None:
            sidecar.reset(generation, dimensions)
        else:
            with self._vectors_guard:
                if self._vectors is not None:
                    self._vectors.close(save=False)
                    self._vectors = None
            for file in self.sidecar_paths:
                file.unlink(missing_ok=True)

    # -- documents ----------------------------------------------------------------------------
    @used
    def document(self, key: str) -> StoredDocument | None:
        row = self.db.one("SELECT * FROM documents WHERE key=?", (key,))
        return stored_document(row) if row else None

    @used
    def documents(self, origin: str | None = None) -> list[StoredDocument]:
        if origin is None:
            rows = self.db.query("SELECT * FROM documents ORDER BY label")
        else:
            rows = self.db.query("SELECT * FROM documents WHERE origin=? ORDER BY label", (origin,))
        return [stored_document(r) for r in rows]

    @used
    def hashes(self) -> dict[str, str]:
        return {r["key"]: r["hash"] for r in self.db.query("SELECT key, hash FROM documents")}

    @used
    def _answered_count(self) -> int:
        """Chunks that are searched (copies of a passage are not)."""
        return int(self.db.scalar("SELECT count(*) FROM chunks WHERE copy_of IS NULL"))

    @used
    def count(self) -> tuple[int, int]:
        docs = int(self.db.scalar("SELECT count(*) FROM documents"))
        chunks = int(self.db.scalar("SELECT count(*) FROM chunks"))
        return docs, chunks

    @used
    def write(self, entries: Iterable[Entry]) -> None:
        """Replace the documents' passages, all in one transaction; a text the base holds already is written as a copy
        of its holder (copies.place): not searched, counted in the holder's `also_in`."""
        dims = self.dimensions
        changes: dict[int, np.ndarray | None] = {}  # chunk id → its vector now (None: gone)
        texts: dict[int, Text | None] = {}  # chunk id → its words now (None: gone)
        with self.db.transaction() as conn:
            for e in entries:
                self._delete(conn, e.key, changes, texts)
                doc_id = conn.execute(
                    "INSERT INTO documents(key, origin, kind, label, title, hash, attrs, size, chunks, indexed_at) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (e.key, e.origin, e.kind, e.label, e.title, e.hash, json.dumps(e.attrs), e.size, len(e.chunks), iso()),
                ).lastrowid
                fps = [fingerprint(e.kind, chunk.text) for chunk in e.chunks]
                vectors = copies.given_vectors(e, dims)
                held = self._holders(conn, {fp for fp in fps if fp is not None}, bool(dims))
                placed = copies.place(fps, [v is not None for v in vectors], held)
                holder_of = {fp: h.id for fp, h in held.items()}
                copy_at = {c.position: c for c in placed.copies}
                for i, chunk in enumerate(e.chunks):  # in order: a holder new in this document comes before its copies
                    fp, copy = fps[i], copy_at.get(i)
                    rowid = cast(int, conn.execute(
                        "INSERT INTO chunks(doc_id, ord, text, headings, line, page, fingerprint, copy_of) "
                        "VALUES (?,?,?,?,?,?,?,?)",
                        (doc_id, i, chunk.text, json.dumps(chunk.headings, ensure_ascii=False), chunk.line, chunk.page,
                         fp, None if copy is None else holder_of[copy.fingerprint]),
                    ).lastrowid)  # set after an INSERT
                    vector = vectors[i]
                    if copy is not None:
                        if copy.gives_vector and vector is not None:
                            holder = holder_of[copy.fingerprint]
                            conn.execute("INSERT INTO chunks_vec(rowid, embedding) VALUES (?,?)", (holder, vector.tobytes()))
                            changes[holder] = vector
                        continue
                    if fp is not None:
                        holder_of[fp] = rowid
                    conn.execute(
                        "INSERT INTO chunks_fts(rowid, title, headings, text) VALUES (?,?,?,?)",
                        (rowid, e.title, " ".join(chunk.headings), chunk.text),
                    )
                    texts[rowid] = (e.title, " ".join(chunk.headings), chunk.text)
                    if vector is not None:
                        conn.execute("INSERT INTO chunks_vec(rowid, embedding) VALUES (?,?)", (rowid, vector.tobytes()))
                        changes[rowid] = vector
            publish = self._changed(conn, changes, texts)
        publish()

    @staticmethod
    def _holders(conn: sqlite3.Connection, fps: set[str], has_vectors: bool) -> dict[str, copies.Holder]:
        """The passages that hold these texts now (one query for a document's passages)."""
        if not fps:
            return {}
        has_vector = "EXISTS (SELECT 1 FROM chunks_vec v WHERE v.rowid = c.id)" if has_vectors else "0"
        rows = conn.execute(
            f"SELECT c.fingerprint, c.id, {has_vector} FROM chunks c "
            "WHERE c.fingerprint IN (SELECT value FROM json_each(?)) AND c.copy_of IS NULL", (json.dumps(sorted(fps)),),
        ).fetchall()
        return {r[0]: copies.Holder(r[1], bool(r[2])) for r in rows}

    @used
    def texts_with_vectors(self, texts: set[str], outside: set[str]) -> set[str]:
        """Of these texts (fingerprints), those held with a vector and in a document whose key is not in `outside`
        (one query for a batch)."""
        if not texts or not self.dimensions:
            return set()
        rows = self.db.query(
            "SELECT f.fingerprint FROM chunks f WHERE f.fingerprint IN (SELECT value FROM json_each(?)) "
            "AND f.copy_of IS NULL AND EXISTS (SELECT 1 FROM chunks_vec v WHERE v.rowid = f.id) "
            "AND EXISTS (SELECT 1 FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.fingerprint = f.fingerprint "
            "AND d.key NOT IN (SELECT value FROM json_each(?)))",
            (json.dumps(sorted(texts)), json.dumps(sorted(outside))),
        )
        return {r[0] for r in rows}

    @used
    def remove(self, keys: Iterable[str]) -> int:
        removed = 0
        changes: dict[int, np.ndarray | None] = {}
        texts: dict[int, Text | None] = {}
        with self.db.transaction() as conn:
            for key in keys:
                removed += self._delete(conn, key, changes, texts)
            publish = self._changed(conn, changes, texts)
        publish()
        return removed

    def _delete(self, conn: sqlite3.Connection, key: str, changes: dict[int, np.ndarray | None],
                texts: dict[int, Text | None]) -> int:
        """A document removed; each text it held that other documents hold too passes to its successor
        (copies.successors), which takes over the holder's vector and is searched by its own words."""
        import numpy as np

        row = conn.execute("SELECT id FROM documents WHERE key=?", (key,)).fetchone()
        if row is None:
            return 0
        doc_id = row["id"]
        pairs = conn.execute(  # its holders, each with its copies in other documents (or None)
            "SELECT c.id, k.id FROM chunks c LEFT JOIN chunks k ON k.copy_of = c.id AND k.doc_id != c.doc_id "
            "WHERE c.doc_id=? AND c.copy_of IS NULL", (doc_id,),
        ).fetchall()
        holders = list(dict.fromkeys(r[0] for r in pairs))
        successor_of = copies.successors((r[1], r[0]) for r in pairs if r[1] is not None)
        has_vec = self.dimensions is not None
        kept: dict[int, bytes] = {}  # successor → the vector it takes over
        if has_vec:
            for holder, successor in successor_of.items():
                found = conn.execute("SELECT embedding FROM chunks_vec WHERE rowid=?", (holder,)).fetchone()
                if found is not None:
                    kept[successor] = found[0]
        conn.executemany("DELETE FROM chunks_fts WHERE rowid=?", [(cid,) for cid in holders])
        texts.update(dict.fromkeys(holders))
        if has_vec:
            conn.executemany("DELETE FROM chunks_vec WHERE rowid=?", [(cid,) for cid in holders])
            changes.update(dict.fromkeys(holders))
        if successor_of:
            words = conn.execute(
                "SELECT c.id, c.text, c.headings, d.title FROM chunks c JOIN documents d ON d.id = c.doc_id "
                "WHERE c.id IN (SELECT value FROM json_each(?))", (json.dumps(list(successor_of.values())),),
            ).fetchall()
            conn.executemany("UPDATE chunks SET copy_of=NULL WHERE id=?", [(successor,) for successor in successor_of.values()])
            conn.executemany("UPDATE chunks SET copy_of=? WHERE copy_of=? AND doc_id != ?",
                             [(successor, holder, doc_id) for holder, successor in successor_of.items()])
            for r in words:
                headings = " ".join(json.loads(r["headings"]))
                conn.execute("INSERT INTO chunks_fts(rowid, title, headings, text) VALUES (?,?,?,?)",
                             (r["id"], r["title"], headings, r["text"]))
                texts[r["id"]] = (r["title"], headings, r["text"])
            for successor, vector in kept.items():
                conn.execute("INSERT INTO chunks_vec(rowid, embedding) VALUES (?,?)", (successor, vector))
                changes[successor] = np.frombuffer(vector, dtype=np.float32).copy()
        conn.execute("DELETE FROM chunks WHERE doc_id=?", (doc_id,))
        conn.execute("DELETE FROM documents WHERE id=?", (doc_id,))
        return 1

    # -- search -------------------------------------------------------------------------------
    @used
    def keyword_ids(self, query: str, limit: int, exact: bool = False) -> list[int]:
        """Chunk ids by BM25, best first: the tantivy sidecar when it is in step with this
        index.db, else (or when `exact`) FTS5, which scores every passage with any of the words."""
        if not exact:
            generation = self.keywords_generation
            found = self.keywords.search(query_words(query), limit, generation, self._oldest("keywords", generation))
            if found is not None:
                return found
        match = fts_query(query)
        if not match:
            return []
        # bm25() in ORDER BY is the same ranking as `rank`, measured ~1.7× faster over many matches
        rows = self.db.query(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts) LIMIT ?", (match, limit)
        )
        return [r[0] for r in rows]

    @used
    def vector_ids(self, vector: np.ndarray, limit: int, exact: bool = False) -> list[int]:
        """Chunk ids by cosine distance, nearest first: the HNSW sidecar when it is in step with
        this index.db, else (or when `exact`) the vec0 scan of every vector."""
        import numpy as np

        if not self.dimensions:
            return []
        if not exact:
            sidecar = self.vectors_sidecar()
            generation = self.generation
            found = None if sidecar is None else sidecar.search(vector, limit, generation, self._oldest("vectors", generation))
            if found is not None:
                return found
        rows = self.db.query(
            "SELECT rowid FROM chunks_vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (np.asarray(vector, dtype=np.float32).tobytes(), limit),
        )
        return [r[0] for r in rows]

    @used
    def kinds(self, chunk_ids: list[int]) -> dict[int, str]:
        """The document kind of each chunk (that still exists): what re-ranking hooks go by."""
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        found = self.db.query(
            f"SELECT c.id, d.kind FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id IN ({marks})",
            tuple(chunk_ids),
        )
        return {r[0]: r[1] for r in found}

    @used
    def rows(self, chunk_ids: list[int]) -> dict[int, Row]:
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        found = self.db.query(
            "SELECT c.id, c.text, c.headings, c.line, c.page, d.key, d.kind, d.label, d.title, d.attrs, "
            "(SELECT count(DISTINCT k.doc_id) FROM chunks k WHERE k.copy_of = c.id AND k.doc_id != c.doc_id) AS also_in "
            f"FROM chunks c JOIN documents d ON d.id = c.doc_id WHERE c.id IN ({marks})",
            tuple(chunk_ids),
        )
        return {r["id"]: passage_row(r) for r in found}


def _aside_path(path: Path) -> Path:
    """index.db → index.building.db: where a reindex builds the index that replaces it."""
    return path.with_name(f"{path.stem}{ASIDE}{path.suffix}")


def _main_path(path: Path) -> Path:
    """index.building.db → index.db."""
    return path.with_name(f"{path.stem.removesuffix(ASIDE)}{path.suffix}")


def _files(path: Path) -> list[Path]:
    """index.db's files: the database and its journals, then the sidecars derived from it (HNSW graph and its
    header, the keyword folder), named after its stem, and the temporaries the sidecars write beside them."""
    stem = path.stem
    graph = path.with_name(f"{stem}.vectors.usearch")
    words = path.with_name(f"{stem}.keywords.tantivy")
    return [
        path, *(path.with_name(path.name + s) for s in ("-wal", "-shm", "-journal")),
        graph, graph.with_suffix(".json"), words,
        graph.with_name(f".{graph.name}.tmp"), words.with_name(f".{words.name}.building"), words.with_name(f".{words.name}.old"),
    ]


def _remove(files: Iterable[Path]) -> None:
    for file in files:
        if file.is_dir() and not file.is_symlink():
            shutil.rmtree(file, ignore_errors=True)
        else:
            file.unlink(missing_ok=True)


def _lock(folder: Path) -> IO[str] | None:
    """The base's reindex lock (an open file: closing it lets go), or None when another holder has it."""
    held = open(folder / REINDEX_LOCK, "a")  # noqa: SIM115 - held open until the reindex ends
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held.close()
        return None
    return held


def _sweep(path: Path) -> None:
    """What a reindex killed mid-way left beside index.db (its index built aside), removed: unless a reindex
    builds it now, in this process or another (the lock is theirs), the only one to make it."""
    strays = [f for f in _files(_aside_path(path)) if f.exists() or f.is_symlink()]
    if not strays:
        return
    held = _lock(path.parent)
    if held is None:
        return
    try:
        _remove(strays)
        log.info("removed the index a reindex of %s left unfinished", path.parent)
    finally:
        held.close()


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


_check: type[IndexStore] = SqliteIndexStore  # mypy: the SQLite store keeps the protocol's promises
