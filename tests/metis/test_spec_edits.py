"""A base's spec edited from a shell's choices, built once (metis.bases.edited_spec) with the notice of what the next
sync does (resync_notice): `astra metis update` and the console's settings form make the same spec and say the same."""

from __future__ import annotations

import json
from urllib.parse import unquote

import pytest
from starlette.testclient import TestClient

from astralyx.metis.bases import edited_spec, resync_notice

from ..conftest import ADMIN_TOKEN


@pytest.fixture(autouse=True)
def _source_roots(monkeypatch, tmp_path):
    """The console's key names folder sources here: the operator allows the test's folder (metis/roots.py)."""
    monkeypatch.setenv("ASTRALYX_SOURCE_ROOTS", str(tmp_path))


SPEC = {"kind": "documents", "embedding": {"deployment": "e5-small"},
        "sources": [{"folder": "/srv/docs", "include": ["*.md"], "exclude": ["drafts/**"]}]}


def test_an_edit_keeps_what_it_does_not_name():
    # Given patterns replace the folder's, the others stay; blank ones clear theirs; blank folders are none.
    spec = edited_spec(SPEC, sources=[{"folder": "/srv/docs", "include": ["*.txt"]}, {"folder": "/srv/wiki"}, {"folder": " "}])
    assert spec["sources"] == [{"folder": "/srv/docs", "include": ["*.txt"], "exclude": ["drafts/**"]}, {"folder": "/srv/wiki"}]
    assert edited_spec(SPEC, sources=[{"folder": "/srv/docs", "exclude": [""]}])["sources"] == [
        {"folder": "/srv/docs", "include": ["*.md"]}]
    assert edited_spec(SPEC, no_embedding=True, extractor="qwen", mcp_save="on_its_own") == {
        "kind": "documents", "sources": SPEC["sources"], "extractor": {"deployment": "qwen"}, "mcp": {"save": "on_its_own"}}
    assert SPEC["sources"][0]["include"] == ["*.md"]  # the spec it was given is left as it was

    assert resync_notice(SPEC, edited_spec(SPEC, embedding="bge-m3")) == "the next sync embeds every passage again"
    assert resync_notice(SPEC, edited_spec(SPEC, sources=[{"folder": "/srv/wiki"}])) == (
        "the next sync indexes what the folders hold now")
    assert resync_notice(SPEC, edited_spec(SPEC, no_embedding=True)) is None  # keywords need no sync of their own
    assert resync_notice(SPEC, edited_spec(SPEC, sources=[])) is None


def _console(app) -> TestClient:
    client = TestClient(app, base_url="http://127.0.0.1", follow_redirects=False, headers={"origin": "http://127.0.0.1"})
    client.cookies.set("astralyx_key", ADMIN_TOKEN)
    return client


def test_the_cli_and_the_console_make_the_same_spec_and_say_the_same(astra, app, client, tmp_path):
    docs, wiki = tmp_path / "docs", tmp_path / "wiki"
    docs.mkdir(), wiki.mkdir()
    for name in ("by-cli", "by-console"):
        astra("metis", "create", name, "--source", str(docs), "--include", "*.md", "--exclude", "drafts/**")

    said = astra("metis", "update", "by-cli", "--source", str(docs), "--source", str(wiki), "--include", "*.txt").output
    form = {"embedding": "e5-small", "folder-0": str(docs), "include-0": "*.txt", "exclude-0": "drafts/**",
            "folder-1": str(wiki), "include-1": "*.txt", "exclude-1": ""}
    r = _console(app).post("/metis/knowledge-bases/by-console/settings", data=form)
    assert r.status_code == 303, r.text
    flash = json.loads(unquote(r.cookies["astralyx_flash"].strip('"')))

    def spec(name: str) -> dict:
        return client.get(f"/v1/metis/knowledge-bases/{name}").json()["spec"]

    assert spec("by-cli") == spec("by-console") == {
        "kind": "documents", "embedding": {"deployment": "e5-small"},
        "sources": [{"folder": str(docs), "include": ["*.txt"], "exclude": ["drafts/**"]},
                    {"folder": str(wiki), "include": ["*.txt"]}]}
    assert "the next sync indexes what the folders hold now: astra metis sync by-cli" in said
    assert flash["text"] == "Saved the settings of by-console: the next sync indexes what the folders hold now"
