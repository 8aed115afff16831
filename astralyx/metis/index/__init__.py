"""The per-base search index: SQLite FTS5 + sqlite-vec in the base's folder (`index.db`)."""

from .service import INDEX_FILE, Index, Reader, SyncReport
from .store import BaseIndex, Row

__all__ = ["INDEX_FILE", "BaseIndex", "Index", "Reader", "Row", "SyncReport"]
