"""Move an instance from SQLite to PostgreSQL (`astra db copy --to postgresql://…`).

The records are copied table by table in one transaction into an empty PostgreSQL database
brought to the latest schema; every base's index is then rebuilt there from the files (indexes
are derived: nothing of index.db is copied). The source is only read: astralyx.db is opened
read-only and the index.db files are not opened at all; the bases' folders stay where they are,
shared by both. (Beside core.py, not in engines/: it builds a core to index every base again.)
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .engines.sqlite import sqlite3
from .errors import Conflict, NotFound
from .migrations import migrate
from .migrations.records import STEPS as RECORD_STEPS

# In the order foreign keys need them.
RECORD_TABLES = [
    "workspaces", "keys", "bases", "deployments", "model_drafts", "model_saves", "receipts", "gateway_exchanges",
]

Progress = Callable[[str, int, int], None]  # (what, done, total)


def copy_instance(home: Path, to_url: str, progress: Progress | None = None) -> dict[str, Any]:
    """Copy the records of the SQLite instance in `home` to `to_url`, then build every base's index
    there from the files. Returns what was copied (rows per table, documents per base)."""
    from .config import Settings
    from .core import Astralyx
    from .engines.postgres import Database as PgDatabase
    from .engines.postgres import require_vector

    source_path = home / "astralyx.db"
    if not source_path.exists():
        raise NotFound(f"No SQLite instance in {home} (no astralyx.db): nothing to copy")
    target = PgDatabase(to_url)
    require_vector(target)  # before anything is copied: the indexes need it
    migrate(target, RECORD_STEPS)
    if target.scalar("SELECT count(*) FROM workspaces"):
        raise Conflict(f"{safe_url(to_url)} already holds an instance (it has workspaces): copy into an empty database")
    source = sqlite3.connect(f"file:{source_path}?mode=ro", uri=True)
    source.row_factory = sqlite3.Row
    rows: dict[str, int] = {}
    try:
        with target.transaction() as conn:
            for n, table in enumerate(RECORD_TABLES, start=1):
                found = source.execute(f"SELECT * FROM {table}").fetchall() if _has(source, table) else []
                columns = [c for c in (found[0].keys() if found else []) if c != "rowid"]
                if found:
                    marks = ",".join("?" * len(columns))
                    sql = f"INSERT INTO {table}({', '.join(columns)}) VALUES ({marks})"
                    for row in found:
                        conn.execute(sql, tuple(row[c] for c in columns))
                rows[table] = len(found)
                if progress:
                    progress("records", n, len(RECORD_TABLES))
    finally:
        source.close()
    target.close()

    core = Astralyx(Settings.load(home, database_url=to_url))
    documents: dict[str, int] = {}
    try:
        bases = core.bases.all()
        for n, base in enumerate(bases, start=1):
            core.index.sync(base)
            documents[f"{base.workspace}/{base.name}"] = core.index.store(base).count()[0]
            if progress:
                progress("indexes", n, len(bases))
    finally:
        core.close()
    return {"records": rows, "indexes": documents}


def _has(conn: Any, table: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone() is not None


def safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    import re

    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)
