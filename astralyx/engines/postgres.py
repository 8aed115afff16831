"""The PostgreSQL engine: the same `Database` as engines/sqlite.py over psycopg 3.

What differs from SQLite lives here: `?` placeholders become `%s`; rows answer by name and by
position; a transaction takes an advisory transaction lock first, so writers of one database
(the records, one base's index) go one at a time across every replica, as SQLite's BEGIN
IMMEDIATE makes them go one at a time on one machine.

Connections come from two bounded pools per database URL and process (psycopg_pool), shared by
every Database on that URL (a base's index does not open its own) and closed with the last core's: `queries` (database_pool_size)
lends one for a statement or a transaction, `locks` (database_lock_pool_size) lends one to a thread
for as long as it holds session advisory locks (locks.py: a base's folder, its load, a job), apart
from the queries so a lock holder never waits on itself. A process so holds at most the two sizes'
sum, however many threads serve. A thread in a transaction uses its connection for every statement
on that URL until the end. A request that finds no connection within database_pool_timeout, or a
database that refuses or drops connections (too many clients, restarting), answers DATABASE_BUSY
(503, Retry-After); a connection the server dropped is discarded, so requests work again once it is
back, without a restart.
"""

from __future__ import annotations

import logging
import re
import select
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from time import monotonic
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout

from ..errors import DatabaseBusy, Unavailable
from . import lock_id

__all__ = ["Database", "lock_id", "borrow", "advisory", "Row", "PoolSettings", "configure", "close_all", "busy",
           "require_vector"]

log = logging.getLogger("astralyx")
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


# -- the pools ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PoolSettings:
    """How many connections a process may hold to one database, and how long a request waits for one."""

    size: int = 10  # statements and transactions
    lock_size: int = 5  # threads holding session advisory locks (writes to a base's files, loads, jobs)
    timeout: float = 10.0  # seconds a request waits for a connection before DATABASE_BUSY


_settings: dict[str, PoolSettings] = {}
_pools: dict[tuple[str, str], ConnectionPool[Any]] = {}
# The records' Databases open on each URL (a core each): the pools close when the last of them does, so that
# closing one core of a process (a test's second replica, a CLI command in a server's process) leaves the
# pools of the others, and the connections they have lent, as they are.
_owners: dict[str, int] = {}
_pools_guard = threading.Lock()
_local = threading.local()  # what each thread borrowed: (url, kind) → [pool, connection, depth]
BUSY_STATES = ("08", "53", "57P")  # connection failures, too many clients / out of resources, shutting down or starting


def configure(url: str, settings: PoolSettings, *, owner: bool = False) -> PoolSettings:
    """The pools' sizes and wait for `url` in this process (`owner`: for a core's records, counted until it closes);
    answers those in force. The pools of a URL are one per process, shared by every core on it (a thread's
    transaction and the locks it holds are on them), so they have one set of sizes: the first open core's, until
    the last one closes. A core opened meanwhile with other sizes is told so in the log, and uses the pools as they
    are (one pool per core would let a statement escape its thread's transaction, and double the connections)."""
    with _pools_guard:
        current = _settings.get(url) if _owners.get(url) else None
        if current is None:
            _settings[url] = current = settings
        if owner:
            _owners[url] = _owners.get(url, 0) + 1
    if current != settings:
        log.warning(
            "the connection pools to %s are shared by every core of this process and sized by the first: %s; "
            "this core asked for %s (database_pool_size, database_lock_pool_size, database_pool_timeout) and uses "
            "the first's until every core on that database has closed", _safe(url), _sizes(current), _sizes(settings),
        )
    return current


def _sizes(s: PoolSettings) -> str:
    return f"size {s.size}, lock size {s.lock_size}, timeout {s.timeout:g} s"


def _safe(url: str) -> str:
    """The URL without its password, for the log."""
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


def settings_of(url: str) -> PoolSettings:
    return _settings.get(url) or PoolSettings()


def _pool(url: str, kind: str) -> ConnectionPool[Any]:
    with _pools_guard:
        pool = _pools.get((url, kind))
        if pool is not None and not pool.closed:
            return pool
        s = _settings.get(url) or PoolSettings()
        pool = ConnectionPool(
            url, open=True, name=f"astralyx-{kind}",
            min_size=1 if kind == "queries" else 0, max_size=s.size if kind == "queries" else s.lock_size,
            timeout=s.timeout,
            # A connection attempt the server refuses is retried with a growing delay; giving up after the
            # request's wait lets the next request try at once, so a restarted server is found within seconds.
            reconnect_timeout=max(s.timeout, 1.0),
            kwargs={"autocommit": True, "row_factory": _row_factory, "connect_timeout": max(int(s.timeout), 2),
                    "application_name": "astralyx" if kind == "queries" else "astralyx-locks"},
        )
        _pools[(url, kind)] = pool
        return pool


