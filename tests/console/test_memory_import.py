"""Metis ▸ Memory ▸ Import conversations: upload an export, tick conversations, follow, review with periods, keep."""

from __future__ import annotations

from playwright.sync_api import expect

from astralyx.auth.actor import Actor
from astralyx.metis.bases import parse_request

from ..metis.extract.archives_kit import CHATGPT, extractor_answer, zipped
from .conftest import deploy
from .kit import CHECK

OWNER = Actor.local_owner("default")


def test_import_conversations_then_choose_the_facts(signed_in, live_server, scripted_openai, tmp_path, shot):
    page, core = signed_in, live_server.core
    scripted_openai.reply(extractor_answer, always=True)
    deploy(core, "qwen3-4b", "chat", url=scripted_openai.url, model="scripted")
    core.bases.create(OWNER, parse_request({"metadata": {"name": "team"},
                                            "spec": {"kind": "memory", "extractor": {"deployment": "qwen3-4b"}}}))
    export = tmp_path / "chatgpt-export.zip"
    export.write_bytes(zipped(CHATGPT))

    page.goto("/metis/memory/team")
    assert page.evaluate(CHECK) == []
    page.get_by_label("A ChatGPT or Claude export").set_input_files(str(export))
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_role("heading", name="Import chatgpt-export.zip")).to_be_visible()
    expect(page.get_by_text("4 ChatGPT conversations")).to_be_visible()
    expect(page.get_by_label("Empty chat")).to_be_disabled()
    assert page.evaluate(CHECK) == []
    page.get_by_label("Team standup").check()
    page.get_by_label("Planning in March").check()
    shot(page, "memory-import-choose")
    page.get_by_role("button", name="Read the ticked conversations").click()

    # The page follows the job until the review (it refreshes while the job runs).
    expect(page.get_by_role("button", name="Remember the ticked facts")).to_be_visible()
    role = page.get_by_role("list", name="Ana, role: conversations differ")
    expect(role).to_contain_text("Ana leads the data team.")
    expect(role).to_contain_text("(2026-03-01, Planning in March) · history 2026-03-01 – 2026-10-12")
    expect(role).to_contain_text("(2026-10-12, Team standup) · current from 2026-10-12")
    assert core.memory.list(OWNER, "team").model_dump()["count"] == 0  # nothing kept before the person confirms
    assert len(scripted_openai.chat_requests) == 2  # only the ticked conversations were read
    assert page.evaluate(CHECK) == []
    shot(page, "memory-import-review")

    page.get_by_role("checkbox", name="role: Ana leads the data team.").uncheck()
    page.get_by_role("button", name="Remember the ticked facts").click()
    expect(page.get_by_role("status")).to_contain_text("Kept 1 fact")
    facts = [f["fact"] for g in core.memory.list(OWNER, "team", history=True).model_dump()["subjects"] for f in g["facts"]]
    assert facts == ["Ana works in research."]
    # The memory's page lists the import; removing it removes its proposals.
    page.get_by_role("list", name="Imports").get_by_role("link", name="chatgpt-export.zip").click()
    page.get_by_role("button", name="Remove this import").click()
    expect(page.get_by_role("status")).to_contain_text("Import removed")
    assert not any((core.bases.find("default", "team").folder / ".imports").iterdir())
