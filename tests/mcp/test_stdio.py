"""`astra mcp` over stdio with the SDK's own client: tools, answers, elicitation, errors with codes, receipts."""

from __future__ import annotations

import json

import anyio
import pytest
from click.testing import CliRunner

from astralyx.cli import cli
from astralyx.eos.knowledge import CITE_NOTE, NOTHING_NOTE

from .conftest import MODES, answering, error_of, facts, result, stdio


async def test_tools_are_listed_with_annotations_and_described_fields(home, bases):
    async with stdio(home) as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
    assert list(listed) == ["search_knowledge", "save_to_knowledge", "remember", "keep_facts", "recall"]
    hints = {n: (t.annotations.read_only_hint, t.annotations.destructive_hint, t.annotations.idempotent_hint)
             for n, t in listed.items()}
    assert hints == {"search_knowledge": (True, False, True), "save_to_knowledge": (False, False, False),
                     "remember": (False, False, False), "keep_facts": (False, False, True),
                     "recall": (True, False, True)}
    for tool in listed.values():
        props = tool.input_schema["properties"]
        assert props and all(p.get("description") for p in props.values()), tool.name
        assert "anyOf" not in json.dumps(tool.input_schema), tool.name  # optional fields are plain types
    assert listed["search_knowledge"].input_schema["required"] == ["query"]
    assert listed["search_knowledge"].input_schema["properties"]["max_results"]["maximum"] == 8
    fact = listed["keep_facts"].input_schema["properties"]["facts"]["items"]  # inlined: no $ref for clients to chase
    assert fact["required"] == ["subject", "attribute", "fact"] and fact["properties"]["said_at"]["description"]
    assert "$ref" not in json.dumps(listed["keep_facts"].input_schema)
    # The bases are named where the model reads what a tool is for.
    assert "handbook (documents)" in listed["search_knowledge"].description
    assert "team (memory)" in listed["recall"].description


async def test_search_answers_numbered_passages_with_the_gateways_notes(home, bases, tmp_path):
    async with stdio(home) as c:
        found = await c.call_tool("search_knowledge", {"query": "vacation days", "base": "handbook"})
        nothing = await c.call_tool("search_knowledge", {"query": "zeppelin", "base": "handbook"})
    answer = result(found)
    first = answer["results"][0]
    assert first["ref"] == 1 and first["document"].endswith("leave.md") and "25 vacation days" in first["text"]
    assert first["title"] == "Leave policy" and first["where"]
    assert answer["note"] == CITE_NOTE
    assert result(nothing)["results"] == [] and result(nothing)["note"] == NOTHING_NOTE.format(base="handbook")
    # The call's signed receipt, verified by `astra eos receipts verify`.
    receipt = found.meta["astralyx/receipt"]
    assert receipt["receipt"]["tool"] == "search_knowledge" and receipt["receipt"]["knowledge_base"] == "handbook"
    assert receipt["receipt"]["deployment"] == "mcp" and receipt["receipt"]["caller"] == "local"
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(receipt))
    out = CliRunner().invoke(cli, ["eos", "receipts", "verify", str(path)])
    assert out.exit_code == 0 and out.output.startswith(f"valid: {receipt['receipt']['id']}"), out.output
    receipt["receipt"]["knowledge_base"] = "salaries"
    path.write_text(json.dumps(receipt))
    out = CliRunner().invoke(cli, ["eos", "receipts", "verify", str(path)])
    assert out.exit_code == 1 and "field 'knowledge_base' is \"salaries\"" in out.output


