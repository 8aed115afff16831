"""Metis ▸ Knowledge bases: list, create with deployments chosen from the workspace, notes, delete with confirmation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from astralyx.auth.actor import Actor

from .conftest import deploy


@pytest.fixture(autouse=True)
def _source_roots(monkeypatch, tmp_path):
    """API keys name folder sources here: the operator allows the test's folder (metis/roots.py)."""
    monkeypatch.setenv("ASTRALYX_SOURCE_ROOTS", str(tmp_path))

OWNER = Actor.local_owner("default")


def test_create_a_base_write_a_note_and_delete_it_with_confirmation(signed_in, live_server, shot):
    page, core = signed_in, live_server.core
    deploy(core, "bge-m3", "embedding")
    deploy(core, "qwen3-4b", "chat", model="qwen3:4b")
    page.reload()
    # The menus offer the workspace's deployments of the right kind.
    embedding = page.get_by_label("Embedding model")
    expect(embedding.locator("option", has_text="bge-m3")).to_have_count(1)
    expect(embedding.locator("option", has_text="qwen3-4b")).to_have_count(0)
    expect(page.get_by_label("Extractor (memory)").locator("option")).to_have_text(["none", "qwen3-4b"])
    # The workspace's own embedding deployment comes first, whatever the alphabet says (bge-m3 < e5-small).
    expect(embedding).to_have_value("e5-small")

    page.get_by_label("Name").fill("handbook")
    embedding.select_option("")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("status")).to_contain_text("Created documents base handbook")
    expect(page.get_by_role("heading", name="handbook")).to_be_visible()
    assert core.bases.find("default", "handbook").spec.embedding is None

    page.get_by_text("Write a note").click()
    page.get_by_label("Title").fill("Offsite")
    page.get_by_label("Text (Markdown)").fill("The offsite is in Porto in March.")
    page.get_by_role("button", name="Save note").click()
    expect(page.get_by_text("The offsite is in Porto in March.")).to_be_visible()
    assert (core.bases.find("default", "handbook").folder / "notes" / "offsite.md").exists()

    page.goto("/metis/knowledge-bases")
    expect(page.get_by_role("cell", name="handbook")).to_be_visible()
    shot(page, "knowledge-bases")
    page.get_by_role("link", name="handbook").click()
    shot(page, "knowledge-base")

    # A second base of the same name: the domain's error, with its code, shown at the top.
    page.goto("/metis/knowledge-bases")
    page.get_by_label("Name").fill("handbook")
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("alert")).to_contain_text("BASE_EXISTS")

    page.goto("/metis/knowledge-bases/handbook")
    page.get_by_role("link", name="Delete this base…").click()
    page.get_by_label("Type handbook to confirm").fill("handbok")
    page.get_by_role("button", name="Delete handbook").click()
    expect(page.get_by_role("alert")).to_contain_text("CONFIRM_NAME")
    assert core.bases.find("default", "handbook") is not None
    page.get_by_label("Type handbook to confirm").fill("handbook")
    page.get_by_role("button", name="Delete handbook").click()
    expect(page.get_by_role("status")).to_contain_text("Deleted handbook")
    assert core.bases.find("default", "handbook") is None


def test_pages_show_only_the_keys_workspace(page, live_server):
    from .conftest import sign_in

    core = live_server.core
    core.workspaces.create(None, "acme")
    core.bases.create(Actor.local_owner("acme"), _request("secret-plans"))
    core.bases.create(Actor.local_owner("default"), _request("handbook"))
    _, token = core.keys.create(None, "acme", "viewer")
    sign_in(page, token)
    expect(page.get_by_role("link", name="secret-plans")).to_be_visible()
    expect(page.get_by_role("link", name="handbook")).to_have_count(0)
    page.goto("/metis/knowledge-bases/handbook")
    expect(page.get_by_role("alert")).to_contain_text("BASE_NOT_FOUND")


def _request(name: str):
    from astralyx.metis.bases import parse_request

    return parse_request({"metadata": {"name": name}})


