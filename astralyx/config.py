"""Settings: environment (ASTRALYX_*) over the data directory's config file over defaults."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

DEFAULT_HOME = Path("~/.astralyx")


@dataclass
class Settings:
    home: Path = field(
        default_factory=lambda: DEFAULT_HOME.expanduser(),
        metadata={"help": "Data directory: database, keys, every base's folder."},
    )
    max_body_bytes: int = field(
        default=64 * 1024 * 1024,
        metadata={"help": "Largest request body accepted (uploads included); larger gets 413."},
    )
    max_json_bytes: int = field(
        default=2 * 1024 * 1024,
        metadata={"help": "Largest JSON request body accepted; larger gets 413."},
    )
    scale_to_zero_after: float = field(
        default=900.0,
        metadata={"help": "Seconds a deployment that scales to zero (resources.min 0) stays loaded after its last call."},
    )
    edge: bool = field(
        default=False,
        metadata={"help": "An edge gateway: built-in knowledge tools answer as unavailable."},
    )
    draft_expiry_days: int = field(
        default=14,
        metadata={"help": "Days a model's draft waits for Save or Discard before it expires (and is purged at start)."},
    )
    sync_on_start: bool = field(
        default=True,
        metadata={"help": "Sync every base's folder sources when the server starts."},
    )
    large_file_passages: int = field(
        default=1000,
        metadata={"help": "Passages from one file above which a sync reports it (a print page copying the others?)."},
    )
    exact_search: bool = field(
        default=False,
        metadata={"help": "Searches read each base's index alone (FTS5 and the exact vector scan), never the HNSW "
                          "and tantivy sidecars: exact answers over speed (the benches measure both)."},
    )
    yield_to_searches: bool = field(
        default=True,
        metadata={"help": "A sync embeds in slices and waits while searches run, so they answer first; off: a sync "
                          "takes the cores whatever runs (the sync bench measures both)."},
    )
    default_embedding_model: str = field(
        default="multilingual-e5-small-int8",
        metadata={"help": "Model of the embedded embedding deployment a new workspace gets."},
    )

    source_roots: str = field(
        default="",
        metadata={"help": "Folders a base's folder sources may lie under (separated by the OS's path separator; a list "
                          "in config.toml), whoever names them. Empty: only the local CLI's owner names folders. "
                          "The data directory is never a source."},
    )
    allow_link_local_upstreams: bool = field(
        default=False,
        metadata={"help": "Let an upstream deployment's URL be link-local (169.254.0.0/16, fe80::/10) or a cloud "
                          "metadata host."},
    )

    database_url: str = field(
        default="",
        metadata={"help": "PostgreSQL for records and indexes (postgresql://…, with the vector extension); "
                          "empty: SQLite files in the data directory."},
    )
    # A replica (process) holds at most database_pool_size + database_lock_pool_size connections to PostgreSQL.
    database_pool_size: int = field(
        default=10,
        metadata={"help": "PostgreSQL connections a replica lends to statements and transactions (a bounded pool)."},
    )
    database_lock_pool_size: int = field(
        default=5,
        metadata={"help": "PostgreSQL connections a replica lends to threads holding advisory locks "
                          "(a write to a base's files, a large load, a job), apart from the statements' pool."},
    )
    database_pool_timeout: float = field(
        default=10.0,
        metadata={"help": "Seconds a request waits for a PostgreSQL connection before it answers 503 DATABASE_BUSY."},
    )

    @classmethod
    def load(cls, home: str | Path | None = None, **overrides: Any) -> Settings:
        """--home, else ASTRALYX_HOME, else ~/.astralyx; then config.toml, then env."""
        home_path = Path(home or os.environ.get("ASTRALYX_HOME") or DEFAULT_HOME).expanduser()
        values: dict[str, Any] = {}
        config_file = home_path / "config.toml"
        if config_file.exists():
            values.update(tomllib.loads(config_file.read_text()))
        for f in fields(cls):
            env = os.environ.get(f"ASTRALYX_{f.name.upper()}")
            if env is not None and f.name != "home":
                values[f.name] = env
        values.update({k: v for k, v in overrides.items() if v is not None})
        values["home"] = home_path
        settings = cls()
        for f in fields(cls):
            if f.name in values:
                setattr(settings, f.name, _coerce(values[f.name], type(getattr(settings, f.name))))
        return settings


def _coerce(value: Any, kind: type) -> Any:
    if kind is bool and isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    if kind is int and isinstance(value, str):
        return int(value)
    if kind is float and isinstance(value, (str, int)):
        return float(value)
    if issubclass(kind, Path):
        return Path(value).expanduser()
    return value
