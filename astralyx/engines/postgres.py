"""The PostgreSQL engine: the same `Database` as engines/sqlite.py over psycopg 3.

What differs from SQLite lives here: `?` placeholders become `%s`; rows answer by name and by
position; a transaction takes an advisory transaction lock first, so writers of one database
(the records, one base's index) go one at a time across every replica, as SQLite's BEGIN
IMMEDIATE makes them go one at a time on one machine. Connections are one per thread and URL,
shared by every Database on that URL (a base's index does not open its own).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

import psycopg

from . import lock_id

__all__ = ["Database", "lock_id", "connection", "Row"]

_QUOTED_OR_MARK = re.compile(r"'(?:[^']|'')*'|\?|%")


@lru_cache(maxsize=2048)
def translate(sql: str) -> str:
    """`?` → `%s` and a literal `%` → `%%`, leaving quoted strings alone."""

    def sub(m: re.Match[str]) -> str:
        token = m.group(0)
        if token == "?":
            return "%s"
        if token == "%":
            return "%%"
        return token.replace("%", "%%")

    return _QUOTED_OR_MARK.sub(sub, sql)


class Row(tuple[Any, ...]):
    """A row by position (`row[0]`) or by column name (`row["id"]`), like sqlite3.Row."""

    _names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def _row_factory(cursor: Any) -> Any:
    names = {d.name: i for i, d in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> Row:
        row = Row(values)
        row._names = names
        return row

    return make


_local = threading.local()
_all: dict[str, list[psycopg.Connection]] = {}
_all_guard = threading.Lock()


def connection(url: str) -> psycopg.Connection:
    """This thread's connection to `url` (opened again when it was closed or broke)."""
    conns: dict[str, psycopg.Connection] = getattr(_local, "conns", None) or {}
    _local.conns = conns
    conn = conns.get(url)
    if conn is None or conn.closed or conn.broken:
        conn = psycopg.connect(url, autocommit=True, row_factory=_row_factory)
        conns[url] = conn
        with _all_guard:
            _all.setdefault(url, []).append(conn)
    return conn


def close_all(url: str) -> None:
    """Close every thread's connection to `url` (a thread that uses it again opens a new one)."""
    with _all_guard:
        conns = _all.pop(url, [])
    for conn in conns:
        conn.close()


class _Conn:
    """The connection a transaction hands out: `execute` with the domain's placeholders."""

    def __init__(self, conn: psycopg.Connection) -> None:
        self.raw = conn

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        return self.raw.execute(translate(sql), params or None)


class Database:
    engine = "postgres"

    def __init__(self, url: str, *, name: str = "records") -> None:
        self.url = url
        self.name = name  # what the advisory transaction lock is named after
        self._lock = lock_id(f"astralyx:db:{name}")

    @property
    def conn(self) -> _Conn:
        return _Conn(connection(self.url))

    def execute(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> Any:  # a psycopg cursor
        return self.conn.execute(sql, params)

    def query(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[Any]:
        return list(self.conn.execute(sql, params).fetchall())

    def one(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> Any | None:
        return self.conn.execute(sql, params).fetchone()

    def scalar(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> Any:
        row = self.one(sql, params)
        return row[0] if row is not None else None

    @contextmanager
    def transaction(self) -> Iterator[_Conn]:
        """One writer of this database at a time, on every replica (nested: join the outer one)."""
        raw = connection(self.url)
        if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            yield _Conn(raw)
            return
        with raw.transaction():
            raw.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock,))
            yield _Conn(raw)

    def script(self, sql: str) -> None:
        """Several statements at once (a migration step's SQL; no parameters, so no placeholders)."""
        connection(self.url).execute(sql)

    @contextmanager
    def snapshot(self) -> Iterator[_Conn]:
        """A consistent read of several statements (REPEATABLE READ, no lock)."""
        raw = connection(self.url)
        with raw.transaction():
            raw.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield _Conn(raw)

    def close(self) -> None:
        close_all(self.url)
