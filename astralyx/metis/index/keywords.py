"""A keyword sidecar of a base's chunks: `index.keywords.tantivy/` (tantivy, BM25 with top-k pruning).

FTS5 scores and sorts every passage that has any of the query's words (a third of a large base
for a typical question); tantivy's block-max WAND stops once the top k are certain. Derived from
the chunks in index.db like the vector sidecar (vectors.py): index.db counts its keyword changes
in `meta.keywords_generation`, and the sidecar stores the generation it reflects (with the
`index_id` of its index.db) in a document of its own, committed together with the change. A
sidecar not in step answers nothing; FTS5 does, while it is rebuilt in a background thread. That
build goes in steps of BUILD_STEP passages and, before each, lets the searches under way end (`pause`,
the sync's own yield: service.Index._yield_to_readers), so a search meets one step's work at most; the
writes made meanwhile are caught up aside too, and the sidecar is used only once it is whole.

Text is analysed as FTS5's `porter unicode61 remove_diacritics 2` does it (words of letters and
digits, lower case, accents folded, the original Porter stemmer of PyStemmer) before tantivy
sees it; title, headings and text are one field, as FTS5's bm25() counts a row; and each query
term is boosted so that its weight is FTS5's IDF, not Lucene's. tantivy keeps a passage's length
in one byte (exact to 40 terms, then buckets), which moved SciFact's nDCG@10 from FTS5's 0.688 to
0.687: so tantivy's best passages are scored again with FTS5's bm25() formula from their
exact terms (stored) and lengths (a fast field), which gives FTS5's order (0.689 on SciFact).
Used for a base of more than `core.index.keywords_from` passages (USE_FROM, 10,000); up to there
FTS5 answers in a few ms and nothing is built.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
import threading
import time
import unicodedata
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import tantivy

log = logging.getLogger("astralyx.metis")

SYNC_BUILD = 2000  # chunks up to which a (re)build is done in the caller's thread
# Passages a background build stems and adds between two looks at the searches under way, each time giving the GIL
# away too (time.sleep(0)): a thread that wants it meanwhile (a search before or after its ranking, whose wait the
# look does not cover) gets it within ~0.5 ms, not at Python's next switch interval (5 ms). Measured at 10,500
# passages while one loop searched: p95 19.6 ms looking every 8 passages, 11.1 ms with a time.sleep(0) every 4 too
# (13.0 ms after each passage, whose sleeps cost +60% to the build); 7.2 ms with no build.
BUILD_STEP = 4
PAGE = 256  # chunks a background build reads at a time (each read a step too: ~100 ms at 10,000 in one)
CATCH_UP = 3  # rounds a background build catches up with the writes made meanwhile before the last, in the lock
# A base of more passages than this is searched by the sidecar (None: never, and it is not kept).
# Up to there FTS5 answers in a few ms (its bm25() alone ~4 / 9 ms p50 / p95 at 10k here).
USE_FROM: int | None = 10_000
EXACT_DF = 20_000  # up to this many passages, a term's passages are counted live (a count costs ~0.1 ms there)
K1, B = 1.2, 0.75  # FTS5's bm25() constants
FORMAT = 2  # of the sidecar's documents: another is rebuilt (1: no stored terms, no length)
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# A stemmer per thread: a PyStemmer object keeps its work buffer and cache in the object and is not thread-safe
# (searches, syncs and sidecar builds stem at once).
_stemmers = threading.local()


def stems(text: str) -> list[str]:
    """The terms of a text as FTS5 makes them: letters and digits, lower case, no accents, Porter."""
    stemmer = getattr(_stemmers, "porter", None)
    if stemmer is None:
        import Stemmer

        stemmer = _stemmers.porter = Stemmer.Stemmer("porter")
    folded = "".join(c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c))
    return cast(list[str], stemmer.stemWords(_TOKEN.findall(folded)))
META_ID = -1  # the document that holds the sidecar's generation
WRITER_HEAP = 32_000_000

# A chunk as the keyword sidecar indexes it: title, headings joined, text.
Text = tuple[str, str, str]
# What a rebuild reads: (after, limit) -> (generation, [(chunk id, text)]): the chunks of ids above `after`, by id,
# at most `limit` (None: all), and the generation they are read at, in one snapshot of the index.
Snapshot = Callable[[int, int | None], tuple[int, list[tuple[int, Text]]]]


class _Closed(Exception):
    """The sidecar was closed while a build of it ran (its base deleted or reindexed): the build ends."""


def _no_pause() -> None:
    pass


def _schema() -> tantivy.Schema:
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_integer_field("id", stored=True, indexed=True, fast=True)
    sb.add_text_field("body", stored=True, tokenizer_name="terms")
    sb.add_integer_field("length", fast=True)  # terms in the passage, exactly
    sb.add_integer_field("generation", stored=True)
    sb.add_integer_field("format", stored=True)
    sb.add_text_field("index_id", stored=True, tokenizer_name="raw")
    return sb.build()


def _open(path: Path) -> tantivy.Index:
    import tantivy

    index = tantivy.Index(_schema(), path=str(path), reuse=True)
    # the terms come stemmed (stems()); tantivy only splits them
    index.register_tokenizer("terms", tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).build())
    return index


class _View:
    """One searcher with what FTS5's bm25() counts over the whole base: passages and their mean length."""

    def __init__(self, searcher: tantivy.Searcher) -> None:
        import tantivy

        self.searcher = searcher
        self.passages = searcher.num_docs - 1  # the generation's own document is no passage
        total = searcher.aggregate(tantivy.Query.all_query(), {"terms": {"sum": {"field": "length"}}})
        self.avgdl = max(float(total["terms"]["value"] or 0.0) / max(self.passages, 1), 1.0)


