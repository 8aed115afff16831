"""The steps of a base's SQLite index (`index.db`): append, never edit.

The index is derived (dropping it rebuilds it from the files), but a step still upgrades it in
place, so a large base is not re-embedded for a new column.
"""

from __future__ import annotations

from . import Step

# The tables as the first release made them. chunks_fts is contentless (BM25); chunks_vec (vec0)
# is made when the first vectors arrive, with their dimension (store.py set_embedding).
V1 = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,        -- path in the base's folder, or source:<folder>/<path>
    origin TEXT NOT NULL,            -- files | notes | saved | source | … (where the file lives)
    kind TEXT NOT NULL,              -- docs | notes | saved | memory (selects a re-ranking hook)
    label TEXT NOT NULL,
    title TEXT NOT NULL,
    hash TEXT NOT NULL,
    attrs TEXT NOT NULL DEFAULT '{}',
    size INTEGER NOT NULL DEFAULT 0,
    chunks INTEGER NOT NULL DEFAULT 0,
    indexed_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    doc_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    ord INTEGER NOT NULL,
    text TEXT NOT NULL,
    headings TEXT NOT NULL DEFAULT '[]',
    line INTEGER,
    page INTEGER
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    title, headings, text,
    content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2'
);
"""

# Documents are listed by origin, ordered by label (sync compares a source's files with them).
V2 = """
CREATE INDEX IF NOT EXISTS documents_by_origin ON documents(origin, label);
"""

STEPS = [
    Step(1, "documents, chunks and their FTS5 keywords", V1),
    Step(2, "documents by origin", V2),
]
