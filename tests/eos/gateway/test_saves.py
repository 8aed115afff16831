"""save_to_knowledge: drafts (ask before saving), saves on the model's own with Undo, and the limit."""

from __future__ import annotations

import json

import pytest

from astralyx.metis.saves import SAVES_PER_HOUR

pytestmark = pytest.mark.engines  # records on SQLite and on PostgreSQL

ASK = [{"role": "user", "content": "Keep this: the offsite is in Porto in March."}]
OFFSITE = {"title": "Offsite", "text": "The offsite is in Porto in March."}


def save_via_model(chat, oai, tool: str = "save_to_journal", args: dict = OFFSITE, title: str = "Planning the year"):
    chat.reply(tool_calls=[(tool, args)])
    chat.reply("Done.")
    answer = oai.chat.completions.create(model="chat", messages=ASK, metadata={"conversation_title": title})
    return answer.model_extra["astralyx"], json.loads(chat.chat_requests[-1]["messages"][-1]["content"])


def test_save_on_its_own_writes_the_note_with_front_matter(chat, oai, client, home):
    extra, told = save_via_model(chat, oai)
    assert told["status"] == "saved" and told["message"] == "Saved to journal" and told["title"] == "Offsite"
    assert told["link"] == "/v1/metis/knowledge-bases/journal/saved/offsite.md"
    assert told["undo"].startswith("/v1/metis/knowledge-bases/journal/model-saves/s_") and told["undo"].endswith("/undo")
    card = extra["saves"][0]
    assert card["message"] == "Saved to journal: Offsite" and card["link"] == told["link"] and card["undo"] == told["undo"]
    text = (home / "bases" / "default" / "journal" / "saved" / "offsite.md").read_text()
    lines = text.splitlines()
    assert lines[0] == "---" and lines[1] == 'title: "Offsite"'
    assert lines[2].startswith('date: "') and lines[2].endswith('Z"')
    assert lines[3:7] == ['source: "model"', 'conversation: "Planning the year"', 'model: "chat"', "---"]
    assert text.endswith("---\n\n# Offsite\n\nThe offsite is in Porto in March.\n")
    # Readable as a note of the base, with its front matter parsed.
    note = client.get("/v1/metis/knowledge-bases/journal/saved/offsite.md").json()
    assert note["metadata"]["source"] == "model" and note["metadata"]["conversation"] == "Planning the year"
    # And indexed: the base finds it.
    found = client.post("/v1/metis/knowledge-bases/journal/search", json={"query": "offsite Porto"}).json()
    assert any("Porto" in r["text"] for r in found["results"])


def test_every_save_is_listed_and_undo_removes_it(chat, oai, client, home):
    extra, _ = save_via_model(chat, oai)
    saves = client.get("/v1/metis/knowledge-bases/journal/model-saves").json()["saves"]
    assert len(saves) == 1
    s = saves[0]
    assert (s["note"], s["deployment"], s["conversation"], s["state"], s["as_saved"]) == (
        "saved/offsite.md", "chat", "Planning the year", "as_saved", True)
    assert s["saved_at"] and s["id"] == extra["saves"][0]["id"]
    r = client.post(s["undo"])
    assert r.status_code == 200, r.text
    assert r.json()["state"] == "undone"
    assert not (home / "bases" / "default" / "journal" / "saved" / "offsite.md").exists()
    assert client.get("/v1/metis/knowledge-bases/journal/saved/offsite.md").status_code == 404
    listed = client.get("/v1/metis/knowledge-bases/journal/model-saves").json()["saves"][0]
    assert listed["state"] == "undone" and listed["undo"] is None
    assert client.post(s["undo"]).json()["error"]["code"] == "SAVE_UNDONE"


def test_undo_of_a_changed_note_asks_first(chat, oai, client, home):
    extra, _ = save_via_model(chat, oai)
    undo = extra["saves"][0]["undo"]
    r = client.put("/v1/metis/knowledge-bases/journal/saved/offsite.md",
                   json={"metadata": {"title": "Offsite"}, "content": "# Offsite\n\nPorto, 12-14 March. Hotel booked.\n"})
    assert r.status_code == 200
    listed = client.get("/v1/metis/knowledge-bases/journal/model-saves").json()["saves"][0]
    assert listed["state"] == "changed" and listed["as_saved"] is False
    r = client.post(undo)
    assert r.status_code == 409 and r.json()["error"]["code"] == "NOTE_CHANGED"
    assert (home / "bases" / "default" / "journal" / "saved" / "offsite.md").exists()
    r = client.post(undo + "?force=true")
    assert r.status_code == 200 and r.json()["state"] == "undone"
    assert not (home / "bases" / "default" / "journal" / "saved" / "offsite.md").exists()


def test_undo_needs_write_content(chat, oai, key_client):
    extra, _ = save_via_model(chat, oai)
    viewer = key_client("viewer")
    assert viewer.get("/v1/metis/knowledge-bases/journal/model-saves").status_code == 200
    r = viewer.post(extra["saves"][0]["undo"])
    assert r.status_code == 403 and r.json()["error"]["details"]["permission"] == "knowledge-bases:write-content"
    assert key_client("editor").post(extra["saves"][0]["undo"]).status_code == 200