def close_all(url: str) -> None:
    """Close the pools of `url` (connections lent out are closed as they come back; later use opens new pools)."""
    with _pools_guard:
        pools = [_pools.pop(key) for key in list(_pools) if key[0] == url]
    for pool in pools:
        pool.close(timeout=1.0)


def _alive(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle connection from the pool still works. A server that stops (or ends the session) says so
    and closes the socket, which is then readable: only then is it asked (no round trip on every loan)."""
    if conn.closed or conn.broken:
        return False
    try:
        # poll, not select: select() refuses descriptors past 1023, which a busy server's sockets and files reach
        watch = select.poll()
        watch.register(conn.fileno(), select.POLLIN)
        if watch.poll(0):
            conn.execute("")
    except (psycopg.Error, OSError, ValueError):
        return False
    return True


def _take(pool: ConnectionPool[Any], timeout: float) -> psycopg.Connection[Any]:
    deadline = monotonic() + timeout
    while True:
        conn: psycopg.Connection[Any] = pool.getconn(timeout=max(deadline - monotonic(), 0.001))
        if _alive(conn):
            return conn
        # Dead: closed, so the pool drops it and opens another (the others that died with it are found alike);
        # never handed back as it is, or the same one would come back here for ever.
        conn.close()
        pool.putconn(conn)
        if monotonic() >= deadline:
            raise PoolTimeout(f"no working connection came within {timeout:g} s")


@contextmanager
def borrow(url: str, kind: str = "queries") -> Iterator[psycopg.Connection[Any]]:
    """A connection of `url`'s `kind` pool for this thread: the one it holds already (a transaction under way, a
    lock held), else one lent until the end of the block. DATABASE_BUSY when none comes in time."""
    held: dict[tuple[str, str], list[Any]] = _local.__dict__.setdefault("held", {})
    entry = held.get((url, kind))
    if entry is not None:
        entry[2] += 1
        try:
            yield entry[1]
        finally:
            entry[2] -= 1
        return
    pool = _pool(url, kind)
    timeout = settings_of(url).timeout
    try:
        conn = _take(pool, timeout)
    except PoolTimeout as e:
        raise _busy(_why(pool, url, timeout)) from e
    except psycopg.OperationalError as e:  # PoolClosed: the instance is closing
        raise as_busy(e) from e
    _lend(pool, 1)
    held[(url, kind)] = [pool, conn, 1]
    try:
        yield conn
    finally:
        del held[(url, kind)]
        _lend(pool, -1)
        pool.putconn(conn)  # a broken one is dropped and replaced; one left in a transaction is rolled back


_lent: dict[ConnectionPool[Any], int] = {}  # connections each pool has lent out now
_lent_guard = threading.Lock()


def _lend(pool: ConnectionPool[Any], n: int) -> None:
    with _lent_guard:
        _lent[pool] = _lent.get(pool, 0) + n
        if not _lent[pool]:
            del _lent[pool]


def _why(pool: ConnectionPool[Any], url: str, timeout: float) -> str:
    """Why no connection came: all lent out (busy), or none could be opened (then PostgreSQL's own reason)."""
    with _lent_guard:
        lent = _lent.get(pool, 0)
    if lent:
        return f"all {lent} connections of this replica's {pool.name} pool stayed in use for {timeout:g} s"
    try:  # the pool retries in the background and keeps the reason to itself: ask once more, to say it
        psycopg.connect(url, connect_timeout=2).close()
    except psycopg.Error as e:
        return "cannot connect: " + (str(e).strip().splitlines() or [type(e).__name__])[0]
    return f"no connection came within {timeout:g} s"


# -- session advisory locks (locks.py's folders and jobs on PostgreSQL, a base's load and reindex) -----------
@contextmanager
def advisory(url: str, name: str, *, wait: bool) -> Iterator[bool]:
    """A PostgreSQL session advisory lock named `name` (True inside when held; `wait=False`: False at once when
    another session holds it). A process that dies lets it go. Held on a connection of the engine's lock pool,
    which this thread keeps while it holds any (apart from the statements' pool: a holder never waits on itself)."""
    lock = lock_id(name)
    with borrow(url, "locks") as conn:
        try:
            if wait:
                conn.execute("SELECT pg_advisory_lock(%s)", (lock,))
                got = True
            else:
                row = conn.execute("SELECT pg_try_advisory_lock(%s)", (lock,)).fetchone()
                got = bool(row and row[0])
        except Exception as e:
            translated = busy(e)
            if translated is None:
                raise
            raise translated from e
        try:
            yield got
        finally:
            if got:
                try:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (lock,))
                except Exception:
                    if not conn.broken:  # a session that broke let its locks go with it
                        raise


