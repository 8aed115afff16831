"""What a base's index holds and is asked, whatever its engine: the documents and passages written to it
(Entry), read back (StoredDocument, Row), the rule that makes two passages the same (fingerprint), the words
a query searches for and the text a passage is embedded from. Plain Python, no database: both stores
(sqlite_store.py on SQLite, pg_store.py on PostgreSQL; copies.py their rules for identical passages) and the
index service build on it.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..chunking import Chunk

if TYPE_CHECKING:  # numpy is imported where vectors are read or written (listing bases does not load it)
    import numpy as np

_WORD = re.compile(r"\w+", re.UNICODE)

# Kinds whose identical passages are indexed once. Not memory: each fact is a dated statement of its own
# (a fact said again after another one is a second fact, and its status is what the reranker reads).
MERGED_KINDS = frozenset({"docs", "notes", "saved"})


def fingerprint(kind: str, text: str) -> str | None:
    """What makes two passages the same (its kind and its text, NFKC with runs of spaces as one), or None
    when passages of this kind are never merged."""
    if kind not in MERGED_KINDS:
        return None
    norm = " ".join(unicodedata.normalize("NFKC", text).split())
    return hashlib.blake2b(f"{kind}\0{norm}".encode(), digest_size=16).hexdigest() if norm else None


@dataclass
class StoredDocument:
    key: str
    origin: str
    kind: str
    label: str
    title: str
    hash: str
    attrs: dict[str, Any]
    size: int
    chunks: int
    indexed_at: str


@dataclass
class Row:
    """A chunk with its document, as a search hit is made of."""

    chunk_id: int
    key: str
    kind: str
    label: str
    title: str
    text: str
    headings: list[str]
    line: int | None
    page: int | None
    attrs: dict[str, Any] = field(default_factory=dict)
    also_in: int = 0  # how many other documents hold the same passage (indexed once, answered here)

    @property
    def where(self) -> str:
        return Chunk(self.text, self.headings, self.line, self.page).where


@dataclass
class Entry:
    """What to write for one document."""

    key: str
    origin: str
    kind: str
    label: str
    title: str
    hash: str
    chunks: list[Chunk]
    attrs: dict[str, Any] = field(default_factory=dict)
    size: int = 0
    vectors: np.ndarray | None = None  # (len(chunks), dims) or None for keywords only


# The commonest English words: BM25 gives them almost no weight, but their long posting lists
# make an OR query slow. Left out unless the query has nothing else.
STOPWORDS = frozenset(
    "a an and are as at be been but by can do does did for from had has have how i if in into is it its "
    "me my no not of on or our so than that the their them then there these they this those to was we "
    "were what when where which who whom why will with you your".split()
)


def query_words(text: str) -> list[str]:
    """The words searched for: each once, lower case, the commonest left out unless nothing else."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(text)))
    return [w for w in words if w not in STOPWORDS] or words


def embedding_text(title: str, chunk: Chunk) -> str:
    """What a chunk's vector is made from: its place in the document, then its text."""
    context = list(chunk.headings)
    if not context or context[0] != title:
        context.insert(0, title)
    return " › ".join(c for c in context if c) + "\n" + chunk.text


def stored_document(row: Any) -> StoredDocument:
    """A `documents` row (by column name, either engine's) as a StoredDocument."""
    return StoredDocument(
        key=row["key"], origin=row["origin"], kind=row["kind"], label=row["label"], title=row["title"], hash=row["hash"],
        attrs=json.loads(row["attrs"]), size=row["size"], chunks=row["chunks"], indexed_at=row["indexed_at"],
    )


def passage_row(row: Any) -> Row:
    """A passage with its document, as both stores' `rows` select it (by column name), as a Row."""
    return Row(
        chunk_id=row["id"], key=row["key"], kind=row["kind"], label=row["label"], title=row["title"], text=row["text"],
        headings=json.loads(row["headings"]), line=row["line"], page=row["page"], attrs=json.loads(row["attrs"]),
        also_in=row["also_in"],
    )