async def test_errors_are_tool_errors_with_stable_codes(home, bases):
    async with stdio(home) as c:
        which = await c.call_tool("search_knowledge", {"query": "x"})
        missing = await c.call_tool("search_knowledge", {"query": "x", "base": "nope"})
        too_many = await c.call_tool("search_knowledge", {"query": "x", "base": "handbook", "max_results": 9})
        secret = await c.call_tool("keep_facts", {"facts": [
            {"subject": "Ana", "attribute": "password", "fact": "Ana's password is hunter2-Xq9!vR7#pLm2."}]})
        not_memory = await c.call_tool("recall", {"memory": "handbook"})
    assert error_of(which)["code"] == "BASE_REQUIRED" and error_of(which)["details"]["bases"] == [
        "handbook", "journal", "team"]
    assert error_of(missing)["code"] == "BASE_NOT_FOUND"
    assert error_of(too_many)["code"] == "INVALID_ARGUMENTS" and "max_results" in error_of(too_many)["message"]
    assert error_of(secret)["code"] == "FACT_SENSITIVE" and "hunter2" not in error_of(secret)["message"]
    assert error_of(not_memory)["code"] == "NOT_A_MEMORY"
    # Failed calls have receipts too.
    assert which.meta["astralyx/receipt"]["receipt"]["tool"] == "search_knowledge"


async def test_base_option_limits_what_is_offered(home, bases):
    async with stdio(home, "--base", "handbook") as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
        only = await c.call_tool("search_knowledge", {"query": "vacation"})  # the one base: no need to name it
        other = await c.call_tool("recall", {"memory": "team"})
        resources = await c.list_resources()
    assert "handbook (documents)" in listed["search_knowledge"].description
    assert "journal" not in listed["search_knowledge"].description
    assert result(only)["knowledge_base"] == "handbook"
    assert error_of(other)["code"] == "BASE_NOT_OFFERED" and "--base" in error_of(other)["message"]
    assert [r.name for r in resources.resources] == ["handbook"]


async def test_save_without_elicitation_is_a_draft_the_console_lists(home, bases, core):
    async with stdio(home) as c:
        r = await c.call_tool("save_to_knowledge", {"base": "handbook", "title": "Offsite", "text": "In Porto in March."})
    answer = result(r)
    assert answer["status"] == "draft" and answer["draft"]["title"] == "Offsite"
    assert answer["where"]["console"] == "/metis/knowledge-bases/handbook#drafts"
    assert "Drafts waiting" in answer["note"]
    from astralyx.auth.actor import Actor

    pending = core.saves.drafts(Actor.local_owner("default"), "handbook")
    assert [d.title for d in pending] == ["Offsite"] and pending[0].deployment.startswith("mcp")
    assert not (core.bases.folder("default", "handbook") / "saved").exists()


@pytest.mark.parametrize("mode", MODES)
async def test_save_asks_through_elicitation_accepted(home, bases, core, mode):
    seen: list = []
    ask = answering("accept", lambda form: {**form, "title": "Offsite 2027"}, seen)
    async with stdio(home, elicitation_callback=ask, mode=mode) as c:
        r = await c.call_tool("save_to_knowledge", {"base": "handbook", "title": "Offsite", "text": "In Porto in March."})
    answer = result(r)
    assert "Offsite" in seen[0].message and "In Porto in March." in seen[0].message  # the person saw title and text
    assert answer["status"] == "saved" and answer["asked_first"] is True and answer["path"] == "saved/offsite-2027.md"
    note = (core.bases.folder("default", "handbook") / "saved" / "offsite-2027.md").read_text()
    assert "# Offsite 2027" in note and "In Porto in March." in note and 'source: "model"' in note
    from astralyx.auth.actor import Actor

    saves = core.saves.list(Actor.local_owner("default"), "handbook")
    assert [(s.title, s.confirmed) for s in saves] == [("Offsite 2027", True)]


@pytest.mark.parametrize("mode", MODES)
async def test_save_declined_saves_nothing(home, bases, core, mode):
    async with stdio(home, elicitation_callback=answering("decline"), mode=mode) as c:
        r = await c.call_tool("save_to_knowledge", {"base": "handbook", "title": "Offsite", "text": "In Porto."})
    answer = result(r)
    assert answer["status"] == "declined" and "nothing was saved" in answer["note"]
    assert not (core.bases.folder("default", "handbook") / "saved").exists()
    from astralyx.auth.actor import Actor

    assert core.saves.drafts(Actor.local_owner("default"), "handbook") == []


