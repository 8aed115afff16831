"""Drafts waiting on a base's page: what a model asked to save (an MCP client that could not ask), saved or discarded."""

from __future__ import annotations

from playwright.sync_api import expect

from astralyx.auth.actor import Actor
from astralyx.metis.bases import parse_request


def test_drafts_wait_on_the_base_page_to_be_saved_or_discarded(signed_in, live_server, shot):
    page, core = signed_in, live_server.core
    base = core.bases.create(Actor.local_owner("default"), parse_request({"metadata": {"name": "handbook"}}))
    core.saves.propose(base, "mcp:claude-code", "MCP session 1", "Offsite", "The offsite is in Porto in March.")
    core.saves.propose(base, "mcp:claude-code", "MCP session 1", "Rumour", "Not worth keeping.")
    page.goto("/metis/knowledge-bases/handbook#drafts")
    expect(page.get_by_role("heading", name="Drafts waiting")).to_be_visible()
    expect(page.get_by_text("The offsite is in Porto in March.")).to_be_visible()
    shot(page, "drafts-waiting")
    page.get_by_role("button", name="Save: Offsite").click()
    expect(page.get_by_role("status")).to_contain_text("Saved to handbook: Offsite")
    assert (base.folder / "saved" / "offsite.md").exists()
    page.get_by_role("button", name="Discard: Rumour").click()
    expect(page.get_by_role("status")).to_contain_text("Discarded: Rumour")
    expect(page.get_by_text("No drafts await a decision.")).to_be_visible()
    assert sorted(p.name for p in (base.folder / "saved").iterdir()) == ["offsite.md"]
