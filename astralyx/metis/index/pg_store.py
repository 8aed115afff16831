"""A base's index on PostgreSQL, in a schema of its own: `PgIndexStore`, the `IndexStore` of
protocol.py that the SQLite `SqliteIndexStore` (sqlite_store.py) implements too, so the
index service and search do not know which engine answers. Chunks carry their words as a GIN-indexed
tsvector and their vector as pgvector (an HNSW index, cosine). Derived like index.db: dropped (`drop`) and
rebuilt from the files, stale documents found by hash at sync.

Keywords: each replica ranks them with its own tantivy sidecar (keywords.py, FTS5's
bm25 order, as the SQLite engine ranks them), whatever the base's size, in a folder of its own that
it builds at first use from the base's schema. Every write moves `meta.keywords_generation` on and logs the passages it
changed (`keyword_changes`), so a sidecar catches up with other replicas' writes by reading the log,
without a rebuild; one further behind than the log reaches is rebuilt in the background. Until a
sidecar is in step, PostgreSQL answers: ranking an OR of all words by ts_rank is slow at 100k passages
(docs/benchmarks.md, "Engines: PostgreSQL beside SQLite"), so only bounded candidates are ranked (the
passages with all the words, then at most PER_TERM per word).

A reindex builds the new index in a schema aside (`aside`: the base's schema name + `_building`, under the
base's reindex lock, an advisory lock a dead process lets go) while the base's schema answers, then `swap`
renames it in one transaction (the old schema dropped). Other replicas reach it by name at once; their keyword
sidecars see another `index_id` in its meta and are made again (`_keyword_state`), never caught up from a log
that is not their index's. A schema aside that a process killed mid-reindex left is dropped at the next open.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import tempfile
import threading
import uuid
import weakref
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ...engines.postgres import Database, advisory
from ...errors import Conflict
from ...migrations import migrate
from ...migrations.index import POSTGRES_STEPS
from ...util import iso
from . import copies
from .keywords import KeywordSidecar, Text
from .passages import Entry, Row, StoredDocument, fingerprint, passage_row, query_words, stored_document
from .protocol import IndexMoved, IndexStore, Users, used

if TYPE_CHECKING:
    from ..bases import KnowledgeBase

log = logging.getLogger("astralyx.metis")

PER_TERM = 400  # candidates per query word
ALL_WORDS = 1000  # candidates with every word
EF_SEARCH = 50  # HNSW breadth at query time (search asks for 50 candidates; ≥ 40 gave recall@10 0.985 at 100k)
CONFIG = "english"  # stemming and stop words, as FTS5's porter tokenizer stems
KEEP_CHANGES = 2000  # generations of keyword changes kept for other replicas' sidecars to catch up from
# A sync adding at least this many passages, and more than the base holds, builds the HNSW and GIN indexes
# once after its writes: inserting into pgvector's graph passage by passage cost 3.2 ms of the server's time
# each (70% of a sync's database work at 10k passages), building it in one go 0.2 ms; GIN's ~0.8 ms likewise.
BULK_FROM = 5_000
ASIDE = "_building"  # a reindex's new index: a schema beside the base's until it is complete
# A reindex's new index numbers its passages from past the old one's: a search of another replica that read ids
# from the old schema just before the swap and their rows just after finds none of them, never other passages.
ID_GAP = 1 << 20


def schema_of(workspace: str, base: str) -> str:
    return "ix_" + hashlib.blake2b(f"{workspace}/{base}".encode(), digest_size=8).hexdigest()


class PgIndexes:
    """A core's indexes on PostgreSQL (what `opener.index_opener` answers): it opens a base's store, and holds what
    the stores it opens share, for as long as the core lives."""

    def __init__(self, url: str) -> None:
        self.url = url
        # Bases whose index this core is building aside: a store opened meanwhile leaves the schema aside alone (its
        # sweep would get the reindex lock if its thread holds it: a session's advisory lock is its own again).
        self.building: set[str] = set()
        self.tuned: weakref.WeakSet[Any] = weakref.WeakSet()  # pooled connections whose session has hnsw.ef_search set

    def __call__(self, base: KnowledgeBase) -> PgIndexStore:
        return PgIndexStore(self.url, base.workspace, base.name, base.folder, shared=self)


class PgIndexStore:
    steps = POSTGRES_STEPS
    # ts_rank is not BM25 (its top 10 shared half of FTS5's at 10,000 passages): the sidecar answers a base of
    # any size, so both engines rank keywords alike; ts_rank only while it is being built.
    keywords_at_any_size = True

    def __init__(self, url: str, workspace: str, base: str, folder: Path, *, aside: bool = False,
                 shared: PgIndexes | None = None) -> None:
        self._where = (workspace, base, folder)
        self._shared = shared or PgIndexes(url)  # what the stores of one core share
        self.home = schema_of(workspace, base)  # the base's schema (the one searched)
        self.schema = self.home + ASIDE if aside else self.home  # the one this store reads and writes
        self.version_table = f"{self.schema}.schema_version"  # the records' schema_version is public's
        self._hold: ExitStack | None = None  # the reindex lock, held by an index built aside (`aside`)
        self.path = folder / "index.db"  # not a file: its folder is the base's (the service checks it exists)
        # Who uses it now: dropping the schema (a reindex, the base deleted) waits until no statement of theirs
        # runs, and refuses them after (protocol.py's Users; each method below that reads or writes is one use).
        self.users = Users()
        self.db = Database(url, name=f"index:{self.schema}")
        if not aside:
            self._sweep()
        with self.db.transaction() as conn:  # one replica at a time (IF NOT EXISTS is not safe against itself)
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
        migrate(self.db, self.steps, table=self.version_table, schema=self.schema)
        with self.db.transaction() as conn:
            conn.execute(f"INSERT INTO {self.schema}.meta(key, value) VALUES ('index_id', ?) ON CONFLICT DO NOTHING",
                         (uuid.uuid4().hex,))
        self._guard = threading.Lock()
        # This replica's keyword sidecar: a folder of this process (the data directory may be shared)
        self._local = Path(tempfile.mkdtemp(prefix=f"astralyx-{self.schema}-"))
        self.keywords = self._sidecar(self.meta("index_id") or "")
        # Search indexes a crash left missing: built in the background (a base of 100k passages takes a
        # while), searches scanning meanwhile; a test joins it.
        self.repairing: threading.Thread | None = None
        if self.missing_indexes():
            self.repairing = threading.Thread(target=self._repair_in_background, name=f"repair:{self.schema}", daemon=True)
            self.repairing.start()

    def close(self) -> None:
        """Once no one uses it: the sidecar closes and its folder goes; connections are the engine's, shared by
        every base."""
        self.users.close()
        self.keywords.close()
        shutil.rmtree(self._local, ignore_errors=True)

    def current(self) -> bool:
        """Its schema is named after the base: whatever happened to it, this store reaches the base's (see sqlite_store.py)."""
        return True

    def drop(self) -> None:
        """Remove this index entirely (the base is deleted), and a reindex's new one (its swap then fails)."""
        self.close()
        self.db.script(f"DROP SCHEMA IF EXISTS {self.home} CASCADE; DROP SCHEMA IF EXISTS {self.home}{ASIDE} CASCADE")

    # -- a reindex: a new index built aside, then swapped in -----------------------------------
    def _reindex_lock(self) -> AbstractContextManager[bool]:
        """Held while a reindex builds the base's index aside: a session advisory lock (a dead process lets it go)."""
        return advisory(self.db.url, f"astralyx:reindex:{self.home}", wait=False)

    def _sweep(self) -> None:
        """The schema a reindex killed mid-way left, dropped: unless a reindex builds it now (here or elsewhere)."""
        aside = self.home + ASIDE
        if self.home in self._shared.building or self.db.scalar("SELECT 1 FROM pg_namespace WHERE nspname = ?", (aside,)) is None:
            return
        with self._reindex_lock() as free:
            if free:
                self.db.script(f"DROP SCHEMA IF EXISTS {aside} CASCADE")
                log.info("dropped the index a reindex of %s left unfinished", self.home)

    def aside(self) -> PgIndexStore:
        """A new, empty index of this base in a schema aside, built while this one answers; `swap` puts it in this
        one's place once complete, `discard` drops it. It holds the base's reindex lock until then."""
        hold = ExitStack()
        try:
            if not hold.enter_context(self._reindex_lock()):
                raise Conflict("The base's index is being rebuilt by another replica: wait for that reindex to finish",
                               code="SYNC_RUNNING")
            self._shared.building.add(self.home)
            hold.callback(self._shared.building.discard, self.home)
            self.db.script(f"DROP SCHEMA IF EXISTS {self.home}{ASIDE} CASCADE")  # a reindex killed mid-way left it
            fresh = PgIndexStore(self.db.url, *self._where, aside=True, shared=self._shared)
            start = int(self.db.scalar(f"SELECT coalesce(max(id), 0) FROM {self.schema}.chunks")) + ID_GAP
            fresh.db.script(f"ALTER TABLE {fresh.schema}.chunks ALTER COLUMN id RESTART WITH {start}")
        except BaseException:
            hold.close()
            raise
        fresh._hold = hold
        return fresh

    def seal(self) -> None:
        """Nothing to do before the swap: the schema is complete as it is."""

    def swap(self, old: IndexStore | None, settled: int | None = None) -> PgIndexStore:
        """Put this index, built aside, in the base's schema's place: `old` (this replica's store of it) closed once
        no one uses it, then the old schema dropped and this one renamed in one transaction, under the same lock as
        every replica's writes to the base's index: one of theirs commits after it, into this one, or before it,
        and then the old schema's keyword generation is not `settled` (the one this index caught up with) any more:
        IndexMoved, nothing swapped. Answers this store, now the base's."""
        if old is not None:
            old.close()
        home = Database(self.db.url, name=f"index:{self.home}")
        with home.transaction() as conn:
            if settled is not None:
                now = conn.execute(f"SELECT value FROM {self.home}.meta WHERE key='keywords_generation'").fetchone()
                if now is not None and int(now[0]) != settled:
                    raise IndexMoved(f"{self.home} was written since its new index caught up")
            conn.execute(f"DROP SCHEMA IF EXISTS {self.home} CASCADE")
            conn.execute(f"ALTER SCHEMA {self.schema} RENAME TO {self.home}")
        self.schema, self.version_table, self.db = self.home, f"{self.home}.schema_version", home
        self._let_go_lock()
        return self

    def discard(self) -> None:
        """An index built aside that is not to be used (its reindex failed or was stopped): closed, dropped."""
        try:
            self.close()
            if self.schema != self.home:  # (never the base's own)
                self.db.script(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")
        finally:
            self._let_go_lock()

    def _let_go_lock(self) -> None:
        hold, self._hold = self._hold, None
        if hold is not None:
            try:
                hold.close()
            except Exception:  # a broken session let its lock go with it
                log.warning("letting the reindex lock of %s go failed", self.home, exc_info=True)

    # -- the keyword sidecar ------------------------------------------------------------------
    @property
    def keywords_generation(self) -> int:
        return int(self.meta("keywords_generation") or 0)

    def _sidecar(self, index_id: str) -> KeywordSidecar:
        return KeywordSidecar(
            self._local / f"keywords-{index_id}.tantivy", index_id, self._keyword_snapshot, self._answered_count,
        )

    @used
    def _keyword_state(self) -> int:
        """The schema's keyword generation, its sidecar here made again first if the schema holds another index
        than the one it was built from (another replica's reindex swapped a new one in)."""
        rows = self.db.query(f"SELECT key, value FROM {self.schema}.meta WHERE key IN ('index_id', 'keywords_generation')")
        meta = {r[0]: r[1] for r in rows}
        index_id = meta.get("index_id") or ""
        if index_id != self.keywords.index_id:
            with self._guard:
                stale = self.keywords
                if stale.index_id != index_id:
                    self.keywords = self._sidecar(index_id)
                    self.keywords.use_from = stale.use_from
                    self.keywords.pause = stale.pause
                    stale.close()
                    shutil.rmtree(stale.path, ignore_errors=True)
        return int(meta.get("keywords_generation") or 0)

    @used
    def _keyword_snapshot(self, after: int = -1, limit: int | None = None) -> tuple[int, list[tuple[int, Text]]]:
        """(keywords.Snapshot) The chunks of ids above `after`, by id, at most `limit`, and their generation."""
        s = self.schema
        rows = self.db.query(  # one statement: one snapshot of the generation and the passages
            f"SELECT (SELECT value FROM {s}.meta WHERE key='keywords_generation'), c.id, d.title, c.headings, c.text "
            f"FROM {s}.chunks c JOIN {s}.documents d ON d.id = c.doc_id WHERE c.copy_of IS NULL AND c.id > ? "
            "ORDER BY c.id LIMIT ?", (after, limit),
        )
        if not rows:
            return self.keywords_generation, []
        return int(rows[0][0]), [(r[1], (r[2], " ".join(json.loads(r[3])), r[4])) for r in rows]

    def _log_keywords(self, conn: Any, texts: dict[int, Text | None]) -> int:
        """Within a write's transaction: the next keyword generation, with the passages it changed logged."""
        s = self.schema
        generation = int(conn.execute(
            f"UPDATE {s}.meta SET value = (value::bigint + 1)::text WHERE key='keywords_generation' RETURNING value"
        ).fetchone()[0])
        rows = [(generation, cid, *(t if t is not None else (None, None, None))) for cid, t in texts.items()]
        conn.raw.cursor().executemany(
            f"INSERT INTO {s}.keyword_changes(generation, chunk_id, title, headings, text) VALUES (%s,%s,%s,%s,%s)", rows,
        )
        if generation % 100 == 0:
            conn.execute(f"DELETE FROM {s}.keyword_changes WHERE generation <= ?", (generation - KEEP_CHANGES,))
        return generation

    def _catch_up(self, generation: int) -> None:
        """Bring this replica's sidecar to `generation` from the change log (other replicas' writes)."""
        have = self.keywords.generation
        if have is None or have >= generation or not self.keywords.ready:
            return
        with self._guard:  # one search catches up; the others wait for it (a few ms), then find it done
            self._catch_up_locked(generation)

    @used
    def _catch_up_locked(self, generation: int) -> None:
        have = self.keywords.generation
        if have is None or have >= generation or not self.keywords.ready:
            return
        s = self.schema
        rows = self.db.query(  # none if the schema holds another index now (a reindex's): it is rebuilt, not caught up
            f"SELECT generation, chunk_id, title, headings, text FROM {s}.keyword_changes "
            f"WHERE generation > ? AND generation <= ? AND (SELECT value FROM {s}.meta WHERE key='index_id') = ? "
            "ORDER BY generation", (have, generation, self.keywords.index_id),
        )
        changes: dict[int, dict[int, Text | None]] = {}
        for gen, cid, title, headings, text in rows:
            changes.setdefault(gen, {})[cid] = None if title is None else (title, headings, text)
        for gen in range(have + 1, generation + 1):
            if gen not in changes:
                return  # pruned from the log: the search falls back, and the sidecar is rebuilt
            self.keywords.apply(gen, changes[gen])

    # -- a large load: the search indexes built once, after it -------------------------------
    @contextmanager
    def bulk(self, adding: int) -> Iterator[None]:
        """Around a sync's writes: for a large load, the HNSW index of the vectors and the GIN index of the
        words are dropped while the passages are written and built once at the end (searches meanwhile scan
        the passages: the same answers, slower; keywords come from the tantivy sidecar once it is built).
        The load holds the base's load lock meanwhile: a load stopped by a crash lets it go, and the indexes
        it left missing are built by the next replica that opens the base, or by the next sync (`repair`)."""
        large = adding >= BULK_FROM and adding > self._answered_count()

        def build() -> None:
            if large:
                self._search_indexes()
            else:  # a small sync: what a crash left missing
                self.repair()

        with self._loading(wait=True) if large else nullcontext(True):
            if large:
                with self.users.use():
                    self.db.script(f"DROP INDEX IF EXISTS {self.schema}.chunks_hnsw; "
                                   f"DROP INDEX IF EXISTS {self.schema}.chunks_tsv")
            try:
                yield
            except BaseException:
                try:  # a sync stopped (cancelled, failed): its own error is the one to tell, not this
                    build()
                except Exception:
                    log.warning("the search indexes of %s are built at its next sync", self.schema, exc_info=True)
                raise
            build()

    def _loading(self, *, wait: bool) -> AbstractContextManager[bool]:
        """The base's load lock (True inside when held): a session advisory lock, which a process that dies
        lets go at once."""
        return advisory(self.db.url, f"astralyx:load:{self.schema}", wait=wait)

    @used
    def missing_indexes(self) -> set[str]:
        """The search indexes the base should have and has not (a large load under way, or stopped by a crash)."""
        want = {"chunks_tsv", "chunks_hnsw"} if self.dimensions else {"chunks_tsv"}
        rows = self.db.query("SELECT indexname FROM pg_indexes WHERE schemaname = ?", (self.schema,))
        return want - {r[0] for r in rows}

    @used
    def repair(self) -> bool:
        """Build the search indexes a load stopped by a crash left missing; not while a load runs (another
        replica's, which builds them at its end). True if they were built."""
        if not self.missing_indexes():
            return False
        with self._loading(wait=False) as free:
            if free:
                self._search_indexes()
                log.info("the search indexes of %s were missing (a load stopped by a crash): built", self.schema)
            return free

    def _repair_in_background(self) -> None:
        try:
            self.repair()
        except Exception:  # the base deleted meanwhile, the server stopping: the next sync tries again
            log.warning("the search indexes of %s are built at its next sync", self.schema, exc_info=True)

    @used
    def _search_indexes(self) -> None:
        s = self.schema
        sql = f"CREATE INDEX IF NOT EXISTS chunks_tsv ON {s}.chunks USING gin(tsv)"
        if self.dimensions:
            sql += f"; CREATE INDEX IF NOT EXISTS chunks_hnsw ON {s}.chunks USING hnsw (embedding vector_cosine_ops)"
        self.db.script(sql)

    # -- sidecars: this replica's keyword sidecar (the vectors' HNSW index is pgvector's, in the database) --
    def build_sidecars(self) -> None:
        """This replica's keyword sidecar brought in step now (a large base's in the background)."""
        self.keywords.ensure(self.keywords_generation)

    def wait_sidecars(self) -> None:
        """Until its build under way ends."""
        self.keywords.wait()

    # -- meta ---------------------------------------------------------------------------------
    @used
    def meta(self, key: str) -> str | None:
        row = self.db.one(f"SELECT value FROM {self.schema}.meta WHERE key=?", (key,))
        return row["value"] if row else None

    @used
    def set_meta(self, key: str, value: str | None, conn: Any = None) -> None:
        target = conn or self.db
        if value is None:
            target.execute(f"DELETE FROM {self.schema}.meta WHERE key=?", (key,))
        else:
            target.execute(
                f"INSERT INTO {self.schema}.meta(key, value) VALUES (?,?) ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                (key, value),
            )

    @property
    def dimensions(self) -> int | None:
        value = self.meta("dimensions")
        return int(value) if value else None

    @property
    def embedding(self) -> str | None:
        return self.meta("embedding")

    @used
    def set_embedding(self, identity: str | None, dimensions: int | None) -> None:
        """Start over with another embedding: old vectors go, every document is to be embedded again."""
        s = self.schema
        with self.db.transaction() as conn:
            conn.execute(f"DROP INDEX IF EXISTS {s}.chunks_hnsw")
            conn.execute(f"UPDATE {s}.chunks SET embedding = NULL")
            if dimensions:
                conn.execute(f"ALTER TABLE {s}.chunks ALTER COLUMN embedding TYPE vector({int(dimensions)})")
                conn.execute(f"CREATE INDEX chunks_hnsw ON {s}.chunks USING hnsw (embedding vector_cosine_ops)")
            else:
                conn.execute(f"ALTER TABLE {s}.chunks ALTER COLUMN embedding TYPE vector")
            conn.execute(f"UPDATE {s}.documents SET hash=''")  # so the next sync embeds each again
            self.set_meta("embedding", identity, conn)
            self.set_meta("dimensions", str(dimensions) if dimensions else None, conn)

    # -- documents ----------------------------------------------------------------------------
    @used
    def document(self, key: str) -> StoredDocument | None:
        row = self.db.one(f"SELECT * FROM {self.schema}.documents WHERE key=?", (key,))
        return stored_document(row) if row else None

    @used
    def documents(self, origin: str | None = None) -> list[StoredDocument]:
        if origin is None:
            rows = self.db.query(f"SELECT * FROM {self.schema}.documents ORDER BY label")
        else:
            rows = self.db.query(f"SELECT * FROM {self.schema}.documents WHERE origin=? ORDER BY label", (origin,))
        return [stored_document(r) for r in rows]

    @used
    def hashes(self) -> dict[str, str]:
        return {r["key"]: r["hash"] for r in self.db.query(f"SELECT key, hash FROM {self.schema}.documents")}

    @used
    def _answered_count(self) -> int:
        """Passages searched and answered (not copies)."""
        return int(self.db.scalar(f"SELECT count(*) FROM {self.schema}.chunks WHERE copy_of IS NULL"))

    @used
    def _vector_count(self) -> int:
        return int(self.db.scalar(f"SELECT count(*) FROM {self.schema}.chunks WHERE embedding IS NOT NULL"))

    @used
    def count(self) -> tuple[int, int]:
        docs = int(self.db.scalar(f"SELECT count(*) FROM {self.schema}.documents"))
        chunks = int(self.db.scalar(f"SELECT count(*) FROM {self.schema}.chunks"))
        return docs, chunks

    @used
    def write(self, entries: Iterable[Entry]) -> None:
        """Replace the documents' passages, all in one transaction; a text the base holds already is written as a copy
        of its holder (copies.place): no words, no vector (so never searched), counted in the holder's `also_in`."""
        s = self.schema
        dims = self.dimensions
        texts: dict[int, Text | None] = {}  # chunk id → its words now (None: gone), for the keyword sidecars
        with self.db.transaction() as conn:
            for e in entries:
                self._delete(conn, e.key, texts)
                doc_id = conn.execute(
                    f"INSERT INTO {s}.documents(key, origin, kind, label, title, hash, attrs, size, chunks, indexed_at) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?) RETURNING id",
                    (e.key, e.origin, e.kind, e.label, e.title, e.hash, json.dumps(e.attrs), e.size, len(e.chunks), iso()),
                ).fetchone()[0]
                fps = [fingerprint(e.kind, chunk.text) for chunk in e.chunks]
                vectors = copies.given_vectors(e, dims)
                asked = [fp for fp in fps if fp is not None]
                held = {r[0]: copies.Holder(r[1], r[2]) for r in conn.execute(
                    f"SELECT fingerprint, id, embedding IS NOT NULL FROM {s}.chunks "
                    "WHERE fingerprint = ANY(?) AND copy_of IS NULL", (asked,),
                ).fetchall()} if asked else {}
                placed = copies.place(fps, [v is not None for v in vectors], held)
                holder_of = {fp: h.id for fp, h in held.items()}
                cur = conn.raw.cursor()
                if placed.new:
                    rows, words = [], []
                    for i in placed.new:
                        chunk, vector = e.chunks[i], vectors[i]
                        headings = " ".join(chunk.headings)
                        words.append((e.title, headings, chunk.text))
                        rows.append((doc_id, i, chunk.text, json.dumps(chunk.headings, ensure_ascii=False), chunk.line,
                                     chunk.page, fps[i], f"{e.title}\n{headings}\n{chunk.text}",
                                     None if vector is None else _vector_text(vector)))
                    cur.executemany(
                        f"INSERT INTO {s}.chunks(doc_id, ord, text, headings, line, page, fingerprint, tsv, embedding) "
                        f"VALUES (%s,%s,%s,%s,%s,%s,%s,to_tsvector('{CONFIG}', %s),%s::vector) RETURNING id, fingerprint",
                        rows, returning=True,
                    )
                    for text in words:  # a result per row inserted, in order
                        row = cur.fetchone()
                        assert row is not None  # RETURNING gives one row per insert
                        texts[row[0]] = text
                        if row[1] is not None:
                            holder_of[row[1]] = row[0]
                        cur.nextset()
                if placed.copies:
                    cur.executemany(
                        f"INSERT INTO {s}.chunks(doc_id, ord, text, headings, line, page, fingerprint, copy_of, tsv) "
                        "VALUES (%s,%s,%s,%s,%s,%s,%s,%s,''::tsvector)",
                        [(doc_id, c.position, e.chunks[c.position].text,
                          json.dumps(e.chunks[c.position].headings, ensure_ascii=False), e.chunks[c.position].line,
                          e.chunks[c.position].page, c.fingerprint, holder_of[c.fingerprint]) for c in placed.copies],
                    )
                    given = [(_vector_text(vector), holder_of[c.fingerprint]) for c in placed.copies
                             if c.gives_vector and (vector := vectors[c.position]) is not None]
                    if given:
                        cur.executemany(f"UPDATE {s}.chunks SET embedding = %s::vector WHERE id=%s AND embedding IS NULL",
                                        given)
            generation = self._log_keywords(conn, texts) if texts else 0
        if texts:
            self.keywords.apply(generation, texts)

    @used
    def texts_with_vectors(self, texts: set[str], outside: set[str]) -> set[str]:
        """Of these texts (fingerprints), those held with a vector and in a document whose key is not in `outside`
        (one query for a batch)."""
        if not texts or not self.dimensions:
            return set()
        s = self.schema
        # From the holders (few, found by the fingerprint index) to their documents: the other way round, the
        # planner joined every passage with its document (100 ms a batch at 10k passages).
        rows = self.db.query(
            f"SELECT f.fingerprint FROM {s}.chunks f WHERE f.fingerprint = ANY(?) AND f.copy_of IS NULL "
            f"AND f.embedding IS NOT NULL AND EXISTS (SELECT 1 FROM {s}.chunks c JOIN {s}.documents d ON d.id = c.doc_id "
            "WHERE c.fingerprint = f.fingerprint AND d.key <> ALL(?))",
            (list(texts), list(outside)),
        )
        return {r[0] for r in rows}

    @used
    def remove(self, keys: Iterable[str]) -> int:
        removed = 0
        texts: dict[int, Text | None] = {}
        with self.db.transaction() as conn:
            for key in keys:
                removed += self._delete(conn, key, texts)
            generation = self._log_keywords(conn, texts) if texts else 0
        if texts:
            self.keywords.apply(generation, texts)
        return removed

    def _delete(self, conn: Any, key: str, texts: dict[int, Text | None]) -> int:
        """A document removed; each text it held that other documents hold too passes to its successor
        (copies.successors), which takes over the holder's vector and is searched by its own words."""
        s = self.schema
        row = conn.execute(f"SELECT id FROM {s}.documents WHERE key=?", (key,)).fetchone()
        if row is None:
            return 0
        doc_id = row[0]
        pairs = conn.execute(  # its holders, each with its copies in other documents (or None)
            f"SELECT c.id, k.id FROM {s}.chunks c LEFT JOIN {s}.chunks k ON k.copy_of = c.id AND k.doc_id != c.doc_id "
            "WHERE c.doc_id=? AND c.copy_of IS NULL", (doc_id,),
        ).fetchall()
        texts.update(dict.fromkeys(r[0] for r in pairs))
        successor_of = copies.successors((r[1], r[0]) for r in pairs if r[1] is not None)
        if successor_of:
            words = conn.execute(
                f"SELECT c.id, c.text, c.headings, d.title FROM {s}.chunks c JOIN {s}.documents d ON d.id = c.doc_id "
                "WHERE c.id = ANY(?)", (list(successor_of.values()),),
            ).fetchall()
            by_id = {r[0]: (r[3], " ".join(json.loads(r[2])), r[1]) for r in words}
            cur = conn.raw.cursor()
            cur.executemany(
                f"UPDATE {s}.chunks SET copy_of=NULL, tsv=to_tsvector('{CONFIG}', %s), "
                f"embedding=(SELECT embedding FROM {s}.chunks WHERE id=%s) WHERE id=%s",
                [("\n".join(by_id[successor]), holder, successor) for holder, successor in successor_of.items()],
            )
            cur.executemany(f"UPDATE {s}.chunks SET copy_of=%s WHERE copy_of=%s AND doc_id != %s",
                            [(successor, holder, doc_id) for holder, successor in successor_of.items()])
            texts.update({successor: by_id[successor] for successor in successor_of.values()})
        conn.execute(f"DELETE FROM {s}.documents WHERE id=?", (doc_id,))  # its chunks go with it
        return 1

    # -- search -------------------------------------------------------------------------------
    @used
    def keyword_ids(self, query: str, limit: int, exact: bool = False) -> list[int]:
        """Chunk ids, best first: this replica's keyword sidecar when it is (or is brought) in step; else
        ts_rank over the candidates (all words, then a bounded share per word); `exact` ranks every
        passage with any of the words."""
        words = query_words(query)
        if not words:
            return []
        if not exact:
            generation = self._keyword_state()
            self._catch_up(generation)
            found = self.keywords.search(words, limit, generation)
            if found is not None:
                return found
        s = self.schema
        any_word = " || ".join(f"plainto_tsquery('{CONFIG}', ?)" for _ in words)
        # ts_rank normalised by length (1: 1 + log of it); ties by document and place, not by
        # insertion order, so a rebuilt index answers the same.
        order = "ORDER BY ts_rank(c.tsv, q, 1) DESC, d.key, c.ord LIMIT ?"
        join = f"JOIN {s}.documents d ON d.id = c.doc_id, (SELECT {any_word}) AS q(q)"
        if exact:
            sql = f"SELECT c.id FROM {s}.chunks c {join} WHERE c.tsv @@ q {order}"
            return [r[0] for r in self.db.query(sql, (*words, limit))]
        every_word = " && ".join(f"plainto_tsquery('{CONFIG}', ?)" for _ in words)
        parts = [f"(SELECT id FROM {s}.chunks WHERE tsv @@ ({every_word}) LIMIT {ALL_WORDS})"]
        parts += [f"(SELECT id FROM {s}.chunks WHERE tsv @@ plainto_tsquery('{CONFIG}', ?) LIMIT {PER_TERM})"] * (
            len(words) if len(words) > 1 else 0
        )
        sql = (
            f"WITH candidates AS ({' UNION '.join(parts)}) "
            f"SELECT c.id FROM {s}.chunks c JOIN candidates USING (id) {join} {order}"
        )
        params = (*words, *(words if len(words) > 1 else []), *words, limit)
        return [r[0] for r in self.db.query(sql, params)]

    @used
    def vector_ids(self, vector: np.ndarray, limit: int, exact: bool = False) -> list[int]:
        """Chunk ids by cosine distance, nearest first: pgvector's HNSW index, or (`exact`) a scan."""
        if not self.dimensions:
            return []
        sql = f"SELECT id FROM {self.schema}.chunks WHERE embedding IS NOT NULL ORDER BY embedding <=> ?::vector LIMIT ?"
        params = (_vector_text(np.asarray(vector, dtype=np.float32)), limit)
        if exact or limit > EF_SEARCH:
            with self.db.snapshot() as conn:
                if exact:
                    conn.execute("SET LOCAL enable_indexscan = off")
                else:
                    conn.execute(f"SET LOCAL hnsw.ef_search = {int(limit)}")
                return [r[0] for r in conn.execute(sql, params).fetchall()]
        with self.db.connection() as conn:
            if conn.raw not in self._shared.tuned:  # once per pooled connection, not a transaction per search
                conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
                self._shared.tuned.add(conn.raw)
            return [r[0] for r in conn.execute(sql, params).fetchall()]

    @used
    def kinds(self, chunk_ids: list[int]) -> dict[int, str]:
        if not chunk_ids:
            return {}
        found = self.db.query(
            f"SELECT c.id, d.kind FROM {self.schema}.chunks c JOIN {self.schema}.documents d ON d.id = c.doc_id "
            "WHERE c.id = ANY(?)",
            (list(chunk_ids),),
        )
        return {r[0]: r[1] for r in found}

    @used
    def rows(self, chunk_ids: list[int]) -> dict[int, Row]:
        if not chunk_ids:
            return {}
        found = self.db.query(
            "SELECT c.id, c.text, c.headings, c.line, c.page, d.key, d.kind, d.label, d.title, d.attrs, "
            f"(SELECT count(DISTINCT k.doc_id) FROM {self.schema}.chunks k WHERE k.copy_of = c.id AND k.doc_id != c.doc_id) "
            f"AS also_in FROM {self.schema}.chunks c JOIN {self.schema}.documents d ON d.id = c.doc_id WHERE c.id = ANY(?)",
            (list(chunk_ids),),
        )
        return {r["id"]: passage_row(r) for r in found}


def _vector_text(vector: np.ndarray) -> str:
    """pgvector's text form: no adapter registration needed on the shared connections."""
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


_check: type[IndexStore] = PgIndexStore  # mypy: the PostgreSQL store keeps the protocol's promises
