"""Which store keeps a base's index under the instance's engine: the index service's own (`SqliteIndexStore`, index.db
in the base's folder) or, for a PostgreSQL database, `PgIndexStore` (a schema per base). Light to import: the
PostgreSQL store (psycopg, numpy) is loaded only when the engine is PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...engines import is_postgres

if TYPE_CHECKING:
    from ..bases import KnowledgeBase
    from .protocol import IndexStore


def index_opener(url: str | None) -> Callable[[KnowledgeBase], IndexStore] | None:
    """How a base's index is opened under this engine (None: the index service's own, index.db in the base's folder).
    One opener per core: what its PostgreSQL stores share lives with it (pg_store.PgIndexes)."""
    if not (url and is_postgres(url)):
        return None
    from .pg_store import PgIndexes

    return PgIndexes(url)
