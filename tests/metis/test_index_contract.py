"""The index stores and their contract (metis/index/protocol.py): what the service may call on a store is the
protocol's, and each engine's store adds nothing public beyond what the protocol says only one engine has.
mypy checks the signatures (`_check` in sqlite_store.py and pg_store.py); this keeps the two surfaces from drifting apart.
"""

from __future__ import annotations

from astralyx.metis.index import IndexStore, SqliteIndexStore
from astralyx.metis.index.pg_store import PgIndexStore

# What the protocol's docstring names as one engine's only (its sidecar files; indexes rebuilt after a load).
ONLY = {
    SqliteIndexStore: {"vectors_sidecar", "generation", "sidecar_paths"},
    PgIndexStore: {"missing_indexes", "repair"},
}


def _public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def test_each_store_has_the_protocol_and_only_the_named_extras() -> None:
    promised = _public(IndexStore)  # its methods and properties (attributes: set by each store's __init__)
    methods = {name for name in promised if callable(getattr(IndexStore, name))}
    for store, extras in ONLY.items():
        assert methods - _public(store) == set(), store.__name__
        assert _public(store) - promised - set(IndexStore.__annotations__) == extras, store.__name__


def test_what_only_one_engine_has_stays_off_the_protocol() -> None:
    for extras in ONLY.values():
        assert not extras & _public(IndexStore)
