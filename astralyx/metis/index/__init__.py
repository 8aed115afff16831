"""The per-base search index: `Index` keeps each base's `IndexStore` (protocol.py) in step with its files; the
store is SQLite's (`SqliteIndexStore`: FTS5 + sqlite-vec in the base's folder, `index.db`) or PostgreSQL's."""

from .passages import Row
from .protocol import IndexStore
from .service import INDEX_FILE, Index, Reader, SyncReport
from .sqlite_store import SqliteIndexStore

__all__ = ["INDEX_FILE", "Index", "IndexStore", "Reader", "Row", "SqliteIndexStore", "SyncReport"]
