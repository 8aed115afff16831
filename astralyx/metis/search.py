"""Search a base: keyword ranking (BM25: FTS5, or past 10,000 passages its tantivy sidecar) and
vector ranking (the HNSW sidecar, or sqlite-vec's exact scan) fused by reciprocal rank fusion,
answered as numbered, cited passages within a budget.

    core.search.search(actor, "handbook", "vacation days") -> SearchResult, as JSON:
    {"knowledge_base": "handbook", "mode": "hybrid", "results": [
        {"ref": 1, "document": "docs:handbook/leave.md", "title": "Leave policy",
         "where": "Leave policy › Vacation › line 7", "text": "…"}]}

A passage that other documents of the base hold too (the same text) is indexed once and answered
with its first document and `"also_in": N`, the number of the others.

After fusion, what the question names moves passages up (cues.py): the person it asks about (a fact's
subject, a chat line's speaker) and the period (a fact said then, a passage dated then); its question
words are not searched by keywords. Fused with vectors, the keyword ranking counts for its first places
only (KEYWORD_PLACES). Notes numbered in a row (a chat saved turn by turn) are read in context: a note
near other notes found moves up, the keywords are searched again with the words the first hits share
(expand.py), and the answer shows a short note with the notes just before and after it (two on each
side), then the other notes found of that chat beside it, while the budget allows. In a memory, the
current facts found of one person said on one day are one passage (context.py).

A base without an embedding deployment (or whose vectors are not made yet) searches by
keywords alone and says so in `mode`. Re-ranking hooks by document kind
(`rerankers["memory"]`) reorder or filter the hits of that kind, e.g. current facts first.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..answers import Answer, absent
from ..auth.actor import Actor
from ..auth.roles import READ
from ..errors import Invalid
from .bases import KnowledgeBase, KnowledgeBases
from .context import grouped
from .cues import Cues, cues, dated_in, names_match, speaker
from .expand import FEEDBACK_HITS, FEEDBACK_WEIGHT, feedback_terms
from .index import Index
from .index.passages import Row
from .index.protocol import IndexStore

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger("astralyx.metis")

RRF_K = 60
MAX_RESULTS = 8
BUDGET_CHARS = 6000  # all passages' text together
CANDIDATES = 50  # taken from each ranking before fusion
# Fused with vectors, the keyword ranking counts for its first places only: past them a passage mostly shares one
# word of the question, and a passage both rankings put in their twenties outranked one the vectors put third (a
# paraphrase, no word in common). Measured on LoCoMo's dev half: facts open-domain 0.58 → 0.63 (the vectors' own
# 0.63), turns temporal 0.94 → 0.97 (bench/locomo_search.py).
KEYWORD_PLACES = 10
# After fusion, in RRF units (a first place in one ranking is 1/61): a passage by or about a person the
# question names, and one said or dated in the period it asks about, move up (cues.py). Measured on
# LoCoMo's dev half (bench/locomo_search.py).
NAME_BONUS = 1.0 / (RRF_K + 1)
DATE_BONUS = 1.0 / (RRF_K + 1)
# Notes numbered in a row (a chat saved turn by turn: turn-7.md, turn-8.md) are read in context: a note
# gets this share of the fused score of the notes numbered one before and one after it, when they are found.
NEIGHBOURED = frozenset({"notes", "saved"})
NEIGHBOUR_SHARE = 0.5
CONTEXT_CHARS = 400  # a numbered note this short is shown with its neighbours (search_in)
CONTEXT_NOTES = 2  # how many on each side (the nearest of every hit first), while the budget allows
_NUMBERED = re.compile(r"^(.*?)(\d+)(\.\w+)?$")
MAX_QUERY_CHARS = 2000
MIN_TAIL = 200  # a passage cut to fit the budget keeps at least this much, else it is left out
QUERY_CACHE_SECONDS = 60.0  # a repeated query within this time reuses its embedding
QUERY_CACHE_SIZE = 256

# The keyword ranking runs here while the caller embeds the query and ranks by vectors
# (SQLite lets go of the GIL while it works).
_keywords_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="astralyx-keywords")


@dataclass
class Hit:
    """One passage found, with what its document keeps (attrs) for re-ranking hooks."""

    chunk_id: int
    document: str
    title: str
    where: str
    text: str
    kind: str
    key: str
    attrs: dict[str, Any] = field(default_factory=dict)
    score: float = 0.0
    keyword_rank: int | None = None
    vector_rank: int | None = None
    also_in: int = 0  # other documents holding the same passage (indexed once)
    shown_with: list[str] = field(default_factory=list)  # the documents of the other lines its text shows

    @classmethod
    def of(cls, row: Row, score: float, keyword_rank: int | None, vector_rank: int | None) -> Hit:
        return cls(
            chunk_id=row.chunk_id, document=row.label, title=row.title, where=row.where, text=row.text, kind=row.kind,
            key=row.key, attrs=row.attrs, score=score, keyword_rank=keyword_rank, vector_rank=vector_rank,
            also_in=row.also_in,
        )


class Passage(Answer):
    """One passage of a search's answer."""

    ref: int = Field(description="The passage's number, to cite it as [1]")
    document: str = Field(description="Its document, e.g. docs:handbook/leave.md")
    title: str
    where: str = Field(description="Headings › line, or the page")
    text: str
    also_in: int | None = absent("How many other documents of the base hold this same passage (answered once, with its "
                                 "first document)")
    with_documents: list[str] | None = absent("The documents of the other lines this passage shows, in the order of "
                                              "its lines: facts said together, the turns around a chat's line")


