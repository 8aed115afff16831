"""An import on both engines: its job's locks are fcntl on SQLite, advisory locks on PostgreSQL."""

from __future__ import annotations

import pytest

from .archives_kit import CLAUDE, URL, extractor_answer, facts_kept, upload, wait_for, zipped

pytestmark = pytest.mark.engines


def test_upload_choose_read_review_keep(client, team):
    team.reply(extractor_answer, always=True)
    job = upload(client, zipped(CLAUDE)).json()
    assert client.post(f"{URL}/{job['id']}/start", json={"all": True}).status_code == 200
    done = wait_for(client, job["id"])
    assert done["state"] == "finished" and done["progress"]["done"] == 2, done
    proposals = [p for g in done["review"]["subjects"] for a in g["attributes"] for p in a["proposals"]]
    assert sorted(p["period"]["label"] for p in proposals) == ["current from 2026-09-01", "current from 2026-09-20"]
    assert facts_kept(client) == []
    body = {"facts": [{k: p[k] for k in ("subject", "attribute", "fact", "source", "said_at")} for p in proposals]}
    assert client.post("/v1/metis/knowledge-bases/team/memory", json=body).status_code == 200
    assert facts_kept(client) == ["Ana leads the platform team.", "The launch is on Friday 16 October."]
    assert client.delete(f"{URL}/{job['id']}").json()["removed"] is True