def test_upload_a_document_and_search_with_cited_passages(signed_in, live_server, tmp_path, shot):
    page, core = signed_in, live_server.core
    core.bases.create(OWNER, _request("handbook"))
    leave = tmp_path / "leave.md"
    leave.write_text("# Leave policy\n\nIntro.\n\n## Vacation\n\nEach person has 25 vacation days a year.\n")
    page.goto("/metis/knowledge-bases/handbook")
    page.get_by_label("Upload a document").set_input_files(str(leave))
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.get_by_role("status")).to_contain_text("Uploaded leave.md")
    expect(page.get_by_role("cell", name="docs:handbook/leave.md")).to_be_visible()
    # The form sent without a file (a browser that does not check `required`) says what to do.
    page.get_by_label("Upload a document").evaluate("input => input.removeAttribute('required')")
    page.get_by_role("button", name="Upload", exact=True).click()
    expect(page.get_by_text("Choose a file to upload")).to_be_visible()
    page.goto("/metis/knowledge-bases/handbook")

    page.get_by_label("Search handbook").fill("vacation days")
    page.get_by_role("button", name="Search", exact=True).click()
    results = page.get_by_role("region", name="Passages for “vacation days”")
    first = results.locator("#passage-1")
    expect(first).to_contain_text("[1] Leave policy")
    expect(first).to_contain_text("Leave policy › Vacation › line 7")
    expect(first).to_contain_text("Each person has 25 vacation days a year.")
    shot(page, "knowledge-base-search")

    page.get_by_label("Search handbook").fill("zebra migrations")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.get_by_text("Nothing in handbook matched.")).to_be_visible()


def test_a_base_from_a_folder_syncs_from_its_page(signed_in, tmp_path):
    page = signed_in
    folder = tmp_path / "handbook"
    folder.mkdir()
    (folder / "leave.md").write_text("# Leave policy\n\nEach person has 25 vacation days a year.\n")
    page.get_by_label("Name").fill("handbook")
    page.get_by_label("Embedding model").select_option("")
    page.get_by_label("Folder on the server's machine (documents; optional)").fill(str(folder))
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("heading", name="handbook")).to_be_visible()
    page.get_by_role("button", name="Sync the folder now").click()
    expect(page.get_by_role("status")).to_contain_text("Synced handbook: 1 added, 0 changed, 0 removed")
    expect(page.get_by_role("cell", name="docs:handbook/leave.md")).to_be_visible()
    (folder / "leave.md").unlink()
    page.get_by_role("button", name="Sync the folder now").click()
    expect(page.get_by_role("status")).to_contain_text("0 added, 0 changed, 1 removed")


def test_code_in_search_results_keeps_its_lines(signed_in, live_server):
    page, core = signed_in, live_server.core
    from astralyx.auth.actor import Actor
    from astralyx.metis.bases import parse_request

    owner = Actor.local_owner("default")
    core.bases.create(owner, parse_request({"metadata": {"name": "rust"}}))
    core.notes.write(owner, "rust", "notes", "hello.md", "# Hello\n\n```rust\nfn main() {\n    println!(\"hi\");\n}\n```\n")
    page.goto("/metis/knowledge-bases/rust?q=println")
    text = page.locator(".passage-text").first
    expect(text).to_contain_text("fn main()")
    assert "fn main() {\n" in text.inner_text()