class SearchResult(Answer):
    """A search's answer: at most 8 numbered passages, about 6,000 characters in all."""

    knowledge_base: str
    mode: str = Field(description="hybrid, or keywords when the base has no vectors (yet)")
    results: list[Passage]


# hook(base, hits of its kind in fused order, as_of, query) -> the hits to keep, in the order to show them
Reranker = Callable[[KnowledgeBase, list[Hit], "str | None", str], list[Hit]]


def fusing(keyword_ids: list[int], vector_ids: list[int]) -> list[list[int]]:
    """The rankings a search fuses: both (the keywords' first KEYWORD_PLACES), or the one there is, whole."""
    if keyword_ids and vector_ids:
        return [keyword_ids[:KEYWORD_PLACES], vector_ids]
    return [r for r in (keyword_ids, vector_ids) if r]


def rrf(rankings: list[list[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal rank fusion: score(d) = Σ 1 / (k + rank), ranks from 1; ties keep first-seen order."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda kv: -kv[1])


class Search:
    def __init__(self, bases: KnowledgeBases, index: Index, rerankers: dict[str, Reranker] | None = None) -> None:
        self.bases = bases
        self.index = index
        self.rerankers: dict[str, Reranker] = dict(rerankers or {})  # by passage kind (core.py: "memory")
        self._vectors: OrderedDict[tuple[str, str], tuple[float, np.ndarray]] = OrderedDict()  # (embedding, query)
        self._vectors_lock = threading.Lock()

    def search(
        self, actor: Actor, base_name: str, query: str, max_results: int = MAX_RESULTS, as_of: str | None = None
    ) -> SearchResult:
        """The tools doc's answer: at most 8 numbered passages, about 6,000 characters in all."""
        actor.require(READ)
        base = self.bases.get(actor, base_name)
        return self.search_in(base, query, max_results, as_of)

    def search_in(
        self, base: KnowledgeBase, query: str, max_results: int = MAX_RESULTS, as_of: str | None = None
    ) -> SearchResult:
        if not isinstance(query, str) or not query.strip():
            raise Invalid("Give a query: the words or question to search for", code="INVALID_QUERY")
        if len(query) > MAX_QUERY_CHARS:
            raise Invalid(f"The query is longer than {MAX_QUERY_CHARS} characters: shorten it", code="INVALID_QUERY")
        if not isinstance(max_results, int) or isinstance(max_results, bool) or max_results < 1:
            raise Invalid("max_results is a whole number from 1 to 8", code="INVALID_QUERY")
        limit = min(max_results, MAX_RESULTS)
        mode, hits = self.hits(base, query, limit=max(CANDIDATES, limit), as_of=as_of, answer=limit)
        found = passages(self._in_context(base, hits, limit), limit)
        return SearchResult.model_construct(knowledge_base=base.name, mode=mode, results=found)

    def _in_context(self, base: KnowledgeBase, found: list[Hit], limit: int) -> list[Hit]:
        """The first `limit` hits, a short note numbered in a row (a chat saved turn by turn) shown with the notes
        numbered just before and after it, two on each side (what was asked, what was answered): a hit next to
        one shown before it is not shown again, its place goes to the next. The neighbours are read from their
        files, as the index reads them, while the answer stays within its budget. In a memory, the current facts
        found of one person said on one day are one passage (context.py)."""
        found = grouped(found, limit, BUDGET_CHARS)
        hits: list[Hit] = []
        nearby: set[str] = set()
        for hit in found:
            if len(hits) == limit:
                break
            if hit.key in nearby:
                continue
            hits.append(hit)
            m = self._numbered(hit)
            if m is not None:
                nearby.update(_neighbour(m, n) for n in (int(m[2]) - 1, int(m[2]) + 1))
        shown = {h.key for h in hits}
        said = {h.text for h in hits}  # a line said again elsewhere ("Thanks!") is shown once
        room = BUDGET_CHARS - sum(len(h.text) for h in hits)
        numbered = [(hit, m) for hit in hits if (m := self._numbered(hit)) is not None]
        around: dict[int, dict[int, tuple[str, str]]] = {id(hit): {} for hit, _ in numbered}  # line → (document, text)
        for distance in range(1, CONTEXT_NOTES + 1):  # the nearest of every hit first, while there is room
            for hit, m in numbered:
                at, mine = int(m[2]), around[id(hit)]
                for n in (at - distance, at + distance):
                    if distance > 1 and n + (1 if n < at else -1) not in mine:
                        continue  # a gap: the context is a stretch of the conversation
                    key = _neighbour(m, n)
                    note = None if key in shown or n < 0 else self._short_note(base, key)
                    if note is not None and note[1] not in said and len(note[1]) + 1 <= room:
                        room -= len(note[1]) + 1
                        said.add(note[1])
                        mine[n] = note
        # Then the other notes found of the same series (the same chat), each beside the hit shown nearest to it
        # in that chat, while there is room: the conversation came back to what was asked ("…" marks the gap).
        for other in found if numbered else ():
            o = self._numbered(other)
            if o is None or other.key in shown or other.text in said or len(other.text) + 3 > room:
                continue
            at = int(o[2])
            near = min(((abs(int(m[2]) - at), i) for i, (_, m) in enumerate(numbered) if m[1] == o[1]), default=None)
            if near is not None:
                room -= len(other.text) + 3
                said.add(other.text)
                around[id(numbered[near[1]][0])][at] = (other.document, other.text)
        for hit, m in numbered:
            mine = around[id(hit)]
            if mine:
                mine[int(m[2])] = (hit.document, hit.text)
                lines = sorted(mine)
                hit.text = "\n".join(mine[n][1] if i == 0 or n == lines[i - 1] + 1 else f"…\n{mine[n][1]}"
                                     for i, n in enumerate(lines))
                hit.shown_with = [mine[n][0] for n in lines if n != int(m[2])]  # cited with the hit's own document
        return hits

    @staticmethod
    def _numbered(hit: Hit) -> re.Match[str] | None:
        """A short note whose name ends in a number: read in context."""
        return _NUMBERED.match(hit.key) if hit.kind in NEIGHBOURED and len(hit.text) <= CONTEXT_CHARS else None

    def _short_note(self, base: KnowledgeBase, key: str) -> tuple[str, str] | None:
        """The document and text of a note of one short passage (key: its path in the base's folder), or None."""
        reader = self.index.reader_for(key)
        try:
            data = (base.folder / key).read_bytes()
        except OSError:  # no such note (or it just went): no context
            return None
        document = reader(base, key, data) if reader is not None else None
        if document is None or len(document.chunks) != 1 or len(document.chunks[0].text) > CONTEXT_CHARS:
            return None
        return document.label, document.chunks[0].text

    def hits(
        self, base: KnowledgeBase, query: str, limit: int = CANDIDATES, as_of: str | None = None, mode: str | None = None,
        answer: int | None = None,
    ) -> tuple[str, list[Hit]]:
        """Fused hits, best first (re-ranking hooks applied). mode: None (the base's best),
        "keywords" or "vectors" (to measure each part alone). answer: only the first this many
        are wanted (their rows alone are read, unless a hook re-ranks their kind)."""
        # a sync of the base yields to it; a reindex or the base's deletion closes its index once it ends
        with self.index.reading(), self.index.using(base) as store:
            return self._hits(base, store, query, limit, as_of, mode, answer)

    def _hits(
        self, base: KnowledgeBase, store: IndexStore, query: str, limit: int, as_of: str | None, mode: str | None,
        answer: int | None,
    ) -> tuple[str, list[Hit]]:
        depth = max(limit, CANDIDATES)
        vector_ids: list[int] = []
        used = "keywords"
        cue = cues(query)
        # In a memory, whom a question names is each fact's subject (its bonus, below): the keywords search the
        # topic, not the name every fact of that person holds. Elsewhere a name may be the topic itself.
        words = cue.topic_query if base.kind == "memory" else cue.keyword_query
        keywords = None if mode == "vectors" else _keywords_pool.submit(store.keyword_ids, words, depth, self.index.exact)
        if mode != "keywords":
            vector = self._query_vector(base, store, query)
            if vector is not None:
                vector_ids = store.vector_ids(vector, depth, exact=self.index.exact)
                used = "hybrid"
        keyword_ids = [] if keywords is None else keywords.result()
        if mode == "vectors":
            used = "vectors"
        k_rank = {cid: i for i, cid in enumerate(keyword_ids, start=1)}
        v_rank = {cid: i for i, cid in enumerate(vector_ids, start=1)}
        # Only the best `limit` of the fused candidates count (the cues and hooks re-rank within them); rows
        # are read for the ones answered, or for all when a cue or a hook re-ranks among them.
        fused = rrf(fusing(keyword_ids, vector_ids))[:limit]
        if answer is not None and answer < len(fused) and not cue.any:
            kinds = store.kinds([cid for cid, _ in fused])
            if not any(kind in self.rerankers or kind in NEIGHBOURED for kind in kinds.values()):
                fused = [(cid, score) for cid, score in fused if cid in kinds][:answer]
        rows = store.rows([cid for cid, _ in fused])
        hits = [Hit.of(rows[cid], score, k_rank.get(cid), v_rank.get(cid)) for cid, score in fused if cid in rows]
        hits = boost(hits, cue, NEIGHBOUR_SHARE)
        if mode != "vectors" and _chat_like(hits[:FEEDBACK_HITS]):
            hits = self._feedback(store, words, hits, depth)
        hits = self._rerank(base, hits, as_of, query)
        return used, hits[:limit]

    def _feedback(self, store: IndexStore, words: str, hits: list[Hit], depth: int) -> list[Hit]:
        """The keywords searched again with the words the first hits share (expand.py): a hit that ranking finds
        gains its share at its weight, as in the fusion (only the candidates found count: none is added)."""
        terms = feedback_terms([h.text for h in hits[:FEEDBACK_HITS]], words)
        if not terms:
            return hits
        again = store.keyword_ids(f"{words} {' '.join(terms)}", depth, self.index.exact)
        a_rank = {cid: i for i, cid in enumerate(again, start=1)}
        for hit in hits:
            if hit.chunk_id in a_rank:
                hit.score += FEEDBACK_WEIGHT / (RRF_K + a_rank[hit.chunk_id])
        return sorted(hits, key=lambda h: -h.score)

    def _query_vector(self, base: KnowledgeBase, store: IndexStore, query: str) -> np.ndarray | None:
        if base.spec.embedding is None:
            return None
        if not store.dimensions:
            return None  # no vectors yet (never synced with this embedding)
        try:
            embedder = self.index.embedder_for(base)
        except Exception as e:  # the embedding model is down: keywords still answer
            log.warning("search of %s/%s by keywords only: %s", base.workspace, base.name, e)
            return None
        if embedder is None or self.index.embedding_identity(base, embedder) != store.embedding:
            return None  # vectors of another embedding: until the base is synced again
        key = (store.embedding or "", query)
        now = time.monotonic()
        with self._vectors_lock:
            cached = self._vectors.get(key)
            if cached is not None and now - cached[0] < QUERY_CACHE_SECONDS:
                return cached[1]
        try:
            vector = embedder.embed_query(query)
        except Exception as e:
            log.warning("search of %s/%s by keywords only: %s", base.workspace, base.name, e)
            return None
        with self._vectors_lock:
            self._vectors[key] = (now, vector)
            self._vectors.move_to_end(key)
            while len(self._vectors) > QUERY_CACHE_SIZE:
                self._vectors.popitem(last=False)
        return vector

    def _rerank(self, base: KnowledgeBase, hits: list[Hit], as_of: str | None, query: str) -> list[Hit]:
        """Each hook reorders/filters its kind's hits inside the slots that kind holds."""
        for kind, hook in self.rerankers.items():
            mine = [h for h in hits if h.kind == kind]
            if not mine and as_of is None:  # with as_of, the hook still checks it: no hits is no excuse
                continue
            ranked = iter(hook(base, mine, as_of, query))
            merged: list[Hit] = []
            for h in hits:
                if h.kind != kind:
                    merged.append(h)
                    continue
                nxt = next(ranked, None)
                if nxt is not None:
                    merged.append(nxt)
            merged.extend(ranked)
            hits = merged
        return hits


def _neighbour(m: re.Match[str], n: int) -> str:
    """The path of the note numbered n beside a numbered one (turn-07.md's are turn-06.md and turn-08.md)."""
    width = len(m[2]) if m[2].startswith("0") else 0
    return f"{m[1]}{n:0{width}d}{m[3] or ''}"


def _chat_like(hits: list[Hit]) -> bool:
    """Are most of these hits short notes numbered in a row (a chat saved turn by turn)?"""
    chat = sum(1 for h in hits if h.kind in NEIGHBOURED and len(h.text) <= CONTEXT_CHARS and _NUMBERED.match(h.key))
    return 2 * chat > len(hits)


def boost(hits: list[Hit], cue: Cues, neighbour_share: float = 0.0) -> list[Hit]:
    """The fused hits again, a passage by or about a person the question names and one said or dated in the
    period it asks about moved up by their bonus, a numbered note by a share of its found neighbours' scores
    (ties keep the fused order)."""
    numbered: dict[tuple[str, int], Hit] = {}
    if neighbour_share:
        for hit in hits:
            # Short notes only, as in the answer's context: turns of a chat, not numbered chapters or rules.
            m = _NUMBERED.match(hit.key) if hit.kind in NEIGHBOURED and len(hit.text) <= CONTEXT_CHARS else None
            if m:
                numbered.setdefault((m[1], int(m[2])), hit)
    if not cue.any and len(numbered) < 2:
        return hits
    fused = {id(h): h.score for h in hits}
    for (stem, n), hit in numbered.items():
        for other in (numbered.get((stem, n - 1)), numbered.get((stem, n + 1))):
            if other is not None:
                hit.score += neighbour_share * fused[id(other)]
    for hit in hits:
        if cue.names and names_match(speaker(hit), cue.names):
            hit.score += NAME_BONUS
        if cue.period is not None and dated_in(hit, cue.period):
            hit.score += DATE_BONUS
    return sorted(hits, key=lambda h: -h.score)


def passages(hits: list[Hit], limit: int = MAX_RESULTS, budget: int = BUDGET_CHARS) -> list[Passage]:
    """Numbered passages, at most `limit`, their texts within `budget` characters together."""
    results: list[Passage] = []
    used = 0
    for hit in hits:
        if len(results) >= limit:
            break
        text = hit.text
        room = budget - used
        if len(text) > room:
            if room < MIN_TAIL:
                break
            text = _cut(text, room)
        used += len(text)
        # also_in: the same passage in other documents, answered once with its first document (left out when none).
        results.append(Passage.model_construct(ref=len(results) + 1, document=hit.document, title=hit.title,
                                               where=hit.where, text=text, also_in=hit.also_in or None,
                                               with_documents=hit.shown_with or None))
    return results


def _cut(text: str, room: int) -> str:
    """At most `room` characters, ending at a word boundary, marked with an ellipsis."""
    cut = text[: room - 1]
    space = cut.rfind(" ")
    if space > room // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"
