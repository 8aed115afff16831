"""Building the core opens the data directory and nothing more; start() makes it ready (bootstrap, crash
repair, purges), run by the app's lifespan, which also closes it, and by the CLI's in-process client."""

from __future__ import annotations

import json

from starlette.testclient import TestClient

from astralyx.auth.actor import Actor
from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.metis.bases import parse_request
from astralyx.metis.memory.facts import Fact, render
from astralyx.metis.memory.store import JOURNAL
from astralyx.server import create_app

OWNER = Actor.local_owner("default")


def test_a_new_data_directory_is_bootstrapped_by_the_apps_lifespan_not_by_building(tmp_path, monkeypatch):
    monkeypatch.delenv("ASTRALYX_TOKEN", raising=False)
    home = tmp_path / "h"
    core = Astralyx(Settings.load(home))
    assert not (home / "admin.key").exists() and core.new_admin_key is None
    assert not core.workspaces.exists("default")
    with TestClient(create_app(core)) as client:
        key = core.new_admin_key
        assert key and (home / "admin.key").read_text().strip() == key
        whoami = client.get("/v1/whoami", headers={"Authorization": f"Bearer {key}"})
        assert whoami.status_code == 200 and whoami.json()["role"] == "admin"
    # The lifespan closed it; what is asked of it afterwards opens what it needs again.
    assert core.keys.count() == 1


def test_a_crash_is_repaired_by_start_not_by_building(core):
    core.bases.create(OWNER, parse_request({"metadata": {"name": "team"}, "spec": {"kind": "memory"}}))
    old = core.memory.keep(OWNER, "team", [{"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team.",
                                            "source": "chat: x", "said_at": "2026-09-01"}]).model_dump()["facts"][0]
    folder = core.bases.folder("default", "team")
    new = Fact("f_" + "e" * 16, "Ana", "role", "Ana works in research.", "chat: y", "2026-10-12", "2099-01-01T00:00:00Z")
    ops = [(f"notes/memory/{new.id}.md", render(new)), (f"notes/memory/{old['id']}.md", None)]
    (folder / JOURNAL).write_text(json.dumps({"ops": ops}))  # crashed before applying anything
    fresh = Astralyx(Settings.load(core.home))
    try:
        assert (folder / JOURNAL).exists()  # building opened the directory, and only that
        fresh.start()
        assert not (folder / JOURNAL).exists()
        results = fresh.search.search(OWNER, "team", "Ana role").results
    finally:
        fresh.close()
    assert [r.text for r in results] == ["Ana works in research."]


def test_the_cli_in_process_starts_the_core(tmp_path, monkeypatch, astra):
    monkeypatch.delenv("ASTRALYX_TOKEN", raising=False)
    monkeypatch.setenv("ASTRALYX_HOME", str(tmp_path / "fresh"))
    result = astra("metis", "bases")
    assert "admin key" in result.output and (tmp_path / "fresh" / "admin.key").exists()
