"""The console's import pages against a hostile export: titles and file names are text, never markup."""

from __future__ import annotations

from playwright.sync_api import expect

from astralyx.auth.actor import Actor
from astralyx.metis.bases import parse_request

from ..metis.extract.archives_kit import chatgpt_conversation, extractor_answer, zipped
from .conftest import deploy

OWNER = Actor.local_owner("default")
MARKUP = "<img src=x onerror=\"window.pwned=1\">"


def test_titles_and_names_are_shown_as_text(signed_in, live_server, scripted_openai, tmp_path):
    page, core = signed_in, live_server.core
    scripted_openai.reply(extractor_answer, always=True)
    deploy(core, "qwen3-4b", "chat", url=scripted_openai.url, model="scripted")
    core.bases.create(OWNER, parse_request({"metadata": {"name": "team"},
                                            "spec": {"kind": "memory", "extractor": {"deployment": "qwen3-4b"}}}))
    conv = chatgpt_conversation("c-x", f"Ana {MARKUP}", "2026-10-12 09:00", [("user", "Ana moved to research this week.")])
    export = tmp_path / "export.zip"
    export.write_bytes(zipped([conv]))
    page.goto("/metis/memory/team")
    page.get_by_label("A ChatGPT or Claude export").set_input_files(str(export))
    page.get_by_role("button", name="Upload").click()
    expect(page.get_by_label(f"Ana {MARKUP}")).to_be_visible()
    page.get_by_label(f"Ana {MARKUP}").check()
    page.get_by_role("button", name="Read the ticked conversations").click()
    expect(page.get_by_role("button", name="Remember the ticked facts")).to_be_visible()
    expect(page.get_by_role("list", name="Ana, role")).to_contain_text(f"(2026-10-12, Ana {MARKUP})")
    assert page.evaluate("window.pwned") is None
    assert page.locator("img[src=x]").count() == 0
