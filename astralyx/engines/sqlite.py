"""The SQLite engine (the embedded default): connections with WAL, foreign keys, a busy timeout, and loadable extensions.

The standard library's sqlite3 is often built without extension loading (sqlite-vec
needs it), so pysqlite3 (a recent SQLite with FTS5) is used when installed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # pysqlite3 has no type information; its API is the standard library's
    import sqlite3
else:
    try:  # pragma: no cover - which one depends on the machine
        import pysqlite3.dbapi2 as sqlite3
    except ImportError:  # pragma: no cover
        import sqlite3

__all__ = ["sqlite3", "connect", "Database"]


def connect(path: Path | str, *, extensions: bool = False) -> sqlite3.Connection:
    conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False, isolation_level=None)
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.execute("PRAGMA synchronous=NORMAL")
    if extensions:
        import sqlite_vec

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    return conn


class Database:
    """One SQLite file, a connection per thread, explicit transactions."""

    engine = "sqlite"

    def __init__(self, path: Path, *, extensions: bool = False) -> None:
        self.path = path
        self.extensions = extensions
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    @property
    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, extensions=self.extensions)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def execute(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)

    def query(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        return self.conn.execute(sql, params).fetchall()

    def one(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> sqlite3.Row | None:
        return cast("sqlite3.Row | None", self.conn.execute(sql, params).fetchone())

    def scalar(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> Any:
        """The first column of the first row (a count, a max), or None without a row."""
        row = self.one(sql, params)
        return row[0] if row is not None else None

    def script(self, sql: str) -> None:
        """Several statements at once (a migration step's SQL)."""
        self.conn.executescript(sql)

    ensure = script  # the name modules used before migrations; new tables belong in a migration step

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE: one writer at a time, others wait (busy timeout)."""
        conn = self.conn
        if conn.in_transaction:  # nested: join the outer transaction
            yield conn
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        else:
            conn.execute("COMMIT")

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A consistent read of several statements (a deferred transaction: no lock taken)."""
        conn = self.conn
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
        self._local = threading.local()
