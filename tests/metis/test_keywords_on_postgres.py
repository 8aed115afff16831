"""The keyword sidecar on PostgreSQL: each replica keeps its own, in FTS5's order (the SQLite engine's),
brought in step with the other replicas' writes from the change log, rebuilt when it is further behind."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from astralyx.config import Settings
from astralyx.core import Astralyx

from .kit import make_base, owner

pytestmark = pytest.mark.parametrize("database_url", ["postgres"], indirect=True)

NOTES = {
    "trains.md": "# Travel\n\nTrains are booked in second class; night trains in a couchette.",
    "leave.md": "# Leave\n\n## Vacation\n\nEach person has 25 vacation days, and trains home at Christmas are paid.",
    "cafe.md": "# Café\n\nThe café serves crêpes on Fridays and coffee every day.",
    "parking.md": "# Parking\n\nParking is free for bikes; cars park at the station near the trains.",
    "coffee.md": "# Coffee\n\nThe coffee machine is descaled on Mondays. Coffee beans come from Porto.",
}
QUERIES = ["trains", "coffee on Fridays", "vacation days", "station parking for cars", "crêpes café"]


def answers(core: Astralyx, query: str) -> list[str]:
    base = core.bases.get(owner(), "team")
    return [h.document for h in core.search.hits(base, query, mode="keywords")[1]]


def team(core: Astralyx) -> None:
    core.index.keywords_from = 0  # the sidecar answers whatever the size of the base
    make_base(core, "team")
    for name, text in NOTES.items():
        core.notes.write(owner(), "team", "notes", name, text)


def sidecar(core: Astralyx):
    return core.index.store(core.bases.get(owner(), "team")).keywords


def test_the_sidecar_answers_on_postgresql_in_the_sqlite_engines_order(core, tmp_path):
    team(core)
    on_sqlite = Astralyx(Settings.load(tmp_path / "sqlite-home", database_url="")).start()
    try:
        assert on_sqlite.db.engine == "sqlite" and core.db.engine == "postgres"
        team(on_sqlite)
        for query in QUERIES:
            before = sidecar(core).answered
            found = answers(core, query)
            assert sidecar(core).answered == before + 1  # the sidecar answered, not ts_rank
            assert found and found == answers(on_sqlite, query)
    finally:
        on_sqlite.close()


def test_a_replica_catches_up_with_the_others_writes_from_the_log_without_a_rebuild(core, home):
    team(core)
    other = Astralyx(Settings.load(home)).start()  # a second replica: the same home and database
    try:
        other.index.keywords_from = 0
        assert answers(other, "trains") == answers(core, "trains")
        builds = sidecar(other).builds
        # writes on the first replica: a note replaced, one deleted, one added
        core.notes.write(owner(), "team", "notes", "trains.md", "# Travel\n\nBuses replaced the trains in May.")
        core.notes.delete(owner(), "team", "notes", "parking.md")
        core.notes.write(owner(), "team", "notes", "bikes.md", "# Bikes\n\nTrains take bikes on weekends.")
        with ThreadPoolExecutor(8) as pool:  # searches side by side catch up once between them
            found = list(pool.map(lambda q: answers(other, q), ["bikes on weekends"] * 16))
        assert found == [answers(core, "bikes on weekends")] * 16
        for query in [*QUERIES, "buses", "bikes on weekends"]:
            assert answers(other, query) == answers(core, query)
        assert "notes:team/bikes.md" in answers(other, "bikes")
        assert "notes:team/parking.md" not in answers(other, "station parking for cars")
        assert sidecar(other).builds == builds  # caught up from the log, not rebuilt
        assert sidecar(other).answered >= 8
    finally:
        other.close()


def test_a_replica_further_behind_than_the_log_answers_the_same_after_a_rebuild(core, home):
    team(core)
    other = Astralyx(Settings.load(home)).start()
    try:
        other.index.keywords_from = 0
        answers(other, "trains")
        builds = sidecar(other).builds
        core.notes.write(owner(), "team", "notes", "bikes.md", "# Bikes\n\nTrains take bikes on weekends.")
        store = core.index.store(core.bases.get(owner(), "team"))
        store.db.execute(f"DELETE FROM {store.schema}.keyword_changes")  # as if pruned long ago
        found = answers(other, "bikes on weekends")
        assert found == answers(core, "bikes on weekends") and found[0] == "notes:team/bikes.md"
        assert sidecar(other).builds == builds + 1
    finally:
        other.close()


def test_a_small_base_on_postgresql_ranks_keywords_as_the_sqlite_engine_does_after_its_passages_change(core, tmp_path):
    """No size threshold on PostgreSQL (ts_rank is not BM25): a base of five passages, most of them replaced
    since the sidecar was built (deleted passages linger in its segments), answers in FTS5's order."""
    on_sqlite = Astralyx(Settings.load(tmp_path / "sqlite-home", database_url="")).start()
    try:
        for instance in (core, on_sqlite):
            make_base(instance, "team")
            for name, text in NOTES.items():
                instance.notes.write(owner(), "team", "notes", name, text)
            answers(instance, "trains")  # the PostgreSQL replica builds its sidecar here
            for name, text in list(NOTES.items())[:4]:  # most passages replaced: deleted in the sidecar's segments
                instance.notes.write(owner(), "team", "notes", name, text + " Trains and coffee, updated.")
            for i in range(8):  # the café's words, in one live passage and eight deleted ones
                instance.notes.write(owner(), "team", "notes", "cafe.md", NOTES["cafe.md"] + f" Edit {i}.")
        for query in QUERIES:
            before = sidecar(core).answered
            found = answers(core, query)
            assert sidecar(core).answered == before + 1  # the sidecar answered a base of five passages
            assert found and found == answers(on_sqlite, query)  # FTS5's order
    finally:
        on_sqlite.close()
