"""A base's index on PostgreSQL: the store of metis/index/store.py, in a schema of its own.

Same public methods as the SQLite `BaseIndex`, so the index service and search do not know which
engine answers. Chunks carry their words as a GIN-indexed tsvector and their vector as pgvector
(an HNSW index, cosine); there are no sidecars (PostgreSQL's own indexes are in step with every
commit). Derived like index.db: dropped (`drop`) and rebuilt from the files, stale documents
found by hash at sync.

Keywords do not rank every match (an OR of all words ranked by ts_rank took 173/381 ms p50/p95
at 100k): candidates are the passages with all the words, then at most PER_TERM passages per
word (rare words bring all theirs, common ones a bounded share), and only those are ranked.
"""

from __future__ import annotations

import hashlib
import json
import threading
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..metis.index.store import Entry, Row, StoredDocument, fingerprint, query_words
from ..migrations import migrate
from ..migrations.index import POSTGRES_STEPS
from ..util import iso
from .postgres import Database

PER_TERM = 400  # candidates per query word
ALL_WORDS = 1000  # candidates with every word
EF_SEARCH = 50  # HNSW breadth at query time (search asks for 50 candidates; ≥ 40 gave recall@10 0.985 at 100k)
_ef_set: set[int] = set()  # connections (by id) whose session has hnsw.ef_search set
CONFIG = "english"  # stemming and stop words, as FTS5's porter tokenizer stems


def schema_of(workspace: str, base: str) -> str:
    return "ix_" + hashlib.blake2b(f"{workspace}/{base}".encode(), digest_size=8).hexdigest()


class _NoSidecar:
    """PostgreSQL's own indexes answer: what the service asks of a sidecar does nothing."""

    use_from: int | None = None

    def ensure(self, generation: int) -> None:
        return None

    def wait(self, timeout: float | None = None) -> bool:
        return True

    def close(self) -> None:
        return None