def test_same_title_twice_gets_its_own_file(chat, oai, client):
    save_via_model(chat, oai)
    extra, told = save_via_model(chat, oai)
    assert told["link"].endswith("/saved/offsite-2.md")
    assert client.get(told["link"]).status_code == 200


def test_save_limit_at_30_an_hour(chat, oai, client, home):
    chat.reply(tool_calls=[("save_to_journal", {"title": f"Note {i}", "text": "x"}) for i in range(SAVES_PER_HOUR)])
    chat.reply("Saved them.")
    extra = oai.chat.completions.create(model="chat", messages=ASK).model_extra["astralyx"]
    assert len(extra["saves"]) == SAVES_PER_HOUR == 30
    extra, told = save_via_model(chat, oai, args={"title": "One more", "text": "y"})
    assert told["error"]["code"] == "SAVE_LIMIT"
    assert "30" in told["error"]["message"] and "ask the person" in told["note"].lower()
    assert extra["saves"] == [] and extra["tool_calls"][0]["status"] == "SAVE_LIMIT"
    assert not (home / "bases" / "default" / "journal" / "saved" / "one-more.md").exists()
    assert len(client.get("/v1/metis/knowledge-bases/journal/model-saves").json()["saves"]) == 30
    # The limit is per base: drafts for the handbook are not saves from models.
    _, told = save_via_model(chat, oai, tool="save_to_knowledge")
    assert told["status"] == "draft"


def test_ask_before_saving_makes_a_draft_then_save(chat, oai, client, home):
    extra, told = save_via_model(chat, oai, tool="save_to_knowledge")
    assert told["status"] == "draft" and told["draft"]["title"] == "Offsite"
    assert "awaits their choice" in told["note"]
    draft = extra["drafts"][0]
    assert (draft["knowledge_base"], draft["title"], draft["text"]) == ("handbook", "Offsite", OFFSITE["text"])
    saved = home / "bases" / "default" / "handbook" / "saved"
    assert not saved.exists() or not list(saved.iterdir())  # nothing written yet
    assert client.get(f"/v1/metis/knowledge-bases/handbook/drafts/{draft['id']}").json()["status"] == "pending"
    edited = client.post(f"/v1/metis/knowledge-bases/handbook/drafts/{draft['id']}", json={"title": "Offsite 2027"})
    assert edited.status_code == 200 and edited.json()["title"] == "Offsite 2027" and edited.json()["status"] == "pending"
    assert client.post(f"/v1/metis/knowledge-bases/handbook/drafts/{draft['id']}", json={"title": " "}).json()[
        "error"]["code"] == "INVALID_ARGUMENTS"
    r = client.post(draft["save"], json={"text": "The offsite is in Porto, 12-14 March."})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["draft"]["status"] == "saved" and body["save"]["asked_first"] is True
    text = (saved / "offsite-2027.md").read_text()
    assert 'title: "Offsite 2027"' in text and 'source: "model"' in text and "12-14 March" in text
    listed = client.get("/v1/metis/knowledge-bases/handbook/model-saves").json()["saves"][0]
    assert listed["note"] == "saved/offsite-2027.md" and listed["conversation"] == "Planning the year"
    again = client.post(draft["save"])
    assert again.status_code == 409 and again.json()["error"]["code"] == "DRAFT_DECIDED"


def test_ask_before_saving_then_discard(chat, oai, client, home, key_client):
    extra, _ = save_via_model(chat, oai, tool="save_to_knowledge")
    draft = extra["drafts"][0]
    # Someone else whose chat did not make it may not decide without write-content (tests/eos/gateway/test_draft_rights.py).
    viewer = key_client("viewer")
    denied = viewer.post(draft["discard"])
    assert denied.status_code == 403 and denied.json()["error"]["code"] == "PERMISSION_DENIED"
    r = client.post(draft["discard"])
    assert r.status_code == 200 and r.json()["draft"]["status"] == "discarded"
    assert not (home / "bases" / "default" / "handbook" / "saved").exists()
    assert client.post(draft["save"]).json()["error"]["code"] == "DRAFT_DECIDED"
    # Another workspace does not see it.
    assert key_client("admin", workspace="acme").get(
        f"/v1/metis/knowledge-bases/handbook/drafts/{draft['id']}").status_code == 404


def test_deleting_a_base_takes_its_saves_and_drafts_along(client, core):
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "scratch"}})
    base = core.bases.find("default", "scratch")
    save = core.saves.save_now(base, "chat", "Planning", "Offsite", "Porto in March.")
    draft = core.saves.propose(base, "chat", "Planning", "Trains", "Book trains.")
    assert [s["id"] for s in client.get("/v1/metis/knowledge-bases/scratch/model-saves").json()["saves"]] == [save.id]
    assert client.delete("/v1/metis/knowledge-bases/scratch").status_code == 200
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "scratch"}})
    assert client.get("/v1/metis/knowledge-bases/scratch/model-saves").json()["saves"] == []
    assert client.get(f"/v1/metis/knowledge-bases/scratch/drafts/{draft.id}").status_code == 404