# -- errors ---------------------------------------------------------------------------------------
def busy(e: BaseException) -> DatabaseBusy | None:
    """The DATABASE_BUSY a database error means, if it is one of a busy or unreachable database."""
    if isinstance(e, DatabaseBusy):
        return e
    if not isinstance(e, psycopg.OperationalError):
        return None
    if isinstance(e, PoolTimeout):
        reason = "no database connection was free in time"
    elif isinstance(e, PoolClosed):
        reason = "the server is stopping"
    elif e.sqlstate is None or e.sqlstate.startswith(BUSY_STATES):
        reason = (str(e).strip().splitlines() or [type(e).__name__])[-1]
    else:
        return None
    return _busy(reason)


def _busy(reason: str) -> DatabaseBusy:
    return DatabaseBusy(
        f"The database cannot take this request now ({reason}): try again shortly. If it lasts, check that "
        "PostgreSQL runs and that replicas × (ASTRALYX_DATABASE_POOL_SIZE + ASTRALYX_DATABASE_LOCK_POOL_SIZE) "
        "fits in its max_connections"
    )


def as_busy(e: psycopg.OperationalError) -> BaseException:
    return busy(e) or e


@contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except psycopg.OperationalError as e:
        raised = busy(e)
        if raised is None:
            raise
        raise raised from e


# -- the database ---------------------------------------------------------------------------------
class _Conn:
    """The connection a transaction hands out: `execute` with the domain's placeholders."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.raw = conn

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        return self.raw.execute(translate(sql), params or None)


class Database:
    engine = "postgres"

    def __init__(self, url: str, *, name: str = "records", pool: PoolSettings | None = None) -> None:
        self.url = url
        self.name = name  # what the advisory transaction lock is named after
        self._lock = lock_id(f"astralyx:db:{name}")
        self._owner = pool is not None  # a core's records: the pools live while one is open
        if pool is not None:
            configure(url, pool, owner=True)

    @contextmanager
    def connection(self) -> Iterator[_Conn]:
        """One connection for several statements (this thread's, if it is in a transaction)."""
        with _translated(), borrow(self.url) as raw:
            yield _Conn(raw)

    def execute(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> Any:  # a psycopg cursor, read already
        with self.connection() as conn:
            return conn.execute(sql, params)

    def query(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> list[Any]:
        with self.connection() as conn:
            return list(conn.execute(sql, params).fetchall())

    def one(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> Any | None:
        with self.connection() as conn:
            return conn.execute(sql, params).fetchone()

    def scalar(self, sql: str, params: tuple[Any, ...] | dict[str, Any] = ()) -> Any:
        row = self.one(sql, params)
        return row[0] if row is not None else None

    @contextmanager
    def transaction(self) -> Iterator[_Conn]:
        """One writer of this database at a time, on every replica (nested: join the outer one)."""
        with _translated(), borrow(self.url) as raw:
            if raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                yield _Conn(raw)
                return
            with raw.transaction():
                raw.execute("SELECT pg_advisory_xact_lock(%s)", (self._lock,))
                yield _Conn(raw)

    def script(self, sql: str) -> None:
        """Several statements at once (a migration step's SQL; no parameters, so no placeholders)."""
        with self.connection() as conn:
            conn.raw.execute(sql)

    @contextmanager
    def snapshot(self) -> Iterator[_Conn]:
        """A consistent read of several statements (REPEATABLE READ, no lock)."""
        with _translated(), borrow(self.url) as raw, raw.transaction():
            raw.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield _Conn(raw)

    def close(self) -> None:
        """The pools of the URL close with the last core's records that use them (or at once, if none does)."""
        with _pools_guard:
            if self._owner:
                self._owner = False
                _owners[self.url] -= 1
            last = not _owners.get(self.url)
            if last:
                _owners.pop(self.url, None)  # the next core to open sizes the pools again
        if last:
            close_all(self.url)


def require_vector(db: Database) -> None:
    """Indexes keep vectors with pgvector: create the extension if this role may, else stop with the fix."""
    if db.scalar("SELECT 1 FROM pg_extension WHERE extname = 'vector'"):
        return
    try:
        db.script("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as e:
        database = db.scalar("SELECT current_database()")
        raise Unavailable(
            f"The PostgreSQL database {database!r} has no `vector` extension and this role may not create it "
            f"({(str(e).strip().splitlines() or [''])[0]}): run `CREATE EXTENSION vector;` in that database as a "
            "superuser (pgvector must be installed on the server; managed services offer it), then start again",
            code="NO_VECTOR_EXTENSION",
        ) from e
