"""The console's guards, over HTTP without a browser: cross-site posts, pages without a key, plain-HTTP warning."""

from __future__ import annotations

from starlette.testclient import TestClient

from ..conftest import ADMIN_TOKEN


def console(app, base_url: str = "http://127.0.0.1") -> TestClient:
    client = TestClient(app, base_url=base_url, follow_redirects=False)
    client.cookies.set("astralyx_key", ADMIN_TOKEN)
    return client


def test_a_post_from_another_site_is_refused(app, core):
    client = console(app)
    response = client.post("/metis/knowledge-bases", data={"name": "evil", "kind": "documents"},
                           headers={"origin": "https://evil.example"})
    assert response.status_code == 403 and "CROSS_SITE" in response.text
    response = client.post("/metis/knowledge-bases", data={"name": "evil"})  # no Origin, no Referer
    assert response.status_code == 403
    assert core.bases.find("default", "evil") is None
    response = client.post("/playground/api/memory/team/keep", json={"facts": []}, headers={"origin": "https://evil.example"})
    assert response.status_code == 403 and response.json()["error"]["code"] == "CROSS_SITE"

    ok = client.post("/metis/knowledge-bases", data={"name": "fine"}, headers={"origin": "http://127.0.0.1"})
    assert ok.status_code == 303 and core.bases.find("default", "fine") is not None


def test_without_a_key_pages_go_to_sign_in_and_the_json_endpoints_say_401(app):
    anon = TestClient(app, base_url="http://127.0.0.1", follow_redirects=False)
    assert anon.get("/eos/deployments").headers["location"] == "/sign-in?next=/eos/deployments"
    response = anon.post("/playground/api/chat", json={}, headers={"origin": "http://127.0.0.1"})
    assert response.status_code == 401 and response.json()["error"]["code"] == "UNAUTHORIZED"
    # The API is untouched by the console: still JSON errors under /v1.
    assert anon.get("/v1/metis/knowledge-bases").json()["error"]["code"] == "UNAUTHORIZED"


def test_sign_in_over_plain_http_elsewhere_than_this_machine_warns(app):
    page = TestClient(app, base_url="http://astralyx.lan").get("/sign-in")
    assert "served over plain HTTP" in page.text
    assert "served over plain HTTP" not in TestClient(app, base_url="http://127.0.0.1").get("/sign-in").text
    assert "served over plain HTTP" not in TestClient(app, base_url="https://astralyx.lan").get("/sign-in").text


def test_static_files_and_unknown_pages(app):
    client = console(app)
    assert "system-ui" in client.get("/static/console.css").text
    missing = client.get("/no/such/page")
    assert missing.status_code == 404 and "NOT_FOUND" in missing.text


def test_what_people_and_models_write_is_shown_escaped(app, core):
    from astralyx.auth.actor import Actor
    from astralyx.metis.bases import parse_request

    owner = Actor.local_owner("default")
    core.bases.create(owner, parse_request({"metadata": {"name": "handbook"}}))
    core.notes.write(owner, "handbook", "notes", "x.md", "<img src=x onerror=alert(1)>", {"title": "<script>alert(1)</script>"})
    page = console(app).get("/metis/knowledge-bases/handbook").text
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    note = console(app).get("/metis/knowledge-bases/handbook/notes/x.md").text
    assert "<img src=x" not in note and "&lt;img src=x onerror=alert(1)&gt;" in note
