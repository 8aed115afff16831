"""Versioned schema migrations: steps in order, once; a data directory from before versions upgrades in place."""

from __future__ import annotations

import sqlite3
import tarfile
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.engines.sqlite import Database
from astralyx.migrations import Step, latest, migrate, version
from astralyx.migrations.index import POSTGRES_STEPS as POSTGRES_INDEX_STEPS
from astralyx.migrations.index import STEPS as INDEX_STEPS
from astralyx.migrations.records import STEPS as RECORD_STEPS
from astralyx.server import create_app

from .conftest import ADMIN_TOKEN

FIXTURE = Path(__file__).parent / "fixtures" / "home-before-versions.tar.gz"
ACME_VIEWER = "ax_fSPpAy3N6D8_Fo4AzU5zTNndkYkDmKy2MZn3R8PTIcc"  # made with the fixture (make_home_before_versions.py)


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'index')")}


def steps_recorded(path: Path) -> list[int]:
    with sqlite3.connect(path) as conn:
        return [r[0] for r in conn.execute("SELECT version FROM schema_version ORDER BY version")]


@pytest.fixture
def old_home(home) -> Path:
    """The data directory a5f5c41 made (a base with a note, a memory with a fact, a workspace and key), in `home`."""
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(home.parent, filter="data")
    assert "schema_version" not in tables(home / "astralyx.db")
    return home


def test_a_data_directory_from_before_versions_upgrades_in_place_and_keeps_its_data(old_home):
    handbook = old_home / "bases/default/handbook/index.db"
    with sqlite3.connect(handbook) as conn:
        index_id = conn.execute("SELECT value FROM meta WHERE key='index_id'").fetchone()[0]
        indexed = conn.execute("SELECT key, indexed_at FROM documents").fetchall()

    core = Astralyx(Settings.load(old_home)).start()
    try:
        assert steps_recorded(old_home / "astralyx.db") == [s.version for s in RECORD_STEPS]
        assert {"keys_by_workspace", "gateway_exchanges_by_time"} <= tables(old_home / "astralyx.db")
        client = TestClient(create_app(core), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        # The records are all there: bases, the other workspace, its key (still valid).
        names = {b["metadata"]["name"] for b in client.get("/v1/metis/knowledge-bases").json()["knowledge_bases"]}
        assert names == {"handbook", "team"}
        viewer = TestClient(create_app(core), headers={"Authorization": f"Bearer {ACME_VIEWER}"})
        assert viewer.get("/v1/metis/knowledge-bases").status_code == 200
        # The indexes answer from what they held, upgraded, not rebuilt.
        found = client.post("/v1/metis/knowledge-bases/handbook/search", json={"query": "offsite Porto"}).json()
        assert "Porto" in found["results"][0]["text"]
        fact = client.post("/v1/metis/knowledge-bases/team/search", json={"query": "Where does Ana live?"}).json()
        assert "Lisbon" in fact["results"][0]["text"]
        assert steps_recorded(handbook) == [s.version for s in INDEX_STEPS]
        assert "documents_by_origin" in tables(handbook)
        with sqlite3.connect(handbook) as conn:
            assert conn.execute("SELECT value FROM meta WHERE key='index_id'").fetchone()[0] == index_id
            assert conn.execute("SELECT key, indexed_at FROM documents").fetchall() == indexed
    finally:
        core.close()


def test_astra_db_migrate_brings_every_index_up(old_home, astra):
    result = astra("db", "migrate")
    assert f"records (sqlite): version {latest(RECORD_STEPS)} of {latest(RECORD_STEPS)}" in result.output
    assert f"index default/handbook: version {latest(INDEX_STEPS)} of {latest(INDEX_STEPS)}" in result.output
    assert f"index default/team: version {latest(INDEX_STEPS)}" in result.output
    assert steps_recorded(old_home / "bases/default/team/index.db") == [s.version for s in INDEX_STEPS]
    again = astra("db", "migrate")  # nothing left to do: the same versions, no step twice
    assert again.output == result.output
    assert steps_recorded(old_home / "astralyx.db") == [s.version for s in RECORD_STEPS]


def test_steps_run_in_order_once_each_and_a_function_step_sees_the_transaction(tmp_path):
    db = Database(tmp_path / "x.db")
    seen: list[int] = []

    def backfill(conn) -> None:
        seen.append(conn.execute("SELECT count(*) FROM t").fetchone()[0])
        conn.execute("UPDATE t SET b = a * 2")

    steps = [
        Step(1, "t", "CREATE TABLE t (a INTEGER);\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (2);"),
        Step(2, "t.b", "ALTER TABLE t ADD COLUMN b INTEGER"),
        Step(3, "fill t.b", backfill),
    ]
    assert [s.version for s in migrate(db, steps[:2])] == [1, 2]
    assert [s.version for s in migrate(db, steps)] == [3]
    assert migrate(db, steps) == []
    assert seen == [2] and version(db) == 3
    assert [tuple(r) for r in db.query("SELECT a, b FROM t ORDER BY a")] == [(1, 2), (2, 4)]


def test_a_failing_step_leaves_the_version_and_the_schema_as_they_were(tmp_path):
    db = Database(tmp_path / "x.db")
    steps = [Step(1, "t", "CREATE TABLE t (a INTEGER)"), Step(2, "bad", "CREATE TABLE u (a INTEGER);\nSELECT nope FROM t")]
    with pytest.raises(Exception, match="nope"):
        migrate(db, steps)
    assert version(db) == 1
    assert db.one("SELECT 1 FROM sqlite_master WHERE name='u'") is None


def test_steps_must_be_numbered_in_order(tmp_path):
    with pytest.raises(ValueError, match="numbered"):
        migrate(Database(tmp_path / "x.db"), [Step(1, "a", "SELECT 1"), Step(3, "b", "SELECT 1")])


def test_astra_db_migrate_on_postgresql(home, astra, postgres_server):
    with postgres_server.database() as url:
        core = Astralyx(Settings.load(home, database_url=url)).start()
        try:
            client = TestClient(create_app(core), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
            assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}}).status_code == 201
        finally:
            core.close()
        result = astra("db", "migrate", "--database", url)
        assert f"records (postgres): version {latest(RECORD_STEPS)} of {latest(RECORD_STEPS)}" in result.output
        pg_latest = latest(POSTGRES_INDEX_STEPS)
        assert f"index default/handbook: version {pg_latest} of {pg_latest}\n" in result.output
        assert not (home / "astralyx.db").exists()  # the records are in PostgreSQL only