async def test_save_on_its_own_only_where_the_base_says_so_and_within_the_limit(home, bases, core):
    journal = core.bases.find("default", "journal")
    for i in range(core.saves.per_hour - 1):
        core.saves.save_now(journal, "chat", None, f"Entry {i}", "text")
    async with stdio(home) as c:
        last = await c.call_tool("save_to_knowledge", {"base": "journal", "title": "Standup", "text": "Ana leads."})
        over = await c.call_tool("save_to_knowledge", {"base": "journal", "title": "One more", "text": "Too many."})
    saved = result(last)
    assert saved["status"] == "saved" and saved["undo"].endswith("/undo") and saved["path"] == "saved/standup.md"
    assert error_of(over)["code"] == "SAVE_LIMIT"
    assert "ask the person" in over.structured_content["note"].lower()


async def test_keep_facts_and_recall_follow_the_timeline(home, bases):
    async with stdio(home) as c:
        kept = await c.call_tool("keep_facts", {"memory": "team", "facts": [
            {"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team.", "said_at": "2026-09-01"},
            {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "said_at": "2026-10-12"},
            {"subject": "Bruno", "attribute": "city", "fact": "Bruno lives in Recife."},
        ]})
        again = await c.call_tool("keep_facts", {"facts": [
            {"subject": "Bruno", "attribute": "city", "fact": "Bruno lives in Recife."}]})
        now = await c.call_tool("recall", {"subject": "ana"})
        then = await c.call_tool("recall", {"subject": "Ana", "as_of": "2026-09-30"})
        history = await c.call_tool("recall", {"subject": "Ana", "attribute": "role", "history": True})
        unknown = await c.call_tool("recall", {"subject": "Zoe"})
    assert result(kept)["kept"] == 3 and result(kept)["knowledge_base"] == "team"
    assert result(again)["kept"] == 0 and result(again)["known"] == 1  # the same fact again changes nothing
    assert [f["fact"] for g in result(now)["subjects"] for f in g["facts"]] == ["Ana works in research."]
    assert [f["fact"] for g in result(then)["subjects"] for f in g["facts"]] == ["Ana leads the data team."]
    replaced = result(history)["subjects"][0]["facts"][0]["replaced"]
    assert [f["fact"] for f in replaced] == ["Ana leads the data team."] and result(history)["history_count"] == 1
    assert result(unknown)["subjects"] == [] and "do not make an answer up" in result(unknown)["note"]


TALK = "Ana moved to research this week. The launch moved to Friday 16 October. My password is hunter2-Xq9!vR7#pLm2."


def script_facts(server) -> None:
    server.reply(facts(("Ana", "role", "Ana works in research.", 1), ("Launch", "date", "The launch is on 16 October.", 1),
                       ("Me", "password", "My password is hunter2-Xq9!vR7#pLm2.", 1)))


async def test_remember_without_elicitation_returns_proposals_for_keep_facts(home, bases):
    script_facts(bases)
    async with stdio(home) as c:
        r = await c.call_tool("remember", {"text": TALK, "source": "chat: standup"})
        before = await c.call_tool("recall", {})
        proposals = result(r)["proposals"]
        kept = await c.call_tool("keep_facts", {"facts": proposals[:1]})
        after = await c.call_tool("recall", {})
    answer = result(r)
    assert answer["status"] == "proposed" and answer["kept"] == 0 and "keep_facts" in answer["note"]
    assert [p["subject"] for p in proposals] == ["Ana", "Launch"]
    assert answer["left_out_secrets"] == 1 and "secrets" in answer["note"] and "hunter2" not in json.dumps(answer)
    assert result(before)["count"] == 0  # nothing kept without a choice
    assert result(kept)["kept"] == 1 and result(after)["count"] == 1
    assert result(after)["subjects"][0]["facts"][0]["source"] == "chat: standup"


