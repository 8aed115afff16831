"""What the console shows, from issue 30's smaller frictions: a base's documents a page at a time, passages
numbered once ("[3]", not "3. [3]"), "1 tool" (not "1 tools"), the create forms' labels in one line."""

from __future__ import annotations

from playwright.sync_api import expect

from astralyx.auth.actor import Actor
from astralyx.eos import tools
from astralyx.metis.bases import parse_request

from .conftest import deploy

OWNER = Actor.local_owner("default")


def test_a_base_lists_its_documents_a_page_at_a_time(signed_in, live_server, tmp_path, shot):
    page, core = signed_in, live_server.core
    folder = tmp_path / "wiki"
    folder.mkdir()
    for i in range(1, 121):
        (folder / f"page-{i:03}.md").write_text(f"# Page {i}\n\nThe text of page {i}.\n")
    core.bases.create(OWNER, parse_request({"metadata": {"name": "wiki"}, "spec": {"sources": [{"folder": str(folder)}]}}))
    assert core.documents.sync(OWNER, "wiki")["documents"] == 120

    page.goto("/metis/knowledge-bases/wiki")
    documents = page.locator("table", has=page.get_by_role("columnheader", name="Document"))
    rows = documents.locator("tbody tr")
    pager = page.get_by_role("navigation", name="Pages of documents")
    expect(page.locator("h2#documents")).to_have_text("Documents 120")
    expect(rows).to_have_count(50)
    expect(rows.first).to_contain_text("docs:wiki/page-001.md")
    expect(pager).to_contain_text("1–50 of 120 (page 1 of 3)")
    expect(pager.get_by_role("link", name="Previous page")).to_have_count(0)
    shot(page, "knowledge-base-documents-paged")

    pager.get_by_role("link", name="Next page").click()
    expect(rows).to_have_count(50)
    expect(rows.first).to_contain_text("docs:wiki/page-051.md")
    expect(pager).to_contain_text("51–100 of 120 (page 2 of 3)")
    pager.get_by_role("link", name="Next page").click()
    expect(rows).to_have_count(20)
    expect(rows.last).to_contain_text("docs:wiki/page-120.md")
    expect(pager.get_by_role("link", name="Next page")).to_have_count(0)
    pager.get_by_role("link", name="Previous page").click()
    expect(pager).to_contain_text("page 2 of 3")

    # A search above the table stays when the documents page on; a page past the last shows the last.
    page.goto("/metis/knowledge-bases/wiki?q=page&page=99")
    expect(pager).to_contain_text("101–120 of 120 (page 3 of 3)")
    expect(page.locator("ol.passages > li").first).to_be_visible()
    pager.get_by_role("link", name="Previous page").click()
    expect(pager).to_contain_text("page 2 of 3")
    assert "q=page" in page.url and "page=2" in page.url


def test_passages_are_numbered_once(signed_in, live_server):
    page, core = signed_in, live_server.core
    core.bases.create(OWNER, parse_request({"metadata": {"name": "handbook"}}))
    core.notes.write(OWNER, "handbook", "notes", "leave.md", "# Leave policy\n\nEach person has 25 vacation days a year.\n")
    core.notes.write(OWNER, "handbook", "notes", "travel.md", "# Travel\n\nVacation trips are booked by train.\n")
    page.goto("/metis/knowledge-bases/handbook?q=vacation")
    passages = page.locator("ol.passages > li")
    expect(passages).to_have_count(2)
    for i in range(2):
        expect(passages.nth(i)).to_contain_text(f"[{i + 1}] ")
        # No list number drawn beside the [n] it already says.
        assert passages.nth(i).evaluate("li => getComputedStyle(li).listStyleType") == "none"


def test_a_deployment_with_one_tool_says_1_tool(signed_in, live_server):
    page, core = signed_in, live_server.core
    core.bases.create(OWNER, parse_request({"metadata": {"name": "handbook"}}))
    deploy(core, "chat", "chat", model="scripted")
    tools.set_knowledge(OWNER, core.deployments, "chat", "handbook", search=True, save=False)
    deploy(core, "helper", "chat", model="scripted")
    tools.set_knowledge(OWNER, core.deployments, "helper", "handbook", search=True, save=True)
    page.goto("/playground")
    options = page.get_by_label("Chat deployment").locator("option")
    expect(options).to_have_text(["chat (scripted, 1 tool)", "helper (scripted, 2 tools)"])


def test_the_create_forms_put_their_labels_in_one_line(signed_in, live_server):
    page, core = signed_in, live_server.core
    deploy(core, "qwen3-4b", "chat", model="qwen3:4b")
    for url, fields in (("/metis/knowledge-bases", ("name", "kind", "embedding", "extractor")),
                        ("/metis/memory", ("name", "embedding", "extractor"))):
        page.goto(url)
        labels = [page.locator(f"label[for={f}]").bounding_box() for f in fields]
        controls = [page.locator(f"#{f}").bounding_box() for f in fields]
        assert len({round(b["y"]) for b in labels}) == 1, (url, labels)  # the Name label once sat higher
        assert len({round(b["y"]) for b in controls}) == 1 and len({round(b["height"]) for b in controls}) == 1, (url, controls)