def test_the_base_page_shows_a_sync_as_it_runs(signed_in, live_server, tmp_path, shot):
    from ..metis.kit import PacedEmbedder, folder, make_base, wait_for

    page, core = signed_in, live_server.core
    embedder = PacedEmbedder(free=0)
    make_base(core, "book", embedder=embedder, sources=[folder(tmp_path, 200)])
    page.goto("/metis/knowledge-bases/book")
    expect(page.get_by_text("No documents yet.")).to_be_visible()
    page.get_by_role("button", name="Sync the folder now").click()
    expect(page.get_by_role("status")).to_contain_text("Syncing book in the background: its progress shows on this page")
    status = page.locator("#sync-status")
    expect(status).to_contain_text("Syncing book: 0 of 200 passages indexed, files 0 of 200")
    expect(page.get_by_text("No documents indexed yet: they appear here as the sync indexes them.")).to_be_visible()
    expect(page.get_by_text("No documents yet.")).to_have_count(0)
    # Sync now again: joins the running sync, says so, never waits for it
    page.get_by_role("button", name="Sync the folder now").click()
    expect(page.get_by_role("status")).to_contain_text("A sync of book is already running")
    embedder.step()  # one batch of 64 passages: the line follows it without a reload
    expect(status).to_contain_text("64 of 200 passages indexed", timeout=10_000)
    expect(page.locator("#documents-so-far")).to_contain_text("64 document(s) searchable so far")
    shot(page, "knowledge-base-syncing")
    embedder.finish()
    wait_for(lambda: core.documents.status(OWNER, "book").state == "finished")
    # the page reloads itself once the sync has ended
    expect(page.locator("#sync-status")).to_contain_text("Last sync finished", timeout=10_000)
    # the 200 documents, 50 a page (tests/console/test_page_frictions.py pages through them)
    expect(page.get_by_role("navigation", name="Pages of documents")).to_contain_text("1–50 of 200 (page 1 of 4)")


def test_a_base_settings_form_changes_its_spec_and_the_folder_it_indexes(signed_in, live_server, shot, tmp_path):
    from astralyx.metis.bases import parse_request

    page, core = signed_in, live_server.core
    deploy(core, "bge-m3", "embedding")
    src = tmp_path / "book"
    for rel, text in (("ch1.md", "Ferris is the Rust mascot."), ("print.md", "Ferris is the Rust mascot."),
                      ("drafts/next.md", "Unfinished chapter."), ("LICENSE.txt", "Permission is granted.")):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text + "\n")
    core.bases.create(OWNER, parse_request({"metadata": {"name": "book"}, "spec": {"sources": [{"folder": str(src)}]}}))
    page.goto("/metis/knowledge-bases/book")
    page.get_by_text("Change the embedding model or folders").click()
    expect(page.get_by_label("Folder on the server's machine (empty: removed)")).to_have_value(str(src))
    page.get_by_label("Leave out (globs, one a line)").first.fill("drafts/**\n")
    shot(page, "knowledge-base-settings")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_role("status")).to_contain_text("Saved the settings of book")
    assert core.bases.find("default", "book").spec.sources[0].exclude == ["drafts/**"]

    page.get_by_role("button", name="Sync the folder now").click()
    documents = page.locator("table", has=page.get_by_role("columnheader", name="Document"))
    expect(documents).to_contain_text("docs:book/ch1.md")
    expect(documents).not_to_contain_text("drafts/next.md")
    expect(documents).not_to_contain_text("LICENSE.txt")
    # the same passage twice: answered once, saying where else it is
    page.get_by_label("Search book").fill("Ferris mascot")
    page.get_by_role("button", name="Search").click()
    passages = page.locator("ol.passages > li")
    expect(passages).to_have_count(1)
    expect(passages.first).to_contain_text("The same passage is in 1 other document.")

    # a bad pattern: the domain's code and message, nothing changed
    page.get_by_text("Change the embedding model or folders").click()
    page.get_by_label("Leave out (globs, one a line)").first.fill("../elsewhere/**")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_role("alert")).to_contain_text("INVALID_SPEC")
    expect(page.get_by_role("alert")).to_contain_text("points out of the folder")
    assert core.bases.find("default", "book").spec.sources[0].exclude == ["drafts/**"]

    # another embedding model, chosen from the workspace's
    page.goto("/metis/knowledge-bases/book")
    page.get_by_text("Change the embedding model or folders").click()
    page.locator("#settings-embedding").select_option("bge-m3")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_role("status")).to_contain_text("the next sync embeds every passage again")
    assert core.bases.find("default", "book").spec.embedding.deployment == "bge-m3"