class PgBaseIndex:
    steps = POSTGRES_STEPS

    def __init__(self, url: str, workspace: str, base: str, folder: Path) -> None:
        self.schema = schema_of(workspace, base)
        self.version_table = f"{self.schema}.schema_version"  # the records' schema_version is public's
        self.path = folder / "index.db"  # not a file: its folder is the base's (the service checks it exists)
        self.db = Database(url, name=f"index:{self.schema}")
        self.db.script(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
        migrate(self.db, self.steps, table=self.version_table, schema=self.schema)
        with self.db.transaction() as conn:
            conn.execute(f"INSERT INTO {self.schema}.meta(key, value) VALUES ('index_id', ?) ON CONFLICT DO NOTHING",
                         (uuid.uuid4().hex,))
        self.keywords = _NoSidecar()
        self._guard = threading.Lock()

    def close(self) -> None:
        return None  # connections are the engine's, shared by every base

    def drop(self) -> None:
        """Remove this index entirely (the base is deleted or rebuilt from its files)."""
        self.db.script(f"DROP SCHEMA IF EXISTS {self.schema} CASCADE")

    # -- what the service reads of the sidecars ------------------------------------------------
    keywords_generation = 0
    generation = 0

    def vectors_sidecar(self) -> None:
        return None

    @property
    def sidecar_paths(self) -> tuple[Path, Path]:
        graph = self.path.with_name("index.vectors.usearch")
        return graph, graph.with_suffix(".json")

    # -- meta ---------------------------------------------------------------------------------
    def meta(self, key: str) -> str | None:
        row = self.db.one(f"SELECT value FROM {self.schema}.meta WHERE key=?", (key,))
        return row["value"] if row else None

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
    def document(self, key: str) -> StoredDocument | None:
        row = self.db.one(f"SELECT * FROM {self.schema}.documents WHERE key=?", (key,))
        return _doc(row) if row else None

    def documents(self, origin: str | None = None) -> list[StoredDocument]:
        if origin is None:
            rows = self.db.query(f"SELECT * FROM {self.schema}.documents ORDER BY label")
        else:
            rows = self.db.query(f"SELECT * FROM {self.schema}.documents WHERE origin=? ORDER BY label", (origin,))
        return [_doc(r) for r in rows]

    def hashes(self) -> dict[str, str]:
        return {r["key"]: r["hash"] for r in self.db.query(f"SELECT key, hash FROM {self.schema}.documents")}

    def _answered_count(self) -> int:
        """Passages searched and answered (not copies)."""
        return int(self.db.scalar(f"SELECT count(*) FROM {self.schema}.chunks WHERE copy_of IS NULL"))

    def _vector_count(self) -> int:
        return int(self.db.scalar(f"SELECT count(*) FROM {self.schema}.chunks WHERE embedding IS NOT NULL"))

    def count(self) -> tuple[int, int]:
        docs = int(self.db.scalar(f"SELECT count(*) FROM {self.schema}.documents"))
        chunks = int(self.db.scalar(f"SELECT count(*) FROM {self.schema}.chunks"))
        return docs, chunks

    def write(self, entries: Iterable[Entry]) -> None:
        """Replace the documents' chunks, all in one transaction. A passage the base holds already (the same
        fingerprint) is kept as a copy of it: no words, no vector (so never searched), counted in the first
        one's `also_in`; the rule and its reasons are store.py's."""
        s = self.schema
        dims = self.dimensions
        with self.db.transaction() as conn:
            for e in entries:
                self._delete(conn, e.key)
                doc_id = conn.execute(
                    f"INSERT INTO {s}.documents(key, origin, kind, label, title, hash, attrs, size, chunks, indexed_at) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?) RETURNING id",
                    (e.key, e.origin, e.kind, e.label, e.title, e.hash, json.dumps(e.attrs), e.size, len(e.chunks), iso()),
                ).fetchone()[0]
                fps = [fingerprint(e.kind, chunk.text) for chunk in e.chunks]
                held = {r[0]: (r[1], r[2]) for r in conn.execute(
                    f"SELECT fingerprint, id, embedding IS NOT NULL FROM {s}.chunks "
                    "WHERE fingerprint = ANY(?) AND copy_of IS NULL", ([fp for fp in fps if fp],),
                ).fetchall()} if any(fps) else {}
                firsts, copies, seen = [], [], set()
                for i, chunk in enumerate(e.chunks):
                    vector = None
                    if e.vectors is not None and dims:
                        vector = np.asarray(e.vectors[i], dtype=np.float32)
                        if np.isnan(vector).any():
                            vector = None  # not embedded: a copy of a passage held with its vector (to_embed)
                    fp = fps[i]
                    if fp is not None and (fp in held or fp in seen):
                        copies.append((i, chunk, fp, vector))
                        continue
                    if fp is not None:
                        seen.add(fp)
                    headings = " ".join(chunk.headings)
                    firsts.append((doc_id, i, chunk.text, json.dumps(chunk.headings, ensure_ascii=False), chunk.line,
                                   chunk.page, fp, f"{e.title}\n{headings}\n{chunk.text}",
                                   None if vector is None else _vector_text(vector)))
                if firsts:
                    cur = conn.raw.cursor()
                    cur.executemany(
                        f"INSERT INTO {s}.chunks(doc_id, ord, text, headings, line, page, fingerprint, tsv, embedding) "
                        f"VALUES (%s,%s,%s,%s,%s,%s,%s,to_tsvector('{CONFIG}', %s),%s::vector) RETURNING id, fingerprint",
                        firsts, returning=True,
                    )
                    while True:
                        row = cur.fetchone()
                        if row is not None and row[1] is not None:
                            held[row[1]] = (row[0], True)  # lent a vector below if it has none
                        if not cur.nextset():
                            break
                for i, chunk, fp, vector in copies:
                    first, _ = held[fp]
                    conn.execute(
                        f"INSERT INTO {s}.chunks(doc_id, ord, text, headings, line, page, fingerprint, copy_of, tsv) "
                        "VALUES (?,?,?,?,?,?,?,?,''::tsvector)",
                        (doc_id, i, chunk.text, json.dumps(chunk.headings, ensure_ascii=False), chunk.line, chunk.page,
                         fp, first),
                    )
                    if vector is not None:  # the first copy may lack one (its embedding changed)
                        conn.execute(f"UPDATE {s}.chunks SET embedding = ?::vector WHERE id=? AND embedding IS NULL",
                                     (_vector_text(vector), first))

    def to_embed(self, entries: list[Entry], embedded: set[str]) -> list[list[bool]]:
        """Which chunks of these entries need a vector (store.py's rule: not a passage held with its vector
        in a document these entries do not replace, nor one of `embedded`, which this adds to)."""
        replaced = {e.key for e in entries}
        has_vec = bool(self.dimensions)
        out = []
        for e in entries:
            flags = []
            for chunk in e.chunks:
                fp = fingerprint(e.kind, chunk.text)
                if fp is None:
                    flags.append(True)
                    continue
                flags.append(fp not in embedded and not (has_vec and self._held_with_vector(fp, replaced)))
                embedded.add(fp)
            out.append(flags)
        return out

    def unbacked(self, entries: list[Entry]) -> list[tuple[int, int]]:
        """(entry, chunk) positions left NaN by to_embed whose passage has, by now, no copy to lend a vector."""
        replaced = {e.key for e in entries}
        seen: set[str] = set()
        out = []
        for i, e in enumerate(entries):
            if e.vectors is None:
                continue
            for j, chunk in enumerate(e.chunks):
                fp = fingerprint(e.kind, chunk.text)
                if fp is None:
                    continue
                if np.isnan(e.vectors[j]).any() and fp not in seen and not self._held_with_vector(fp, replaced):
                    out.append((i, j))
                seen.add(fp)
        return out

    def _held_with_vector(self, fp: str, replaced: set[str]) -> bool:
        s = self.schema
        if self.db.one(f"SELECT 1 FROM {s}.chunks WHERE fingerprint=? AND copy_of IS NULL AND embedding IS NOT NULL",
                       (fp,)) is None:
            return False
        keys = self.db.query(
            f"SELECT d.key FROM {s}.chunks c JOIN {s}.documents d ON d.id = c.doc_id WHERE c.fingerprint=? LIMIT ?",
            (fp, len(replaced) + 1),
        )
        return any(r[0] not in replaced for r in keys)

    def remove(self, keys: Iterable[str]) -> int:
        removed = 0
        with self.db.transaction() as conn:
            for key in keys:
                removed += self._delete(conn, key)
        return removed

    def _delete(self, conn: Any, key: str) -> int:
        """Remove a document; where it held the first copy of a passage, the next copy in another document is
        answered instead (its own words, the same vector)."""
        s = self.schema
        row = conn.execute(f"SELECT id FROM {s}.documents WHERE key=?", (key,)).fetchone()
        if row is None:
            return 0
        doc_id = row[0]
        heirs = conn.execute(
            f"SELECT c.id, (SELECT min(k.id) FROM {s}.chunks k WHERE k.copy_of = c.id AND k.doc_id != c.doc_id) "
            f"FROM {s}.chunks c WHERE c.doc_id=? AND c.copy_of IS NULL AND c.fingerprint IS NOT NULL",
            (doc_id,),
        ).fetchall()
        for cid, hid in heirs:
            if hid is None:
                continue
            heir = conn.execute(
                f"SELECT c.text, c.headings, d.title FROM {s}.chunks c JOIN {s}.documents d ON d.id = c.doc_id "
                "WHERE c.id=?", (hid,),
            ).fetchone()
            words = f"{heir[2]}\n{' '.join(json.loads(heir[1]))}\n{heir[0]}"
            conn.execute(
                f"UPDATE {s}.chunks SET copy_of=NULL, tsv=to_tsvector('{CONFIG}', ?), "
                f"embedding=(SELECT embedding FROM {s}.chunks WHERE id=?) WHERE id=?",
                (words, cid, hid),
            )
            conn.execute(f"UPDATE {s}.chunks SET copy_of=? WHERE copy_of=? AND doc_id != ?", (hid, cid, doc_id))
        conn.execute(f"DELETE FROM {s}.documents WHERE id=?", (doc_id,))  # its chunks go with it
        return 1

    # -- search -------------------------------------------------------------------------------
    def keyword_ids(self, query: str, limit: int, exact: bool = False) -> list[int]:
        """Chunk ids by ts_rank over the candidates (all words, then a bounded share per word), best
        first; `exact` ranks every passage with any of the words."""
        words = query_words(query)
        if not words:
            return []
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
        conn = self.db.conn
        if id(conn.raw) not in _ef_set:  # once per connection, not a transaction per search
            conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
            _ef_set.add(id(conn.raw))
        return [r[0] for r in conn.execute(sql, params).fetchall()]

    def kinds(self, chunk_ids: list[int]) -> dict[int, str]:
        if not chunk_ids:
            return {}
        found = self.db.query(
            f"SELECT c.id, d.kind FROM {self.schema}.chunks c JOIN {self.schema}.documents d ON d.id = c.doc_id "
            "WHERE c.id = ANY(?)",
            (list(chunk_ids),),
        )
        return {r[0]: r[1] for r in found}

    def rows(self, chunk_ids: list[int]) -> dict[int, Row]:
        if not chunk_ids:
            return {}
        found = self.db.query(
            "SELECT c.id, c.text, c.headings, c.line, c.page, d.key, d.kind, d.label, d.title, d.attrs, "
            f"(SELECT count(DISTINCT k.doc_id) FROM {self.schema}.chunks k WHERE k.copy_of = c.id AND k.doc_id != c.doc_id) "
            f"AS also_in FROM {self.schema}.chunks c JOIN {self.schema}.documents d ON d.id = c.doc_id WHERE c.id = ANY(?)",
            (list(chunk_ids),),
        )
        return {
            r["id"]: Row(
                chunk_id=r["id"], key=r["key"], kind=r["kind"], label=r["label"], title=r["title"], text=r["text"],
                headings=json.loads(r["headings"]), line=r["line"], page=r["page"], attrs=json.loads(r["attrs"]),
                also_in=r["also_in"],
            )
            for r in found
        }


def _vector_text(vector: np.ndarray) -> str:
    """pgvector's text form: no adapter registration needed on the shared connections."""
    return "[" + ",".join(f"{x:.7g}" for x in vector.tolist()) + "]"


def _doc(row: Any) -> StoredDocument:
    return StoredDocument(
        key=row["key"], origin=row["origin"], kind=row["kind"], label=row["label"], title=row["title"], hash=row["hash"],
        attrs=json.loads(row["attrs"]), size=row["size"], chunks=row["chunks"], indexed_at=row["indexed_at"],
    )
