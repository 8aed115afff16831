"""Where records and indexes are kept: SQLite files (the embedded default) or PostgreSQL.

The domain talks to a `Database` and writes portable SQL (`?` placeholders, `ON CONFLICT`,
`RETURNING`); what differs between engines (connections, placeholders, locks, DDL types) lives in
engines/sqlite.py and engines/postgres.py. `open_records` picks the engine from the settings.

Engines know nothing of what is kept in them: nothing here imports from the rest of astralyx but errors and util
(tests/test_import_direction.py checks it); a base's index on either engine is metis/index's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, TypeAlias

# A row by name or by position: sqlite3.Row under SQLite, engines.postgres.Row under PostgreSQL.
# Their values are whatever the column holds, hence Any.
Row: TypeAlias = Any


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ..., /) -> Any: ...


class Database(Protocol):
    """What the domain needs of a database: rows by name or position, explicit transactions.
    A transaction is one writer at a time (SQLite: BEGIN IMMEDIATE; PostgreSQL: an advisory
    transaction lock), so check-then-write inside one is safe on either engine."""

    engine: str  # "sqlite" | "postgres"

    def execute(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ...) -> Any: ...

    def query(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ...) -> list[Any]: ...

    def one(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ...) -> Any | None: ...

    def scalar(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ...) -> Any: ...

    def transaction(self) -> AbstractContextManager[Any]: ...

    def close(self) -> None: ...


class PoolConfig(Protocol):
    """What sizes a process's connection pools to PostgreSQL (the settings' database_pool_*; config.Settings has them)."""

    @property
    def database_pool_size(self) -> int: ...

    @property
    def database_lock_pool_size(self) -> int: ...

    @property
    def database_pool_timeout(self) -> float: ...


def lock_id(name: str) -> int:
    """A signed 64-bit PostgreSQL advisory lock id for a name (the same on every replica and machine)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


def is_postgres(url: str | None) -> bool:
    return bool(url) and str(url).startswith(("postgresql://", "postgres://"))


def open_records(home: Path, url: str | None = None, settings: PoolConfig | None = None) -> Database:
    """The instance's records: `<home>/astralyx.db`, or the PostgreSQL database at `url` (its connection pools
    sized by `settings`; the vector extension created, or start stops naming the fix)."""
    if url and is_postgres(url):
        try:
            from .postgres import Database as PgDatabase
            from .postgres import PoolSettings, require_vector
        except ImportError as e:  # pragma: no cover - depends on what is installed
            from ..errors import Unavailable

            raise Unavailable(f"PostgreSQL needs psycopg and psycopg_pool: pip install 'astralyx[postgres]' ({e})") from e

        pool = None
        if settings is not None:
            pool = PoolSettings(size=max(1, settings.database_pool_size), lock_size=max(1, settings.database_lock_pool_size),
                                timeout=max(0.1, settings.database_pool_timeout))
        db = PgDatabase(url, name="records", pool=pool)
        require_vector(db)
        return db
    if url:
        from ..errors import BadRequest

        raise BadRequest(f"The database URL {url!r} is not postgresql://…; leave it unset for SQLite in the data directory.")
    from .sqlite import Database as SqliteDatabase

    return SqliteDatabase(home / "astralyx.db")

