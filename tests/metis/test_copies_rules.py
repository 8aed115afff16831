"""The identical-passage rules (metis/index/copies.py), on their own and as both stores carry them out.

For any order of writes and removes: each text a base holds is searched once, by its holder, which is its oldest
passage (the first of the earliest document still holding it); every copy points at it; a holder whose text came
with a vector has one. A sync embeds each text once, and never one held with its vector elsewhere.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from astralyx.metis.chunking import Chunk
from astralyx.metis.index import copies
from astralyx.metis.index.passages import Entry, fingerprint
from astralyx.metis.index.pg_store import PgIndexStore
from astralyx.metis.index.sqlite_store import SqliteIndexStore

TEXTS = ["Ferris is the mascot.", "Run rustup.", "A value has one owner.", "Borrowing is checked."]
DOCS = ["a.md", "b.md", "c.md", "d.md"]

# A document: its passages (an index into TEXTS, whether it comes with a vector); an operation: write or remove one.
passage = st.tuples(st.integers(0, len(TEXTS) - 1), st.booleans())
write = st.tuples(st.just("write"), st.sampled_from(DOCS), st.lists(passage, min_size=1, max_size=4))
remove = st.tuples(st.just("remove"), st.sampled_from(DOCS), st.just([]))
operations = st.lists(st.one_of(write, remove), min_size=1, max_size=12)


def fp(text: int) -> str:
    found = fingerprint("docs", TEXTS[text])
    assert found is not None
    return found


# -- the rules over plain data --------------------------------------------------------------------------------
class Model:
    """A store of passages in memory that does what the stores do in SQL, with copies.place and copies.successors."""

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        # id → [document, fingerprint, holder id (None: it is the holder), has a vector, place in the document]
        self.passages: dict[int, list] = {}

    def remove(self, doc: str) -> None:
        mine = [i for i, p in self.passages.items() if p[0] == doc]
        holders = [i for i in mine if self.passages[i][2] is None]
        pairs = [(i, p[2]) for i, p in self.passages.items() if p[2] in holders and p[0] != doc]
        for holder, heir in copies.successors(pairs).items():
            self.passages[heir][2] = None
            self.passages[heir][3] = self.passages[holder][3]
            for p in self.passages.values():
                if p[2] == holder and p[0] != doc:
                    p[2] = heir
        for i in mine:
            del self.passages[i]

    def write(self, doc: str, passages: list[tuple[int, bool]]) -> None:
        self.remove(doc)
        prints = [fp(t) for t, _ in passages]
        held = {p[1]: copies.Holder(i, p[3]) for i, p in self.passages.items() if p[2] is None}
        placed = copies.place(prints, [v for _, v in passages], held)
        holder_of = {f: h.id for f, h in held.items()}
        copy_at = {c.position: c for c in placed.copies}
        for n, f in enumerate(prints):
            i = next(self.ids)
            copy = copy_at.get(n)
            if copy is None:
                self.passages[i] = [doc, f, None, passages[n][1], n]
                holder_of[f] = i
            else:
                self.passages[i] = [doc, f, holder_of[f], False, n]
                if copy.gives_vector:
                    self.passages[holder_of[f]][3] = True


def check(passages: dict[int, list], brought: set[str]) -> None:
    """The invariants, over id → (document, fingerprint, holder id or None, has a vector)."""
    by_text: dict[str, list[int]] = {}
    for i, p in passages.items():
        by_text.setdefault(p[1], []).append(i)
    for text, ids in by_text.items():
        holders = [i for i in ids if passages[i][2] is None]
        assert holders == [min(ids)], "one holder, the oldest passage"
        assert all(passages[i][2] == holders[0] for i in ids if i != holders[0]), "every copy points at it"
        if text in brought:
            assert passages[holders[0]][3], "a text that came with a vector keeps one"
        assert not any(passages[i][3] for i in ids if i != holders[0]), "copies have no vector of their own"


def brought_vectors(history: list[tuple[str, str, list]], docs_now: set[str]) -> set[str]:
    """The texts held now that were written with a vector at some time since their passages were last all gone."""
    brought: set[str] = set()
    held: dict[str, set[str]] = {}  # text → documents holding it
    for op, doc, passages in history:
        for text in list(held):
            held[text].discard(doc)
            if not held[text]:
                del held[text]
                brought.discard(text)
        if op == "write":
            for t, vector in passages:
                held.setdefault(fp(t), set()).add(doc)
                if vector:
                    brought.add(fp(t))
    return {t for t in brought if held.get(t, set()) & docs_now}


@given(operations)
def test_any_order_of_writes_and_removes_keeps_one_holder_the_oldest_with_its_vector(ops) -> None:
    model = Model()
    history: list[tuple[str, str, list]] = []
    for op, doc, passages in ops:
        model.write(doc, passages) if op == "write" else model.remove(doc)
        history.append((op, doc, passages))
        check(model.passages, brought_vectors(history, {p[0] for p in model.passages.values()}))


def test_a_holder_without_a_vector_takes_the_first_copys_once() -> None:
    held = {fp(0): copies.Holder(7, False)}
    placed = copies.place([fp(0), fp(1), fp(0), fp(1), None], [True, False, True, True, True], held)
    assert placed.new == [1, 4]  # a new text, and a passage never merged
    assert [(c.position, c.gives_vector) for c in placed.copies] == [(0, True), (2, False), (3, True)]


def test_successors_are_the_oldest_copies() -> None:
    assert copies.successors([(12, 3), (9, 3), (15, 4)]) == {3: 9, 4: 15}
    assert copies.successors([]) == {}


@given(st.lists(st.lists(st.one_of(st.none(), st.sampled_from(TEXTS)), max_size=5), max_size=6),
       st.sets(st.sampled_from(TEXTS)))
def test_a_sync_embeds_each_text_once_and_none_held_with_its_vector(batches, held_texts) -> None:
    held = {f for t in held_texts if (f := fingerprint("docs", t))}
    embedded: set[str] = set()
    times: dict[str, int] = {}
    for batch in batches:  # each batch one document of a sync, in order
        prints = [[None if t is None else fingerprint("docs", t) for t in batch]]
        (flags,) = copies.needs_vector(prints, embedded, held)
        for f, flag in zip(prints[0], flags, strict=True):
            assert flag if f is None else flag == (f not in held and not times.get(f)), "embedded once, never held"
            if f is not None and flag:
                times[f] = times.get(f, 0) + 1
    assert all(n == 1 for n in times.values())


def test_a_passage_left_unembedded_is_missing_only_when_nothing_gives_it_a_vector() -> None:
    prints = [[fp(0), fp(1)], [fp(0)], [fp(2)]]
    nans = [[False, True], [True], None]
    assert copies.left_without_vector(prints, nans, {fp(1)}) == []  # fp(0) embedded before it; fp(1) held
    assert copies.left_without_vector(prints, nans, set()) == [(0, 1)]  # fp(1)'s holder went meanwhile
    assert copies.left_without_vector([[fp(1)], [fp(1)]], [[True], [True]], set()) == [(0, 0)]  # once: the 2nd copies it


# -- the same rules as each store carries them out ------------------------------------------------------------
@pytest.fixture(params=["sqlite", "postgres"])
def open_store(request, tmp_path_factory):
    """A function that opens a fresh store of the engine (SQLite: an index.db; PostgreSQL: a schema)."""
    opened = []
    n = itertools.count()
    if request.param == "sqlite":
        def make():
            folder = tmp_path_factory.mktemp("base")
            store = SqliteIndexStore(folder / "index.db")
            opened.append(store)
            return store
        yield make
    else:
        server = request.getfixturevalue("postgres_server")
        with server.database() as url:
            def make():
                folder = tmp_path_factory.mktemp("base")
                store = PgIndexStore(url, "w", f"b{next(n)}", Path(folder))
                opened.append(store)
                return store
            yield make
            for store in opened:
                store.drop()
            opened.clear()
    for store in opened:
        store.close()


def stored(store) -> dict[int, list]:
    """id → (document, fingerprint, holder id or None, has a vector, place), as the store holds them."""
    if isinstance(store, SqliteIndexStore):
        vectors = {r[0] for r in store.db.query("SELECT rowid FROM chunks_vec")}
        rows = store.db.query("SELECT c.id, d.key, c.fingerprint, c.copy_of, c.ord "
                              "FROM chunks c JOIN documents d ON d.id = c.doc_id")
        return {r[0]: [r[1], r[2], r[3], r[0] in vectors, r[4]] for r in rows}
    s = store.schema
    rows = store.db.query(f"SELECT c.id, d.key, c.fingerprint, c.copy_of, c.embedding IS NOT NULL, c.ord "
                          f"FROM {s}.chunks c JOIN {s}.documents d ON d.id = c.doc_id")
    return {r[0]: [r[1], r[2], r[3], r[4], r[5]] for r in rows}


def shape(passages: dict[int, list]) -> set[tuple]:
    """Each passage by its document and place: its text, its holder's document and place (None: it holds it), its vector."""
    where = {i: (p[0], p[4]) for i, p in passages.items()}
    return {(p[0], p[4], p[1], None if p[2] is None else where[p[2]], p[3]) for p in passages.values()}


def entry(doc: str, passages: list[tuple[int, bool]]) -> Entry:
    vectors = np.array([[1.0, float(t)] if vector else [np.nan, np.nan] for t, vector in passages], dtype=np.float32)
    return Entry(key=doc, origin="files", kind="docs", label=f"docs:b/{doc}", title="T", hash="h",
                 chunks=[Chunk(TEXTS[t], []) for t, _ in passages], vectors=vectors)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=operations)
def test_each_store_keeps_the_rules_for_any_order_of_writes_and_removes(open_store, ops) -> None:
    store = open_store()
    store.set_embedding("test", 2)
    model = Model()
    history: list[tuple[str, str, list]] = []
    for op, doc, passages in ops:
        if op == "write":
            store.write([entry(doc, passages)])
            model.write(doc, passages)
        else:
            store.remove([doc])
            model.remove(doc)
        history.append((op, doc, passages))
        found = stored(store)
        check(found, brought_vectors(history, {p[0] for p in found.values()}))
        assert shape(found) == shape(model.passages)  # the same holders as the rules in memory, passage for passage
    store.close()
