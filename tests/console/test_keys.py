"""API keys of the workspace: create one (shown once), sign in with it, revoke it."""

from __future__ import annotations

from playwright.sync_api import expect

from .conftest import sign_in


def test_create_sign_in_with_and_revoke_a_key(signed_in, live_server, browser, shot):
    page = signed_in
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name").fill("laptop")
    page.get_by_label("Role").select_option("viewer")
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_role("status")).to_contain_text("It is shown this once")
    token = page.get_by_label("Key", exact=True).input_value()
    assert token.startswith("ax_")
    shot(page, "keys")

    other = browser.new_context(base_url=live_server.url).new_page()
    sign_in(other, token)
    expect(other.get_by_text("Workspace default · viewer")).to_be_visible()
    expect(other.get_by_role("link", name="API keys")).to_have_count(0)  # a viewer does not manage keys
    other.goto("/keys")
    expect(other.get_by_role("alert")).to_contain_text("PERMISSION_DENIED")

    page.goto("/keys")
    page.get_by_role("button", name="Revoke laptop").click()
    expect(page.get_by_role("status")).to_contain_text("Revoked laptop")
    other.goto("/metis/knowledge-bases")
    expect(other.get_by_role("heading", name="Sign in")).to_be_visible()
    other.context.close()
