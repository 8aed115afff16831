"""The Playground against a scripted upstream model: streaming, citations, drafts, saves with Undo, Remember."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from astralyx.auth.actor import Actor
from astralyx.eos import tools
from astralyx.metis.bases import parse_request

from .conftest import deploy

OWNER = Actor.local_owner("default")


def setup_chat(core, url: str) -> None:
    core.bases.create(OWNER, parse_request({"metadata": {"name": "handbook"}}))
    core.bases.create(OWNER, parse_request({"metadata": {"name": "journal"}}))
    leave = "# Leave policy\n\n## Vacation\n\nEach person has 25 vacation days a year.\n"
    core.notes.write(OWNER, "handbook", "notes", "leave.md", leave)
    deploy(core, "chat", "chat", url=url, model="scripted")
    tools.set_knowledge(OWNER, core.deployments, "chat", "handbook", search=True, save=True)
    tools.set_knowledge(OWNER, core.deployments, "chat", "journal", search=False, save=True, confirm=False)


def ask(page, text: str) -> None:
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def test_chat_cites_passages_and_saves_a_draft(signed_in, live_server, scripted_openai, shot):
    page, core = signed_in, live_server.core
    setup_chat(core, scripted_openai.url)
    scripted_openai.reply(tool_calls=[("search_knowledge", {"query": "vacation days"})])
    scripted_openai.reply("Each person has 25 vacation days a year [1], as handbook/leave.md says.")
    scripted_openai.reply(tool_calls=[("save_to_knowledge", {"title": "Vacation", "text": "We have 25 vacation days."})])
    scripted_openai.reply("I drafted a note for the handbook: save it if it is right.")
    scripted_openai.reply(tool_calls=[("save_to_knowledge", {"title": "Rumour", "text": "Fridays are off."})])
    scripted_openai.reply("Drafted.")

    page.get_by_role("link", name="Playground").click()
    expect(page.get_by_label("Chat deployment")).to_have_value("chat")
    page.get_by_label("Conversation title").fill("Leave questions")
    ask(page, "How many vacation days do I have?")
    answer = page.locator(".msg.assistant").first
    expect(answer).to_contain_text("Each person has 25 vacation days a year [1]")
    # [1] links to the passage the search returned.
    page.get_by_role("link", name="source 1").click()
    passage = page.locator("#a1-p1")
    expect(passage).to_contain_text("[1] Leave policy")
    assert passage.evaluate("li => getComputedStyle(li).listStyleType") == "none"  # "[1]", not "1. [1]"
    expect(passage).to_contain_text("line")
    # The model was streamed to and offered the deployment's tools.
    assert scripted_openai.chat_requests[0]["stream"] is True
    assert {t["function"]["name"] for t in scripted_openai.chat_requests[0]["tools"]} >= {"search_knowledge", "save_to_knowledge"}

    ask(page, "Save that to the handbook.")
    card = page.get_by_role("group", name="Draft: Vacation")
    expect(card.get_by_label("Note")).to_have_value("We have 25 vacation days.")
    card.get_by_label("Note").fill("We have 25 vacation days a year.")  # corrected before saving
    shot(page, "playground")
    assert core.saves.list(OWNER, "handbook") == []  # nothing kept until Save
    card.get_by_role("button", name="Save").click()
    saved = page.locator(".card.saved")
    expect(saved).to_contain_text("Saved to handbook")
    saved.get_by_role("link", name="Vacation").click()
    expect(page.get_by_role("heading", name="Vacation")).to_be_visible()
    expect(page.get_by_text("conversation: Leave questions")).to_be_visible()
    expect(page.get_by_text("We have 25 vacation days a year.")).to_be_visible()
    shot(page, "note")
    [save] = core.saves.list(OWNER, "handbook")
    assert save.conversation == "Leave questions" and save.state == "as_saved"

    page.go_back()
    ask(page, "Save that Fridays are off.")
    rumour = page.get_by_role("group", name="Draft: Rumour")
    rumour.get_by_role("button", name="Discard").click()
    expect(page.get_by_text("Discarded: Rumour")).to_be_visible()
    assert len(core.saves.list(OWNER, "handbook")) == 1


def test_undo_a_model_save_in_the_chat_and_on_the_base(signed_in, live_server, scripted_openai, shot):
    page, core = signed_in, live_server.core
    setup_chat(core, scripted_openai.url)
    scripted_openai.reply(tool_calls=[("save_to_journal", {"title": "Offsite", "text": "The offsite is in Porto in March."})])
    scripted_openai.reply("Saved to your journal.")
    scripted_openai.reply(tool_calls=[("save_to_journal", {"title": "Budget", "text": "The budget is agreed."})])
    scripted_openai.reply("Saved that too.")
    scripted_openai.reply(tool_calls=[("save_to_journal", {"title": "Hires", "text": "Two hires in Q1."})])
    scripted_openai.reply("Saved.")

    page.goto("/playground")
    page.get_by_label("Conversation title").fill("Planning the year")
    ask(page, "Keep in my journal: the offsite is in Porto in March.")
    saved = page.locator(".card.saved")
    expect(saved).to_contain_text("Saved to journal")
    expect(saved.get_by_role("link", name="Offsite")).to_have_attribute("href", "/metis/knowledge-bases/journal/saved/offsite.md")
    saved.get_by_role("button", name="Undo").click()
    expect(page.get_by_text("Undone: Offsite is no longer in journal")).to_be_visible()
    assert not (core.bases.find("default", "journal").folder / "saved" / "offsite.md").exists()

    ask(page, "And the budget is agreed.")
    expect(page.locator(".card.saved").last).to_contain_text("Budget")
    # Someone changes the note: the base's page says so, and undo asks first.
    core.notes.write(OWNER, "journal", "saved", "budget.md", "# Budget\n\nThe budget is agreed, with changes.\n")
    page.goto("/metis/knowledge-bases/journal")
    table = page.get_by_role("table", name="Notes models saved to journal")
    expect(table.get_by_role("row", name="Budget")).to_contain_text("no: changed since")
    expect(table.get_by_role("row", name="Offsite")).to_contain_text("undone")
    expect(table.get_by_role("row", name="Budget")).to_contain_text("Planning the year")
    shot(page, "knowledge-base-saved-by-models")
    page.get_by_role("button", name="Undo: Budget").click()
    expect(page.get_by_role("heading", name="The note changed since the model saved it")).to_be_visible()
    expect(page.get_by_role("alert")).to_contain_text("NOTE_CHANGED")
    assert (core.bases.find("default", "journal").folder / "saved" / "budget.md").exists()
    page.get_by_role("button", name="Undo anyway, removing the changes").click()
    expect(page.get_by_role("status")).to_contain_text("Undone: Budget removed from journal")
    assert not (core.bases.find("default", "journal").folder / "saved" / "budget.md").exists()

    # In the chat too, Undo of a note changed since asks first.
    page.goto("/playground")
    ask(page, "Two hires in Q1, keep that.")
    card = page.locator(".card.saved", has_text="Hires")
    expect(card).to_contain_text("Saved to journal")
    core.notes.write(OWNER, "journal", "saved", "hires.md", "# Hires\n\nThree hires in Q1.\n")
    asked = []

    def answer(dialog):
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", answer)
    card.get_by_role("button", name="Undo").click()
    expect(page.get_by_text("Undone: Hires is no longer in journal")).to_be_visible()
    assert "changed since the model saved it" in asked[0]
    assert not (core.bases.find("default", "journal").folder / "saved" / "hires.md").exists()


def test_remember_this_conversation(signed_in, live_server, scripted_openai, shot):
    page, core = signed_in, live_server.core
    deploy(core, "chat", "chat", url=scripted_openai.url, model="scripted")
    deploy(core, "qwen3-4b", "chat", url=scripted_openai.url, model="scripted")
    core.bases.create(OWNER, parse_request({"metadata": {"name": "team"},
                                            "spec": {"kind": "memory", "extractor": {"deployment": "qwen3-4b"}}}))
    core.memory.keep(OWNER, "team", [
        {"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team.", "said_at": "2026-09-01"},
        {"subject": "Bruno", "attribute": "city", "fact": "Bruno lives in Recife.", "said_at": "2026-09-01"},
    ])
    scripted_openai.reply("Noted: Ana works in research now, and the launch is on Friday 16 October.")
    scripted_openai.reply(json.dumps({"facts": [
        {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "message": 1},
        {"subject": "Launch", "attribute": "date", "fact": "The launch moved to Friday 16 October.", "message": 1},
        {"subject": "Bruno", "attribute": "city", "fact": "Bruno lives in Recife.", "message": 1},
        {"subject": "Coffee", "attribute": "mood", "fact": "The coffee was good.", "message": 1},
    ]}))

    page.goto("/playground")
    page.get_by_label("Conversation title").fill("standup")
    ask(page, "Ana moved to research this week. The launch moved to Friday 16 October. Bruno still lives in Recife.")
    expect(page.locator(".msg.assistant")).to_contain_text("Noted")
    # The conversation stays in the browser tab: a reload keeps it.
    page.reload()
    expect(page.locator(".msg.assistant")).to_contain_text("Noted")
    expect(page.get_by_label("Conversation title")).to_have_value("standup")
    remember = page.get_by_role("region", name="Remember this conversation")
    remember.get_by_label("Memory").select_option("team")
    remember.get_by_role("button", name="Find facts to remember").click()
    expect(remember.get_by_role("status")).to_contain_text("qwen3-4b proposes 4 facts")
    ana = remember.get_by_label("Ana — role: Ana works in research.")
    expect(ana).to_be_checked()
    expect(remember.locator("li", has_text="Ana works in research.")).to_contain_text("replaces: Ana leads the data team.")
    expect(remember.get_by_label("Bruno — city: Bruno lives in Recife.")).not_to_be_checked()  # known: unticked
    expect(remember.locator("li", has_text="Bruno lives in Recife.")).to_contain_text("already known")
    expect(remember.get_by_role("button", name="Remember 3 facts")).to_be_visible()
    remember.get_by_label("Coffee — mood: The coffee was good.").uncheck()
    shot(page, "playground-remember")
    remember.get_by_role("button", name="Remember 2 facts").click()
    expect(remember.get_by_role("status")).to_contain_text("Kept 2 in team; 1 replaced an older fact.")

    listing = core.memory.list(OWNER, "team").model_dump()
    facts = {f["fact"] for g in listing["subjects"] for f in g["facts"]}
    assert facts == {"Ana works in research.", "The launch moved to Friday 16 October.", "Bruno lives in Recife."}
    remember.get_by_role("link", name="team").click()
    expect(page.get_by_text("date: The launch moved to Friday 16 October.")).to_be_visible()
    expect(page.get_by_text("chat: standup").first).to_be_visible()


def test_a_deployment_that_does_not_answer_is_said_with_its_code(signed_in, live_server):
    page, core = signed_in, live_server.core
    deploy(core, "chat", "chat")  # port 9: nothing answers
    page.goto("/playground")
    ask(page, "Hello?")
    alert = page.locator(".msg.assistant").get_by_role("alert")
    expect(alert).to_contain_text("UNAVAILABLE")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