@pytest.mark.parametrize("mode", MODES)
async def test_remember_lets_the_person_choose_and_reports_progress(home, bases, mode):
    bases.reply(facts(("Ana", "role", "Ana works in research.", 1), ("Launch", "date", "The launch is on 16 October.", 1)),
                delay=2.5)
    seen: list = []
    progress: list = []

    async def on_progress(done, total, message):  # type: ignore[no-untyped-def]
        progress.append((done, message))

    untick_launch = answering("accept", lambda form: {**form, "fact_2": False}, seen)
    async with stdio(home, elicitation_callback=untick_launch, mode=mode) as c:
        r = await c.call_tool("remember", {"memory": "team", "text": TALK}, progress_callback=on_progress)
        known = await c.call_tool("recall", {"memory": "team"})
    answer = result(r)
    assert "Ana — role: Ana works in research." in seen[0].message
    assert seen[0].requested_schema["properties"]["fact_1"]["type"] == "boolean"
    assert answer["status"] == "kept" and answer["kept"] == 1 and answer["chosen"] == 1 and answer["of"] == 2
    assert [g["subject"] for g in result(known)["subjects"]] == ["Ana"]
    # The slow model: progress notifications while it read (one at once, more every 2 s).
    assert len(progress) >= 2 and [p for p, _ in progress] == sorted(p for p, _ in progress)
    assert "reading the conversation" in progress[0][1]


async def test_remember_declined_keeps_nothing(home, bases):
    script_facts(bases)
    async with stdio(home, elicitation_callback=answering("decline")) as c:
        r = await c.call_tool("remember", {"text": TALK})
        known = await c.call_tool("recall", {})
    assert result(r)["status"] == "declined" and result(r)["kept"] == 0
    assert result(known)["count"] == 0


async def test_remember_without_extractor_says_so(home, bases, client):
    r = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "plain"},
                                                       "spec": {"kind": "memory", "sources": []}})
    assert r.status_code == 201
    async with stdio(home) as c:
        r = await c.call_tool("remember", {"memory": "plain", "text": TALK})
    assert error_of(r)["code"] == "NO_EXTRACTOR"


async def test_notes_are_resources(home, bases):
    async with stdio(home) as c:
        listed = await c.list_resources()
        base = await c.read_resource("astralyx://bases/handbook")
        note = await c.read_resource("astralyx://bases/handbook/notes/leave.md")
    assert [r.uri for r in listed.resources] == ["astralyx://bases/handbook", "astralyx://bases/journal",
                                                 "astralyx://bases/team"]
    paths = [n["path"] for n in json.loads(base.contents[0].text)["notes"]]
    assert paths == ["notes/leave.md", "notes/travel.md"]
    assert "25 vacation days" in note.contents[0].text


async def test_two_clients_writing_to_one_memory_lose_nothing(home, bases):
    async def writer(name: str) -> None:
        async with stdio(home) as c:
            for i in range(8):
                r = await c.call_tool("keep_facts", {"facts": [
                    {"subject": f"{name}-{i}", "attribute": "note", "fact": f"{name} wrote {i}."},
                    {"subject": "Shared", "attribute": f"by {name}", "fact": f"{name} wrote {i}.",
                     "said_at": f"2026-10-{i + 1:02d}"}]})
                assert result(r)["kept"] == 2

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer, "one")
        tg.start_soon(writer, "two")
    async with stdio(home) as c:
        everything = result(await c.call_tool("recall", {"history": True}))
    subjects = {g["subject"] for g in everything["subjects"]}
    assert {f"{n}-{i}" for n in ("one", "two") for i in range(8)} <= subjects
    shared = next(g for g in everything["subjects"] if g["subject"] == "Shared")
    assert sorted(f["fact"] for f in shared["facts"]) == ["one wrote 7.", "two wrote 7."]
    assert everything["count"] == 18 and everything["history_count"] == 14


async def test_a_request_state_not_ours_is_refused(home, bases):
    # 2026-07-28: what a second round needs rides request_state, sealed by the server; a forged one is refused.
    async with stdio(home) as c:
        r = await c.session.call_tool("save_to_knowledge", {"base": "handbook", "title": "T", "text": "x"},
                                      request_state="eyJkcmFmdCI6ICJkXzEifQ.0000", allow_input_required=True)
    assert error_of(r)["code"] == "INVALID_STATE"
