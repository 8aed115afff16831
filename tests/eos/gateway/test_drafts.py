"""Drafts (ask before saving): at most 30 an hour per base (DRAFT_LIMIT), and they expire undecided."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from starlette.testclient import TestClient

from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.metis.saves import DRAFTS_PER_HOUR
from astralyx.util import iso, now

from ...conftest import ADMIN_TOKEN

pytestmark = pytest.mark.engines  # records on SQLite and on PostgreSQL

ASK = [{"role": "user", "content": "Keep these notes."}]
DRAFTS = "/v1/metis/knowledge-bases/handbook/drafts"


def propose(chat, oai, n: int, tool: str = "save_to_knowledge", start: int = 0):
    chat.reply(tool_calls=[(tool, {"title": f"Note {i}", "text": f"Text {i}."}) for i in range(start, start + n)])
    chat.reply("Done.")
    extra = oai.chat.completions.create(model="chat", messages=ASK).model_extra["astralyx"]
    told = [json.loads(m["content"]) for m in chat.chat_requests[-1]["messages"] if m["role"] == "tool"]
    return extra, told


def age(core, days: float) -> None:
    """Make every draft `days` old, as if proposed then."""
    with core.db.transaction() as conn:
        conn.execute("UPDATE model_drafts SET created_at=?", (iso(now() - timedelta(days=days)),))


def test_draft_limit_at_30_an_hour_per_base(chat, oai, client, core):
    extra, told = propose(chat, oai, DRAFTS_PER_HOUR)
    assert len(extra["drafts"]) == DRAFTS_PER_HOUR == 30
    assert all(t["status"] == "draft" for t in told)
    extra, told = propose(chat, oai, 1, start=30)
    assert told[0]["error"]["code"] == "DRAFT_LIMIT"
    assert "30" in told[0]["error"]["message"] and "tell the person" in told[0]["note"].lower()
    assert extra["drafts"] == [] and extra["tool_calls"][0]["status"] == "DRAFT_LIMIT"
    listed = client.get(DRAFTS).json()
    assert len(listed["drafts"]) == 30 and "Note 30" not in {d["title"] for d in listed["drafts"]}
    assert (listed["expire_after_days"], listed["drafts_per_hour"]) == (14, 30)
    # Deciding on drafts does not make room: the limit counts what models proposed.
    client.post(f"{DRAFTS}/{listed['drafts'][0]['id']}/discard")
    _, told = propose(chat, oai, 1, start=31)
    assert told[0]["error"]["code"] == "DRAFT_LIMIT"
    # Per base: the journal (saves on the model's own) still takes notes.
    _, told = propose(chat, oai, 1, tool="save_to_journal", start=32)
    assert told[0]["status"] == "saved"
    # An hour later, there is room again.
    age(core, 1 / 24 + 0.001)
    _, told = propose(chat, oai, 1, start=33)
    assert told[0]["status"] == "draft"


def test_a_draft_says_when_it_expires_and_goes_undecided(chat, oai, client, core, home):
    extra, _ = propose(chat, oai, 1)
    draft = extra["drafts"][0]
    assert draft["expires_at"][:10] == iso(now() + timedelta(days=14))[:10]
    assert [d["id"] for d in client.get(DRAFTS).json()["drafts"]] == [draft["id"]]
    age(core, 15)
    assert client.get(DRAFTS).json()["drafts"] == []
    gone = client.get(f"{DRAFTS}/{draft['id']}")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "DRAFT_NOT_FOUND"
    assert "expires after 14 days" in gone.json()["error"]["message"]
    assert client.post(f"{DRAFTS}/{draft['id']}/save").json()["error"]["code"] == "DRAFT_NOT_FOUND"
    assert not (home / "bases/default/handbook/saved/note-0.md").exists()
    # Purged at start: the row is gone from the database, not only hidden.
    again = Astralyx(Settings.load(home)).start()
    try:
        assert again.db.one("SELECT count(*) AS n FROM model_drafts")["n"] == 0
    finally:
        again.close()


def test_the_expiry_is_a_setting(chat, oai, client, core, home, monkeypatch):
    propose(chat, oai, 2)
    age(core, 3)
    monkeypatch.setenv("ASTRALYX_DRAFT_EXPIRY_DAYS", "30")
    kept = Astralyx(Settings.load(home)).start()
    try:
        assert kept.db.one("SELECT count(*) AS n FROM model_drafts")["n"] == 2
    finally:
        kept.close()
    monkeypatch.setenv("ASTRALYX_DRAFT_EXPIRY_DAYS", "2")
    purged = Astralyx(Settings.load(home)).start()
    try:
        assert purged.saves.draft_days == 2
        assert purged.db.one("SELECT count(*) AS n FROM model_drafts")["n"] == 0
    finally:
        purged.close()


def test_the_console_lists_drafts_with_their_expiry_and_the_limit(chat, oai, app, core, home):
    extra, _ = propose(chat, oai, 1)
    console = TestClient(app, base_url="http://127.0.0.1", follow_redirects=False)
    console.cookies.set("astralyx_key", ADMIN_TOKEN)
    page = console.get("/metis/knowledge-bases/handbook").text
    assert "Drafts expire after 14 days undecided; models may propose at most 30 an hour to handbook." in page
    assert "Note 0" in page and extra["drafts"][0]["expires_at"][:10] in page
    saved = console.post(f"/metis/knowledge-bases/handbook/drafts/{extra['drafts'][0]['id']}/save",
                         headers={"origin": "http://127.0.0.1"})
    assert saved.status_code == 303
    assert (home / "bases/default/handbook/saved/note-0.md").exists()
    assert "No drafts await a decision." in console.get("/metis/knowledge-bases/handbook").text
