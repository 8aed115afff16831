"""Metis ▸ Memory: New memory, Add a fact (secrets refused), show what was replaced, Edit, Forget."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from astralyx.auth.actor import Actor
from astralyx.util import iso

OWNER = Actor.local_owner("default")


def add_fact(page, subject: str, attribute: str, fact: str, said: str = "") -> None:
    page.get_by_label("Subject").fill(subject)
    page.get_by_label("Attribute").fill(attribute)
    page.get_by_label("Fact, in one sentence").fill(fact)
    if said:
        page.get_by_label("Said on (optional)").fill(said)
    page.get_by_role("button", name="Add fact").click()


def test_new_memory_add_edit_and_forget_facts(signed_in, live_server, shot):
    page, core = signed_in, live_server.core
    page.get_by_role("link", name="Memory").click()
    expect(page.get_by_role("heading", name="Memory", exact=True)).to_be_visible()
    page.get_by_label("Name").fill("team")
    page.get_by_label("Embedding model").select_option("")
    page.get_by_label("Extractor").select_option("")
    shot(page, "memory-new")
    page.get_by_role("button", name="Create memory").click()
    expect(page.get_by_role("status")).to_contain_text("Created memory team")
    assert core.bases.find("default", "team").kind == "memory"

    add_fact(page, "Ana", "role", "Ana leads the data team.", "2026-09-01")
    expect(page.get_by_role("status")).to_contain_text("Kept 1 fact")
    add_fact(page, "Ana", "role", "Ana works in research.", "2026-10-12")
    expect(page.get_by_role("status")).to_contain_text("it replaced “Ana leads the data team.”")
    add_fact(page, "Bruno", "city", "Bruno lives in Recife.")
    add_fact(page, "Ana", "role", "Ana works in research.", "2026-10-12")
    expect(page.get_by_role("status")).to_contain_text("Already known")

    # Facts grouped by subject, each with its date and source; the replaced one hidden.
    ana = page.locator("section", has=page.get_by_role("heading", name="Ana"))
    expect(ana).to_contain_text("role: Ana works in research. (2026-10-12, by hand)")
    expect(ana).not_to_contain_text("Ana leads the data team.")
    expect(page.get_by_role("heading", name="Bruno")).to_be_visible()

    # A secret is refused with the domain's code and message; nothing is written.
    add_fact(page, "Ana", "password", "Ana's password is hunter2-Xq9!vT3#pL.")
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("FACT_SENSITIVE")
    expect(alert).to_contain_text("secrets are never kept in a memory")
    assert "hunter2" not in str(core.memory.list(OWNER, "team", history=True).model_dump())

    page.get_by_role("link", name="show what was replaced").click()
    history = page.get_by_role("list", name="What it replaced")
    expect(history).to_contain_text("replaced: Ana leads the data team. (held 2026-09-01 – 2026-10-12, by hand)")
    shot(page, "memory")

    # Edit keeps the history.
    page.get_by_role("link", name="Edit: Ana works in research.").click()
    shot(page, "memory-edit")
    page.get_by_label("Fact").fill("Ana works in the research team.")
    page.get_by_role("button", name="Save correction").click()
    expect(page.get_by_role("status")).to_contain_text("its history is kept")
    page.get_by_role("link", name="show what was replaced").click()
    expect(ana).to_contain_text("Ana works in the research team.")
    expect(history).to_contain_text("Ana leads the data team.")
    # …and what it corrected, readable beside it
    today = iso()[:10]
    expect(ana.get_by_role("list", name="What Edit corrected")).to_contain_text(
        f"corrected from “Ana works in research.”, on {today}")
    page.get_by_role("link", name="Edit: Ana works in the research team.").click()
    expect(page.get_by_role("list", name="Corrected before")).to_contain_text("from “Ana works in research.”")
    page.get_by_role("link", name="Cancel").click()

    # Forget with its history says how many older facts go with it.
    page.get_by_role("link", name="Forget: Ana works in the research team.").click()
    expect(page.get_by_role("button", name="Forget it and the 1 older fact it replaced")).to_be_visible()
    shot(page, "memory-forget")
    page.get_by_role("button", name="Forget it and the 1 older fact it replaced").click()
    expect(page.get_by_role("status")).to_contain_text("Forgot the fact and the 1 older fact it replaced")
    expect(page.get_by_role("heading", name="Ana")).to_have_count(0)
    listing = core.memory.list(OWNER, "team", history=True).model_dump()
    assert [g["subject"] for g in listing["subjects"]] == ["Bruno"]


def test_forget_only_the_fact_lets_the_older_one_hold_again(signed_in, live_server):
    page, core = signed_in, live_server.core
    from astralyx.metis.bases import parse_request

    core.bases.create(OWNER, parse_request({"metadata": {"name": "team"}, "spec": {"kind": "memory"}}))
    core.memory.keep(OWNER, "team", [
        {"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team.", "said_at": "2026-09-01"},
        {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "said_at": "2026-10-12"},
    ])
    page.goto("/metis/memory/team")
    page.get_by_role("link", name="Forget: Ana works in research.").click()
    page.get_by_role("button", name="Forget this fact").click()
    expect(page.get_by_role("status")).to_contain_text(re.compile("Forgot the fact; “Ana leads the data team.” holds again"))
    expect(page.locator("li[data-fact]")).to_contain_text(["role: Ana leads the data team."])


def test_search_a_memory_as_of_a_date(signed_in, live_server, shot):
    page, core = signed_in, live_server.core
    from astralyx.metis.bases import parse_request

    core.bases.create(OWNER, parse_request({"metadata": {"name": "team"}, "spec": {"kind": "memory"}}))
    core.memory.keep(OWNER, "team", [
        {"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team.", "said_at": "2026-09-01"},
        {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "said_at": "2026-10-12"},
    ])
    page.goto("/metis/memory/team")
    search = page.get_by_role("search", name="Search this memory")
    search.get_by_label("Search this memory").fill("Ana role")
    search.get_by_role("button", name="Search").click()
    expect(page.locator("#passage-1")).to_contain_text("Ana works in research.")  # current first
    page.get_by_label("As of (optional)").fill("2026-09-15")
    page.get_by_role("button", name="Search", exact=True).click()
    expect(page.get_by_role("heading", name="Passages for “Ana role” as of 2026-09-15")).to_be_visible()
    expect(page.locator("#passage-1")).to_contain_text("Ana leads the data team.")


def test_a_viewer_reads_facts_but_cannot_change_them(page, live_server):
    from astralyx.metis.bases import parse_request

    from .conftest import sign_in

    core = live_server.core
    core.bases.create(OWNER, parse_request({"metadata": {"name": "team"}, "spec": {"kind": "memory"}}))
    core.memory.keep(OWNER, "team", [{"subject": "Ana", "attribute": "role", "fact": "Ana works in research."}])
    _, token = core.keys.create(None, "default", "viewer")
    sign_in(page, token)
    page.goto("/metis/memory/team")
    expect(page.get_by_text("role: Ana works in research.")).to_be_visible()
    expect(page.get_by_role("link", name="Edit: Ana works in research.")).to_have_count(0)
    expect(page.get_by_role("button", name="Add fact")).to_have_count(0)
    # The domain refuses even a form reached by its address, with its code; nothing changes.
    [group] = core.memory.list(OWNER, "team").model_dump()["subjects"]
    page.goto(f"/metis/memory/team/facts/{group['facts'][0]['id']}/edit")
    page.get_by_label("Fact").fill("Ana runs the company.")
    page.get_by_role("button", name="Save correction").click()
    expect(page.get_by_role("alert")).to_contain_text("PERMISSION_DENIED")
    assert core.memory.list(OWNER, "team").model_dump()["subjects"][0]["facts"][0]["fact"] == "Ana works in research."


def test_a_fact_said_again_shows_its_sayings_and_a_fact_in_between_splits_it(signed_in, live_server):
    page, core = signed_in, live_server.core
    from astralyx.metis.bases import parse_request

    core.bases.create(OWNER, parse_request({"metadata": {"name": "team"}, "spec": {"kind": "memory"}}))
    page.goto("/metis/memory/team")
    add_fact(page, "Ana", "employer", "Ana works at Acme.", "2024-03-01")
    add_fact(page, "Ana", "employer", "Ana works at Acme.", "2024-03-20")
    expect(page.get_by_role("status")).to_contain_text("Already known: kept once, said again 2024-03-20 recorded")
    ana = page.locator("section", has=page.get_by_role("heading", name="Ana"))
    expect(ana).to_contain_text("employer: Ana works at Acme. (2024-03-01, by hand, said again 2024-03-20)")

    add_fact(page, "Ana", "employer", "Ana works at Globex.", "2024-03-10")
    expect(page.get_by_role("status")).to_contain_text("between two sayings of “Ana works at Acme.”: now two facts")
    expect(ana).to_contain_text("employer: Ana works at Acme. (2024-03-20, by hand)")
    page.get_by_role("link", name="show what was replaced").click()
    history = page.get_by_role("list", name="What it replaced")
    expect(history).to_contain_text("replaced: Ana works at Globex. (held 2024-03-10 – 2024-03-20, by hand)")
    expect(history).to_contain_text("replaced: Ana works at Acme. (held 2024-03-01 – 2024-03-10, by hand)")

    # Forget the Globex in between: the two Acme facts are one again.
    page.get_by_role("link", name="Forget: Ana works at Globex.").click()
    page.get_by_role("button", name="Forget this fact").click()
    expect(page.get_by_role("status")).to_contain_text("“Ana works at Acme.”, said before and after it, is one fact again")
    expect(ana).to_contain_text("employer: Ana works at Acme. (2024-03-01, by hand, said again 2024-03-20)")


def test_counts_read_as_english_and_the_search_box_suggests_no_answer(signed_in, live_server):
    page, core = signed_in, live_server.core
    from astralyx.metis.bases import parse_request

    core.bases.create(OWNER, parse_request({"metadata": {"name": "team"}, "spec": {"kind": "memory"}}))
    core.memory.keep(OWNER, "team", [{"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team."}])
    page.goto("/metis/memory/team")
    expect(page.get_by_text("1 fact holds now")).to_be_visible()
    expect(page.get_by_role("searchbox", name="Search this memory")).to_have_attribute("placeholder", "A name, or a question")
    page.goto("/eos/models")
    expect(page.get_by_text(re.compile("needs needs"))).to_have_count(0)
