"""Who decides on a model's draft (metis/saves.py): knowledge-bases:write-content, or the person whose chat made
it, and then only as the model wrote it."""

from __future__ import annotations

import pytest

from .conftest import openai_for

pytestmark = pytest.mark.engines  # records on SQLite and on PostgreSQL

DRAFTS = "/v1/metis/knowledge-bases/handbook/drafts"
ASK = [{"role": "user", "content": "Keep this: the offsite is in Porto in March."}]
OFFSITE = {"title": "Offsite", "text": "The offsite is in Porto in March."}
FORGED = {"title": "Payroll", "text": "Send every salary to IBAN XX00 0000."}


def draft_by(chat, person) -> dict:
    """`person` chats with the deployment; its model asks to save a note: the draft card of the answer."""
    chat.reply(tool_calls=[("save_to_knowledge", OFFSITE)])
    chat.reply("Done.")
    answer = openai_for(person).chat.completions.create(model="chat", messages=ASK)
    return answer.model_extra["astralyx"]["drafts"][0]


def _denied(r) -> None:
    assert r.status_code == 403, r.text
    error = r.json()["error"]
    assert error["code"] == "PERMISSION_DENIED" and error["details"]["permission"] == "knowledge-bases:write-content"


def saved_notes(home) -> list[str]:
    folder = home / "bases" / "default" / "handbook" / "saved"
    return sorted(p.read_text() for p in folder.iterdir()) if folder.exists() else []


def test_a_viewer_cannot_write_any_text_through_someone_elses_draft(chat, client, key_client, home):
    """The issue: a viewer lists the drafts and saves one with a text of their own: 403, nothing written."""
    draft = draft_by(chat, client)  # the admin's chat made it
    viewer = key_client("viewer")
    assert viewer.get(DRAFTS).json()["drafts"] == []  # not theirs: not listed
    _denied(viewer.post(draft["save"], json=FORGED))
    _denied(viewer.post(draft["save"]))  # not even as it is
    _denied(viewer.post(draft["discard"]))
    _denied(viewer.post(f"{DRAFTS}/{draft['id']}", json=FORGED))
    caller = key_client("caller")
    _denied(caller.post(draft["save"]))
    assert caller.get(f"{DRAFTS}/{draft['id']}").json()["error"]["code"] == "PERMISSION_DENIED"  # no read, not theirs
    assert saved_notes(home) == []
    assert client.get(f"{DRAFTS}/{draft['id']}").json()["status"] == "pending"


def test_the_viewer_whose_chat_made_it_saves_it_as_written_only(chat, client, key_client, home):
    viewer = key_client("viewer")
    draft = draft_by(chat, viewer)
    assert [d["id"] for d in viewer.get(DRAFTS).json()["drafts"]] == [draft["id"]]
    assert viewer.get(f"{DRAFTS}/{draft['id']}").json()["text"] == OFFSITE["text"]
    _denied(viewer.post(draft["save"], json=FORGED))
    _denied(viewer.post(draft["save"], json={"text": "The offsite is in Lisbon."}))
    _denied(viewer.post(f"{DRAFTS}/{draft['id']}", json={"title": "Edited"}))  # edit first, save next: no
    assert saved_notes(home) == []
    r = viewer.post(draft["save"], json=OFFSITE)  # its own words, sent back as they are
    assert r.status_code == 200, r.text
    assert r.json()["draft"]["status"] == "saved"
    [note] = saved_notes(home)
    assert "The offsite is in Porto in March." in note and "IBAN" not in note


def test_the_caller_whose_chat_made_it_discards_it(chat, client, key_client, home):
    caller = key_client("caller")
    draft = draft_by(chat, caller)
    assert caller.get(f"{DRAFTS}/{draft['id']}").json()["status"] == "pending"  # the card is theirs
    _denied(caller.post(draft["save"], json=FORGED))
    r = caller.post(draft["discard"])
    assert r.status_code == 200 and r.json()["draft"]["status"] == "discarded"
    assert saved_notes(home) == []


def test_write_content_decides_on_any_draft_and_edits_it(chat, client, key_client, home):
    viewer = key_client("viewer")
    draft = draft_by(chat, viewer)
    editor = key_client("editor")
    assert [d["id"] for d in editor.get(DRAFTS).json()["drafts"]] == [draft["id"]]
    edited = editor.post(f"{DRAFTS}/{draft['id']}", json={"title": "Offsite 2027"})
    assert edited.status_code == 200 and edited.json()["title"] == "Offsite 2027"
    r = editor.post(draft["save"], json={"text": "The offsite is in Porto, 12-14 March."})
    assert r.status_code == 200, r.text
    [note] = saved_notes(home)
    assert 'title: "Offsite 2027"' in note and "12-14 March" in note
