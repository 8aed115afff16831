"""Identical passages, kept once: the rules both index stores follow, without a database.

Two passages are the same text when their fingerprints are equal (passages.fingerprint: kind and NFKC text;
facts never). A store keeps one of them searched, the text's **holder** (chunks.copy_of NULL: its words in the
keyword index, its vector in the vector index), and the others as **copies** of it (copy_of: the holder's id; no
words, no vector of their own, counted in the holder's `also_in`). What these functions decide, the stores
(sqlite_store.py, pg_store.py) carry out in SQL:

- `to_embed` (`needs_vector`): before a sync embeds a batch, which passages need a vector of their own. A text
  held with its vector in a document the batch does not replace is not embedded again, nor one embedded earlier
  in the sync.
- `missing_vectors` (`left_without_vector`): just before the batch is written, which of the passages left
  unembedded lost the vector they counted on (its holder went meanwhile): embedded after all.
- `place`: a document written: which of its passages are new texts (searched) and which are copies (of a text
  held already, or of a passage before it in the document), and which copy gives its vector to a holder that has
  none (a holder whose document was not embedded again since the embedding changed).
- `successors`: a document removed: each text it held that other documents hold too passes to the oldest copy in
  another document, which takes over its words and its vector. So a text's holder is always its oldest passage.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from .passages import Entry, fingerprint

if TYPE_CHECKING:  # numpy is imported where vectors are read (listing bases does not load it)
    import numpy as np

Prints = list[list[str | None]]  # each entry's passages' fingerprints, in order (None: never merged)


class HoldsTexts(Protocol):
    """What the rules ask a store (IndexStore.texts_with_vectors)."""

    def texts_with_vectors(self, texts: set[str], outside: set[str]) -> set[str]: ...


def to_embed(store: HoldsTexts, entries: list[Entry], embedded: set[str]) -> list[list[bool]]:
    """Which passages of these entries (about to be written, in order) need a vector: `needs_vector`, asked of the
    store once for the batch. `embedded`: the texts of passages embedded earlier in the same sync (added to)."""
    found = prints(entries)
    held = store.texts_with_vectors(texts(found), {e.key for e in entries})
    return needs_vector(found, embedded, held)


def missing_vectors(store: HoldsTexts, entries: list[Entry]) -> list[tuple[int, int]]:
    """(entry, passage) positions of these entries, about to be written, left unembedded by `to_embed` whose text
    has no vector to take by now (`left_without_vector`): empty but after a race, the copy counted on gone since."""
    found, nans = prints(entries), unembedded(entries)
    asked = unembedded_texts(found, nans)
    if not asked:
        return []
    return left_without_vector(found, nans, store.texts_with_vectors(asked, {e.key for e in entries}))


def prints(entries: Iterable[Entry]) -> Prints:
    """The fingerprints of the entries' passages, entry by entry."""
    return [[fingerprint(e.kind, chunk.text) for chunk in e.chunks] for e in entries]


def texts(fingerprints: Prints) -> set[str]:
    """The texts (fingerprints) among them that may be held elsewhere: what a store is asked about."""
    return {fp for row in fingerprints for fp in row if fp is not None}


def needs_vector(fingerprints: Prints, embedded: set[str], held_with_vector: set[str]) -> list[list[bool]]:
    """Which passages need a vector: every passage never merged; else a text's first passage in this sync
    (`embedded`, which this adds to), unless the store holds it with its vector in a document these entries do not
    replace (`held_with_vector`: the store's answer for `texts(fingerprints)`)."""
    out = []
    for row in fingerprints:
        flags = []
        for fp in row:
            if fp is None:
                flags.append(True)
                continue
            flags.append(fp not in embedded and fp not in held_with_vector)
            embedded.add(fp)
        out.append(flags)
    return out


