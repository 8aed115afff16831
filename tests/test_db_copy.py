"""`astra db copy --to postgresql://…`: records copied, indexes rebuilt from the files, the source untouched."""

from __future__ import annotations

import hashlib

from starlette.testclient import TestClient

from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.server import create_app

from .conftest import ADMIN_TOKEN

BASES = "/v1/metis/knowledge-bases"


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_copy_moves_records_and_rebuilds_indexes_and_leaves_the_source_as_it_was(core, client, astra, postgres_server):
    assert client.post(BASES, json={"metadata": {"name": "handbook"}}).status_code == 201
    note = {"metadata": {"title": "Offsite"}, "content": "# Offsite\n\nThe offsite is in Porto in March.\n"}
    assert client.put(f"{BASES}/handbook/notes/offsite.md", json=note).status_code == 201
    assert client.post(BASES, json={"metadata": {"name": "team"}, "spec": {"kind": "memory"}}).status_code == 201
    one = {"subject": "Ana", "attribute": "city", "fact": "Ana lives in Lisbon.", "said_at": "2026-01-01", "source": "chat"}
    assert client.post(f"{BASES}/team/memory", json={"facts": [one]}).status_code == 200
    viewer = client.post("/v1/keys", json={"role": "viewer"}).json()["key"]
    found_before = client.post(f"{BASES}/handbook/search", json={"query": "offsite Porto"}).json()
    home = core.home
    core.close()
    sources = [home / "astralyx.db", home / "bases/default/handbook/index.db", home / "bases/default/team/index.db"]
    before = [digest(p) for p in sources]

    with postgres_server.database() as url:
        result = astra("db", "copy", "--to", url)
        assert "Copying records" in result.output and "Building indexes" in result.output
        assert "built 2 base indexes (2 documents)" in result.output
        assert [digest(p) for p in sources] == before  # nothing of the source changed

        moved = Astralyx(Settings.load(home, database_url=url)).start()
        try:
            assert moved.db.engine == "postgres"
            api = TestClient(create_app(moved), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
            names = [b["metadata"]["name"] for b in api.get(BASES).json()["knowledge_bases"]]
            assert names == ["handbook", "team"]
            found = api.post(f"{BASES}/handbook/search", json={"query": "offsite Porto"}).json()
            assert found == found_before
            fact = api.post(f"{BASES}/team/search", json={"query": "Where does Ana live?"}).json()
            assert "Lisbon" in fact["results"][0]["text"]
            as_viewer = TestClient(create_app(moved), headers={"Authorization": f"Bearer {viewer}"})
            assert as_viewer.get(BASES).status_code == 200
        finally:
            moved.close()

        again = astra("db", "copy", "--to", url, ok=False)
        assert again.exit_code == 1 and "already holds an instance" in again.output
