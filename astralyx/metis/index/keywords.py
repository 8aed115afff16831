"""A keyword sidecar of a base's chunks: `index.keywords.tantivy/` (tantivy, BM25 with top-k pruning).

FTS5 scores and sorts every passage that has any of the query's words (a third of a large base
for a typical question); tantivy's block-max WAND stops once the top k are certain. Derived from
the chunks in index.db like the vector sidecar (vectors.py): index.db counts its keyword changes
in `meta.keywords_generation`, and the sidecar stores the generation it reflects (with the
`index_id` of its index.db) in a document of its own, committed together with the change. A
sidecar not in step answers nothing; FTS5 does, while it is rebuilt in a background thread.

Text is analysed as FTS5 did it (words of letters and digits, lower case, accents folded,
English stemming) and title, headings and text are one field, as FTS5's bm25() counts a row.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger("astralyx.metis")

SYNC_BUILD = 2000  # chunks up to which a (re)build is done in the caller's thread
# Passages from which searches use the sidecar. Below, FTS5 answers in a few ms and its ranking
# stays the one the base always had; the sidecar is kept in step all the same.
USE_FROM = 20_000
META_ID = -1  # the document that holds the sidecar's generation
WRITER_HEAP = 32_000_000

# A chunk as the keyword sidecar indexes it: title, headings joined, text.
Text = tuple[str, str, str]
# What a rebuild reads: (generation, [(chunk id, text)]) from one snapshot of index.db.
Snapshot = Callable[[], tuple[int, list[tuple[int, Text]]]]


def _schema():
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("id", stored=True, indexed=True, fast=True)
    sb.add_text_field("body", stored=False, tokenizer_name="astralyx")
    sb.add_integer_field("generation", stored=True)
    sb.add_text_field("index_id", stored=True, tokenizer_name="raw")
    return sb.build()


def _open(path: Path):
    import tantivy

    T, F = tantivy.Tokenizer, tantivy.Filter
    index = tantivy.Index(_schema(), path=str(path), reuse=True)
    analyzer = (
        tantivy.TextAnalyzerBuilder(T.regex(r"[\p{L}\p{N}]+"))
        .filter(F.remove_long(64)).filter(F.lowercase()).filter(F.ascii_fold()).filter(F.stemmer("english"))
        .build()
    )
    index.register_tokenizer("astralyx", analyzer)
    return index


class KeywordSidecar:
    """tantivy over the chunks of one index.db, kept in step by generation number."""

    def __init__(self, path: Path, index_id: str, snapshot: Snapshot, count: Callable[[], int]) -> None:
        self.path = path
        self.index_id = index_id
        self.snapshot = snapshot
        self.count = count
        self.generation: int | None = None
        self._index = None
        self._searcher = None
        self._lock = threading.RLock()
        self._building: threading.Thread | None = None
        self._pending: list[tuple[int, dict[int, Text | None]]] = []
        self._closed = False
        self._opened = False
        self.builds = 0
        self.answered = 0
        self.use_from = USE_FROM

    @property
    def ready(self) -> bool:
        return self._index is not None and self.generation is not None and self._building is None

    # -- answering ----------------------------------------------------------------------------
    def search(self, words: list[str], limit: int, generation: int) -> list[int] | None:
        """Chunk ids by BM25 for any of `words`, or None when the sidecar is not in step (or the
        base is small enough for FTS5)."""
        found = self._answer(words, limit, generation)
        if found is None and not (self.ready and self.generation == generation):
            self.ensure(generation)
            found = self._answer(words, limit, generation)
        return found

    def _answer(self, words: list[str], limit: int, generation: int) -> list[int] | None:
        if not self.ready or self.generation != generation:
            return None
        index, searcher = self._index, self._searcher
        if index is None or searcher is None or searcher.num_docs <= self.use_from:
            return None
        if not words:
            return []
        # the words are \w+ runs, quoted: nothing of them is query syntax
        query = index.parse_query(" ".join(f'"{w}"' for w in words), ["body"])
        hits = searcher.search(query, limit, count=False).hits
        ids = searcher.fast_field_values("id", [address for _, address in hits])
        self.answered += 1
        return [i for i in ids if i is not None and i != META_ID]

    # -- keeping in step ----------------------------------------------------------------------
    def apply(self, generation: int, changes: dict[int, Text | None]) -> None:
        with self._lock:
            if self._building is not None:
                self._pending.append((generation, changes))
                return
            if self._index is None or self.generation != generation - 1:
                self.generation = None
                return
            try:
                self._commit(self._index, changes, generation)
                self.generation = generation
            except Exception:
                log.exception("updating the keyword sidecar %s failed; it is rebuilt", self.path)
                self.generation = None

    def _commit(self, index, changes: dict[int, Text | None], generation: int) -> None:
        import tantivy

        writer = index.writer(heap_size=WRITER_HEAP, num_threads=1)
        try:
            for cid, text in changes.items():
                writer.delete_documents_by_term("id", cid)
                if text is not None:
                    writer.add_document(tantivy.Document(id=cid, body="\n".join(text)))
            writer.delete_documents_by_term("id", META_ID)
            writer.add_document(tantivy.Document(id=META_ID, generation=generation, index_id=self.index_id))
            writer.commit()
            writer.wait_merging_threads()
        except BaseException:
            writer.rollback()
            raise
        index.reload()
        self._searcher = index.searcher()

    # -- loading and rebuilding -----------------------------------------------------------------
    def ensure(self, generation: int) -> None:
        with self._lock:
            if self._closed or self._building is not None:
                return
            if self._index is not None and self.generation == generation:
                return
            if not self._opened:
                self._opened = True
                if self._load(generation):
                    return
            thread = threading.Thread(target=self._rebuild, name=f"keywords:{self.path.parent.name}", daemon=True)
            self._building = thread
            self._pending.clear()
            self.builds += 1
        try:
            small = self.count() <= SYNC_BUILD
        except Exception:
            small = False
        if small:
            self._rebuild()
        else:
            thread.start()

    def _load(self, generation: int) -> bool:
        if not self.path.is_dir():
            return False
        try:
            import tantivy

            index = _open(self.path)
            searcher = index.searcher()
            hits = searcher.search(tantivy.Query.term_query(index.schema, "id", META_ID), 1).hits
            if not hits:
                return False
            meta = searcher.doc(hits[0][1])
            if meta["index_id"] != [self.index_id] or meta["generation"] != [generation]:
                return False
        except Exception as e:
            log.warning("keyword sidecar %s unusable (%s): rebuilding", self.path, e)
            return False
        self._index, self._searcher, self.generation = index, searcher, generation
        return True

    def _rebuild(self) -> None:
        fresh = self.path.with_name(f".{self.path.name}.building")
        try:
            generation, chunks = self.snapshot()
            shutil.rmtree(fresh, ignore_errors=True)
            fresh.mkdir(parents=True)
            index = _open(fresh)
            self._commit(index, dict(chunks), generation)
            with self._lock:
                if self._closed:
                    self._building = None
                    return
                self._index = self._searcher = None
                old = self.path.with_name(f".{self.path.name}.old")
                shutil.rmtree(old, ignore_errors=True)
                if self.path.exists():
                    os.replace(self.path, old)
                os.replace(fresh, self.path)
                shutil.rmtree(old, ignore_errors=True)
                index = _open(self.path)
                self._index, self._searcher = index, index.searcher()
                for gen, changes in self._pending:
                    if gen <= generation:
                        continue
                    if gen != generation + 1:
                        generation = -1
                        break
                    self._commit(index, changes, gen)
                    generation = gen
                self._pending.clear()
                self.generation = generation if generation >= 0 else None
                self._building = None
        except Exception:
            log.exception("rebuilding the keyword sidecar %s failed; searches use FTS5", self.path)
            shutil.rmtree(fresh, ignore_errors=True)
            with self._lock:
                self._building = None
                self._index = self._searcher = None
                self.generation = None

    def wait(self, timeout: float | None = None) -> bool:
        thread = self._building
        if thread is not None and thread.is_alive():
            thread.join(timeout)
        return self.ready

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._index = self._searcher = None
            self.generation = None