def left_without_vector(fingerprints: Prints, nans: Sequence[Sequence[bool] | None],
                        held_with_vector: set[str]) -> list[tuple[int, int]]:
    """(entry, passage) positions left unembedded (`nans`: True where its row of vectors is NaN; None for an entry
    written without vectors) whose text has, by now, no vector to take: not a passage before it in these
    entries, nor one the store holds with its vector in a document they do not replace (`held_with_vector`)."""
    seen: set[str] = set()
    out = []
    for i, (row, flags) in enumerate(zip(fingerprints, nans, strict=True)):
        if flags is None:
            continue
        for j, (fp, nan) in enumerate(zip(row, flags, strict=True)):
            if fp is None:
                continue
            if nan and fp not in seen and fp not in held_with_vector:
                out.append((i, j))
            seen.add(fp)
    return out


@dataclass(frozen=True)
class Holder:
    """The passage a store searches for a text (the first of its copies)."""

    id: int
    has_vector: bool


@dataclass(frozen=True)
class Copy:
    """A passage written as a copy of the text `fingerprint` (its holder held already or new in the same document);
    `gives_vector`: its vector goes to the holder, which has none."""

    position: int
    fingerprint: str
    gives_vector: bool


@dataclass
class Placement:
    """Where each passage of one document goes when it is written."""

    new: list[int] = field(default_factory=list)  # positions of the new texts: searched, each with its vector if any
    copies: list[Copy] = field(default_factory=list)


def place(fingerprints: Sequence[str | None], vectors: Sequence[bool], held: Mapping[str, Holder]) -> Placement:
    """A document's passages (their fingerprints, and whether each comes with a vector) placed against the
    texts the store holds (`held`: by fingerprint, after the document's old passages went): a passage never
    merged, or of a text held by no one, is new; another is a copy. A holder without a vector gets the first one a
    copy brings (one, whichever of its copies comes first)."""
    placed = Placement()
    has_vector = {fp: h.has_vector for fp, h in held.items()}
    for i, fp in enumerate(fingerprints):
        if fp is None or fp not in has_vector:
            placed.new.append(i)
            if fp is not None:
                has_vector[fp] = vectors[i]
            continue
        gives = vectors[i] and not has_vector[fp]
        if gives:
            has_vector[fp] = True
        placed.copies.append(Copy(i, fp, gives))
    return placed


def successors(copies: Iterable[tuple[int, int]]) -> dict[int, int]:
    """Of a removed document's holders, who takes each over: given the copies of them in other documents, as
    (copy's id, holder's id), the oldest copy (the lowest id) of each holder that has one."""
    out: dict[int, int] = {}
    for copy, holder in copies:
        if holder not in out or copy < out[holder]:
            out[holder] = copy
    return out


def unembedded(entries: Iterable[Entry]) -> list[list[bool] | None]:
    """For each entry, which of its passages' rows of vectors are NaN (left unembedded by `to_embed`); None for an
    entry written without vectors."""
    import numpy as np

    return [None if e.vectors is None else np.isnan(e.vectors).any(axis=1).tolist() for e in entries]


def unembedded_texts(fingerprints: Prints, nans: Sequence[Sequence[bool] | None]) -> set[str]:
    """The texts of the passages left unembedded: what `missing_vectors` asks the store about."""
    return {fp for row, flags in zip(fingerprints, nans, strict=True) if flags is not None
            for fp, nan in zip(row, flags, strict=True) if nan and fp is not None}


def given_vectors(entry: Entry, dimensions: int | None) -> list[np.ndarray | None]:
    """Each passage's vector as the entry brings it (float32), None where it has none: the entry has no vectors, the
    index none (no dimensions), or its row is NaN (left unembedded by `to_embed`: a copy of a text held with one)."""
    import numpy as np

    if entry.vectors is None or not dimensions:
        return [None] * len(entry.chunks)
    rows = np.asarray(entry.vectors, dtype=np.float32)
    return [None if np.isnan(row).any() else row for row in rows]