class KeywordSidecar:
    """tantivy over the chunks of one index.db, kept in step by generation number."""

    def __init__(self, path: Path, index_id: str, snapshot: Snapshot, count: Callable[[], int]) -> None:
        self.path = path
        self.index_id = index_id
        self.snapshot = snapshot
        self.count = count
        self.generation: int | None = None
        self._index: tantivy.Index | None = None
        self._view: _View | None = None
        self._lock = threading.RLock()
        self._building: threading.Thread | None = None
        self._pending: list[tuple[int, dict[int, Text | None]]] = []
        self._closed = False
        self._opened = False
        self.builds = 0
        self.answered = 0
        self.use_from = USE_FROM
        self._small_at: tuple[int, int] | None = None  # (generation, use_from) when last counted small
        # Between two steps of a background build: the index service sets it to let the searches under way end.
        self.pause: Callable[[], None] = _no_pause
        self.nice: int | None = None  # the OS priority of a background build (None: the sync jobs', jobs.NICE)

    @property
    def ready(self) -> bool:
        return self._index is not None and self.generation is not None and self._building is None

    @property
    def building(self) -> bool:
        """A (re)build under way (searches meanwhile are answered by FTS5)."""
        return self._building is not None

    # -- answering ----------------------------------------------------------------------------
    def search(self, words: list[str], limit: int, generation: int, oldest: int | None = None) -> list[int] | None:
        """Chunk ids by BM25 for any of `words`, or None when the sidecar is not in step (or the
        base is small enough for FTS5). `oldest`: a generation from which it may answer too (writes up to
        `generation` are being handed to it)."""
        if self.use_from is None:
            return None
        oldest = generation if oldest is None else oldest
        found = self._answer(words, limit, oldest, generation)
        current = self.generation
        if found is None and not (self.ready and current is not None and oldest <= current <= generation):
            self.ensure(generation)
            found = self._answer(words, limit, generation, generation)
        return found

    def _answer(self, words: list[str], limit: int, oldest: int, generation: int) -> list[int] | None:
        import tantivy

        current = self.generation
        if not self.ready or current is None or not oldest <= current <= generation:
            return None
        index, view = self._index, self._view
        if index is None or view is None or self.use_from is None or view.passages <= self.use_from:
            return None
        searcher, n = view.searcher, view.passages
        # each word's terms, as FTS5 makes a phrase of each word: two words with one stem count twice
        terms = [t for w in words for t in stems(w)]
        idf: dict[str, float] = {}
        should = []
        for term in dict.fromkeys(terms):
            query = tantivy.Query.term_query(index.schema, "body", term)
            # tantivy's doc_freq counts passages deleted since their segment was last merged: a small base
            # (where one replaced passage moves the IDF) counts the live ones; a large one takes doc_freq
            if n <= EXACT_DF:
                df = searcher.search(query, 1, count=True).count  # type: ignore[attr-defined]  # the stubs omit it
            else:
                df = searcher.doc_freq("body", term)
            df = min(df, n)
            if not df:
                continue
            # FTS5's IDF (a term in more than half the passages weighs ~nothing), over tantivy's
            idf[term] = max(math.log((n - df + 0.5) / (df + 0.5)), 1e-6)
            lucene = math.log(1 + (n - df + 0.5) / (df + 0.5))
            should.append((tantivy.Occur.Should, tantivy.Query.boost_query(query, terms.count(term) * idf[term] / lucene)))
        self.answered += 1
        if not should:
            return []
        hits = searcher.search(tantivy.Query.boolean_query(should), limit, count=False).hits
        addresses = [address for _, address in hits]
        scored = []
        for cid, address, length in zip(
            searcher.fast_field_values("id", addresses), addresses, searcher.fast_field_values("length", addresses),
            strict=True,
        ):
            if cid is None or cid == META_ID or not length:
                continue
            body = searcher.doc(address)["body"][0]
            norm = K1 * (1 - B + B * length / view.avgdl)
            score = 0.0
            for term in terms:  # FTS5's bm25(): Σ IDF · f·(k1+1) / (f + k1·(1 − b + b·|D|/avgdl))
                f = body.count(f" {term} ") if term in idf else 0
                if f:
                    score += idf[term] * f * (K1 + 1) / (f + norm)
            scored.append((-score, cast(int, cid)))  # the id field holds integers
        scored.sort()  # best first; equal scores by chunk id, as FTS5 meets them
        return [cid for _, cid in scored[:limit]]

    # -- keeping in step ----------------------------------------------------------------------
    def apply(self, generation: int, changes: dict[int, Text | None]) -> None:
        if self.use_from is None:
            return  # not in use: not kept either (turned on, it is rebuilt)
        with self._lock:
            if self._building is not None:
                self._pending.append((generation, changes))
                return
            if self._index is None and not self._opened:
                self._opened = True  # a write before the first search: the saved index, if it is in step
                self._load(generation - 1)
            if self._index is not None and self.generation is not None and generation <= self.generation:
                return  # had already (on PostgreSQL a replica's sidecar reads the change log too: pg_store.py)
            if self._index is None or self.generation != generation - 1:
                self.generation = None
                return
            try:
                self._commit(self._index, changes, generation)
                self.generation = generation
            except Exception:
                log.exception("updating the keyword sidecar %s failed; it is rebuilt", self.path)
                self.generation = None

    def _commit(self, index: tantivy.Index, changes: dict[int, Text | None], generation: int) -> None:
        self._write(index, changes.items(), generation)
        index.reload()
        self._view = _View(index.searcher())

    def _write(
        self, index: tantivy.Index, changes: Iterable[tuple[int, Text | None]], generation: int, pause: bool = False,
        fresh: bool = False,
    ) -> None:
        """The changes and the generation they bring, in one commit. `pause`: every BUILD_STEP passages, the
        searches under way end first (`self.pause`; the stemming is Python work that holds the GIL). `fresh`:
        an empty index, nothing to replace."""
        import tantivy

        writer = index.writer(heap_size=WRITER_HEAP, num_threads=1)
        try:
            for n, (cid, text) in enumerate(changes):
                if pause and n and not n % BUILD_STEP:
                    self.pause()
                    if self._closed:
                        raise _Closed
                    time.sleep(0)
                if not fresh:
                    writer.delete_documents_by_term("id", cid)
                if text is not None:
                    terms = stems("\n".join(text))
                    body = " " + "  ".join(terms) + " "  # " a  b " : str.count(" a ") counts each one
                    writer.add_document(tantivy.Document(id=cid, body=body, length=len(terms)))
            writer.delete_documents_by_term("id", META_ID)
            writer.add_document(
                tantivy.Document(id=META_ID, generation=generation, index_id=self.index_id, format=FORMAT, length=0)
            )
            writer.commit()
            writer.wait_merging_threads()
        except BaseException:
            writer.rollback()
            raise

    # -- loading and rebuilding -----------------------------------------------------------------
    def ensure(self, generation: int) -> None:
        """In step with index.db's `generation`: loaded if saved so, else rebuilt (in the background
        past SYNC_BUILD passages). Not for a base of at most `use_from` passages: FTS5 answers it in a
        few ms, and nothing is built or kept."""
        if self.use_from is None or (self._small_at == (generation, self.use_from) and not self.ready):
            return  # counted small at this generation: no need to count again
        try:
            small = self.count() <= self.use_from
        except Exception:
            small = True
        if small and not self.ready:
            self._small_at = (generation, self.use_from)
            return
        with self._lock:
            if self._closed or self._building is not None:
                return
            if self._index is not None and self.generation == generation:
                return
            if not self._opened:
                self._opened = True
                if self._load(generation):
                    return
            thread = threading.Thread(
                target=self._rebuild, kwargs={"background": True}, name=f"keywords:{self.path.parent.name}", daemon=True,
            )
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
            if meta.to_dict().get("format") != [FORMAT]:
                return False  # made by another version of this module
            view = _View(searcher)
        except Exception as e:
            log.warning("keyword sidecar %s unusable (%s): rebuilding", self.path, e)
            return False
        self._index, self._view, self.generation = index, view, generation
        return True

    def _rebuild(self, background: bool = False) -> None:
        """Built again, aside, from the chunks, then the writes made meanwhile (handed to `apply`, kept in
        `_pending`), then swapped in whole: searches use FTS5 until then. In the `background`, in steps that
        let the searches under way end: the chunks read a page at a time (from the generation of the first,
        the writes after it replayed: a page read later that has one already gets the same again), and the
        writes caught up outside the lock (a write's hand-over waits for it) but for those of the last round."""
        fresh = self.path.with_name(f".{self.path.name}.building")
        if background:  # a sync's work, at its jobs' priority (started by a search, it would be at the search's)
            from ..jobs import NICE, _lower_priority

            _lower_priority(NICE if self.nice is None else self.nice)  # (Linux: this thread, and tantivy's it starts)
        try:
            generation, first = self.snapshot(-1, PAGE if background else None)
            shutil.rmtree(fresh, ignore_errors=True)
            fresh.mkdir()  # not its parents: a folder removed meanwhile (its base deleted) is not made again
            index = _open(fresh)
            self._write(index, self._pages(first, background), generation, pause=background, fresh=True)
            for rounds in range(CATCH_UP + 1):
                with self._lock:
                    if self._closed:
                        shutil.rmtree(fresh, ignore_errors=True)
                        self._building = None
                        return
                    caught, changes = self._take_pending(generation)
                    if caught is None or not changes or not background or rounds == CATCH_UP:
                        if caught is not None and changes:
                            self._write(index, changes.items(), caught)  # the last few, the lock held
                        self._swap_in(fresh, caught)
                        return
                self._write(index, changes.items(), caught, pause=True)  # another round aside, the lock let go
                generation = caught
        except Exception:
            if not self._closed:  # else its index was closed meanwhile (the base deleted, or reindexed)
                log.exception("rebuilding the keyword sidecar %s failed; searches use FTS5", self.path)
            shutil.rmtree(fresh, ignore_errors=True)
            with self._lock:
                self._building = None
                self._index = self._view = None
                self.generation = None

    def _pages(self, first: list[tuple[int, Text]], background: bool) -> Iterator[tuple[int, Text | None]]:
        """The chunks, from the first page read on (all of them, not in the `background`), each next page after
        a pause."""
        page = first
        while True:
            yield from page
            if not background or len(page) < PAGE:
                return
            self.pause()
            if self._closed:
                raise _Closed
            _, page = self.snapshot(page[-1][0], PAGE)

    def _take_pending(self, generation: int) -> tuple[int | None, dict[int, Text | None]]:
        """(In the lock.) The writes handed over during a build, after `generation`, as one change: (the
        generation they bring, the passages they changed); (None, …) if one is missing (the sidecar is then
        not in step, and rebuilt at the next search)."""
        merged: dict[int, Text | None] = {}
        pending, self._pending = self._pending, []
        for gen, changes in sorted(pending, key=lambda p: p[0]):
            if gen <= generation:
                continue  # in the snapshot already
            if gen != generation + 1:
                return None, {}
            merged.update(changes)
            generation = gen
        return generation, merged

    def _swap_in(self, fresh: Path, generation: int | None) -> None:
        """(In the lock.) The folder built aside in the sidecar's place, in step with `generation`."""
        self._index = self._view = None
        old = self.path.with_name(f".{self.path.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        if self.path.exists():
            os.replace(self.path, old)
        os.replace(fresh, self.path)
        shutil.rmtree(old, ignore_errors=True)
        index = _open(self.path)
        self._index, self._view = index, _View(index.searcher())
        self.generation = generation
        self._building = None

    def wait(self, timeout: float | None = None) -> bool:
        thread = self._building
        if thread is not None and thread.is_alive():
            thread.join(timeout)
        return self.ready

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._index = self._view = None
            self.generation = None
