"""Versioned schema migrations: an ordered list of steps per database, run when it is opened.

Each database keeps `schema_version` (one row per step applied: version, about, when). Opening
one runs the steps after its version, in order, each in one transaction with its version row, so a
step is applied once and entirely, whichever replica gets there first (the transaction's lock
makes the others wait, then see it done). A step is plain SQL (the same for both engines, or one
per engine) or a function of the open transaction; to change a schema, append a step to
records.py or index.py, never edit one that has shipped.

Version 1 of each list is the schema as it was before versions were kept (`CREATE … IF NOT
EXISTS`), so a data directory made before then is upgraded in place, keeping its rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..util import iso

VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    about TEXT NOT NULL,
    applied_at TEXT NOT NULL
)
"""

# A step's work: SQL (`;`-separated statements, no parameters) or a function of the transaction's connection.
Work = str | Callable[[Any], None]


@dataclass(frozen=True)
class Step:
    version: int
    about: str
    sql: Work  # for both engines, unless `postgres` says otherwise
    postgres: Work | None = None

    def work(self, engine: str) -> Work:
        return self.postgres if engine == "postgres" and self.postgres is not None else self.sql


def latest(steps: Sequence[Step]) -> int:
    return steps[-1].version if steps else 0


def version(db: Any, table: str = "schema_version") -> int:
    """The version a database is at (0: none recorded)."""
    # In a transaction, so one writer at a time: PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe
    # against itself (two replicas opening a new database together: one failed on pg_type's key).
    with db.transaction() as conn:
        conn.execute(VERSION_TABLE.replace("schema_version", table, 1))
    return int(db.scalar(f"SELECT coalesce(max(version), 0) FROM {table}") or 0)


def migrate(db: Any, steps: Sequence[Step], *, table: str = "schema_version", schema: str | None = None) -> list[Step]:
    """Apply the steps after the database's version; returns those applied here. `schema`: the
    PostgreSQL schema a base's index lives in (`{schema}` in a step's SQL)."""
    _check(steps)
    applied: list[Step] = []
    if version(db, table) >= latest(steps):
        return applied
    for step in steps:
        with db.transaction() as conn:
            done = conn.execute(f"SELECT 1 FROM {table} WHERE version=?", (step.version,)).fetchone()
            if done:
                continue
            work = step.work(db.engine)
            if callable(work):
                work(conn)
            else:
                if schema is not None:
                    work = work.replace("{schema}", schema)
                for statement in _statements(work):
                    conn.execute(statement)
            conn.execute(f"INSERT INTO {table}(version, about, applied_at) VALUES (?,?,?)", (step.version, step.about, iso()))
        applied.append(step)
    return applied


def _check(steps: Sequence[Step]) -> None:
    versions = [s.version for s in steps]
    if versions != list(range(1, len(steps) + 1)):
        raise ValueError(f"migration steps must be numbered 1, 2, 3 … in order, got {versions}")


def _statements(sql: str) -> list[str]:
    """A script's statements (split on `;` at line ends; triggers and quoted `;` are not used in steps)."""
    out = []
    for part in sql.split(";\n"):
        part = part.strip().rstrip(";").strip()
        if any(line.strip() and not line.strip().startswith("--") for line in part.splitlines()):
            out.append(part)
    return out


def migrate_instance(core: Any) -> dict[str, Any]:
    """Bring the records and every base's index to the latest version (`astra db migrate`).

    Opening the instance migrated its records already; each base's index is migrated when it is
    opened, which here is now, for all of them. Returns the version of each."""
    from .records import STEPS as RECORD_STEPS

    indexes: dict[str, dict[str, int]] = {}
    for base in core.bases.all():
        store = core.index.store(base)  # each engine's index keeps its own steps and version table
        indexes[f"{base.workspace}/{base.name}"] = {
            "version": version(store.db, store.version_table), "latest": latest(store.steps)}
    return {
        "engine": core.db.engine,
        "records": {"version": version(core.db), "latest": latest(RECORD_STEPS)},
        "indexes": indexes,
    }
