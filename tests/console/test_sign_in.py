"""Sign-in with an API key, the cookie, sign-out, and what a key's role shows."""

from __future__ import annotations

from playwright.sync_api import expect

from ..conftest import ADMIN_TOKEN
from .conftest import sign_in


def test_sign_in_sets_a_secure_http_only_cookie_and_sign_out_clears_it(page, live_server, shot):
    page.goto("/")
    expect(page).to_have_url(live_server.url + "/sign-in?next=/metis/knowledge-bases")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    shot(page, "sign-in")

    page.get_by_label("API key").fill("not-a-key")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("INVALID_KEY")

    page.get_by_label("API key").fill(ADMIN_TOKEN)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Knowledge bases")).to_be_visible()
    expect(page.get_by_text("Workspace default")).to_be_visible()
    cookies = {c["name"]: c for c in page.context.cookies()}
    cookie = cookies["astralyx_key"]
    assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Strict"
    # Scripts of the page cannot read the key.
    assert "astralyx_key" not in page.evaluate("document.cookie")

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert "astralyx_key" not in {c["name"] for c in page.context.cookies()}
    page.goto("/eos/deployments")
    expect(page).to_have_url(live_server.url + "/sign-in?next=/eos/deployments")


def test_a_viewer_sees_no_create_form_and_a_revoked_key_is_signed_out(page, live_server):
    core = live_server.core
    key, token = core.keys.create(None, "default", "viewer", name="reader")
    sign_in(page, token)
    expect(page.get_by_text("Your role (viewer) cannot create or delete bases.")).to_be_visible()
    expect(page.get_by_role("button", name="Create")).to_have_count(0)

    from astralyx.auth.actor import Actor

    core.keys.revoke(Actor.local_owner("default"), key.id)
    page.goto("/metis/knowledge-bases")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def test_next_never_leaves_the_site(page, live_server):
    page.goto("/sign-in?next=//evil.example/")
    page.get_by_label("API key").fill(ADMIN_TOKEN)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_load_state()
    assert page.url.startswith(live_server.url + "/")
