"""/mcp on the real app (uvicorn on localhost) with the SDK's Streamable HTTP client: keys decide, as in the API."""

from __future__ import annotations

import anyio
import httpx
import pytest
from starlette.testclient import TestClient

from .conftest import ADMIN_TOKEN, MODES, answering, error_of, facts, http, result
from .kit import INIT, key

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}




async def test_401_without_a_key_or_with_a_wrong_one(served):
    async with httpx.AsyncClient() as h:
        none = await h.post(f"{served}/mcp", json=INIT, headers=MCP_HEADERS)
        wrong = await h.post(f"{served}/mcp", json=INIT, headers={**MCP_HEADERS, "Authorization": "Bearer nope"})
        right = await h.post(f"{served}/mcp", json=INIT, headers={**MCP_HEADERS, "Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert none.status_code == 401 and none.json()["error"]["code"] == "UNAUTHORIZED"
    assert none.headers["www-authenticate"].startswith("Bearer")
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "INVALID_KEY"
    assert right.status_code == 200 and right.headers.get("mcp-session-id")


async def test_admin_key_calls_every_tool(served, bases):
    bases.reply(facts(("Ana", "role", "Ana works in research.", 1)))
    async with http(f"{served}/mcp") as c:
        names = [t.name for t in (await c.list_tools()).tools]
        found = await c.call_tool("search_knowledge", {"query": "vacation", "base": "handbook"})
        saved = await c.call_tool("save_to_knowledge", {"base": "journal", "title": "Standup", "text": "Ana leads."})
        draft = await c.call_tool("save_to_knowledge", {"base": "handbook", "title": "Offsite", "text": "Porto."})
        proposed = await c.call_tool("remember", {"text": "Ana moved to research."})
        kept = await c.call_tool("keep_facts", {"facts": result(proposed)["proposals"]})
        known = await c.call_tool("recall", {"subject": "Ana"})
    assert names == ["search_knowledge", "save_to_knowledge", "remember", "keep_facts", "recall"]
    assert "25 vacation days" in result(found)["results"][0]["text"]
    assert result(saved)["status"] == "saved"
    # Over HTTP the draft's answer says where in this server's console it waits.
    assert result(draft)["where"]["console"] == f"{served}/metis/knowledge-bases/handbook#drafts"
    assert result(kept)["kept"] == 1
    assert result(known)["subjects"][0]["facts"][0]["fact"] == "Ana works in research."
    receipt = found.meta["astralyx/receipt"]["receipt"]
    assert receipt["caller"] != "local" and receipt["deployment"] == "mcp"


async def test_a_caller_key_searches_only_what_it_is_given(served, bases, core):
    caller = key(core, "caller")
    async with http(f"{served}/mcp", caller) as c:
        given = await c.call_tool("search_knowledge", {"query": "vacation"})  # handbook: given to deployment chat
        journal = await c.call_tool("search_knowledge", {"query": "standup", "base": "journal"})
        keep = await c.call_tool("keep_facts", {"memory": "team", "facts": [
            {"subject": "Ana", "attribute": "role", "fact": "Ana works in research."}]})
        save = await c.call_tool("save_to_knowledge", {"base": "handbook", "title": "T", "text": "x"})
        resources = await c.list_resources()
    assert result(given)["knowledge_base"] == "handbook" and result(given)["results"]
    for r, permission in ((journal, "knowledge-bases:read"), (keep, "knowledge-bases:write-content"),
                          (save, "knowledge-bases:write-content")):
        err = error_of(r)
        assert err["code"] == "PERMISSION_DENIED" and err["details"]["permission"] == permission
        assert permission in err["message"] and "'caller'" in err["message"]
    assert resources.resources == []


async def test_a_viewer_reads_but_does_not_write(served, bases, core):
    async with http(f"{served}/mcp", key(core, "viewer")) as c:
        found = await c.call_tool("search_knowledge", {"query": "trains", "base": "handbook"})
        recall = await c.call_tool("recall", {"memory": "team"})
        save = await c.call_tool("save_to_knowledge", {"base": "journal", "title": "T", "text": "x"})
    assert result(found)["results"] and result(recall)["count"] == 0
    assert error_of(save)["details"]["permission"] == "knowledge-bases:write-content"


async def test_another_workspace_sees_its_own_bases(served, bases, core):
    async with http(f"{served}/mcp", key(core, "admin", "acme")) as c:
        r = await c.call_tool("search_knowledge", {"query": "vacation", "base": "handbook"})
    assert error_of(r)["code"] == "BASE_NOT_FOUND"


async def test_base_query_limits_what_is_offered(served, bases):
    async with http(f"{served}/mcp?base=team") as c:
        recall = await c.call_tool("recall", {})
        search = await c.call_tool("search_knowledge", {"query": "vacation", "base": "handbook"})
    assert result(recall)["knowledge_base"] == "team"
    assert error_of(search)["code"] == "BASE_NOT_OFFERED"


@pytest.mark.parametrize("mode", MODES)
async def test_elicitation_over_http_accepted_and_declined(served, bases, core, mode):
    async with http(f"{served}/mcp", elicitation_callback=answering("accept"), mode=mode) as c:
        yes = await c.call_tool("save_to_knowledge", {"base": "handbook", "title": "Offsite", "text": "Porto."})
    async with http(f"{served}/mcp", elicitation_callback=answering("decline"), mode=mode) as c:
        no = await c.call_tool("save_to_knowledge", {"base": "handbook", "title": "Other", "text": "No."})
    assert result(yes)["status"] == "saved" and result(no)["status"] == "declined"
    saved = sorted(p.name for p in (core.bases.folder("default", "handbook") / "saved").iterdir())
    assert saved == ["offsite.md"]


async def test_remember_over_http_with_progress(served, bases):
    bases.reply(facts(("Ana", "role", "Ana works in research.", 1)), delay=2.5)
    progress: list = []

    async def on_progress(done, total, message):  # type: ignore[no-untyped-def]
        progress.append(done)

    async with http(f"{served}/mcp", elicitation_callback=answering("accept")) as c:
        r = await c.call_tool("remember", {"text": "Ana moved to research."}, progress_callback=on_progress)
    assert result(r)["kept"] == 1 and len(progress) >= 2


async def test_two_http_clients_writing_to_one_memory_lose_nothing(served, bases, core):
    tokens = [ADMIN_TOKEN, key(core, "editor")]

    async def writer(n: int) -> None:
        async with http(f"{served}/mcp", tokens[n]) as c:
            async with anyio.create_task_group() as tg:  # and each sends its calls at once
                for i in range(6):
                    tg.start_soon(c.call_tool, "keep_facts", {"facts": [
                        {"subject": f"w{n}-{i}", "attribute": "note", "fact": f"Writer {n} wrote {i}."}]})

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer, 0)
        tg.start_soon(writer, 1)
    async with http(f"{served}/mcp") as c:
        everything = result(await c.call_tool("recall", {}))
    assert {g["subject"] for g in everything["subjects"]} == {f"w{n}-{i}" for n in (0, 1) for i in range(6)}


def test_the_app_still_serves_without_its_lifespan_and_restarts(app):
    # The CLI's in-process client never runs the lifespan: the API answers, /mcp says why it cannot.
    plain = TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert plain.get("/v1/metis/knowledge-bases").status_code == 200
    r = plain.post("/mcp", json=INIT, headers=MCP_HEADERS)
    assert r.status_code == 503 and r.json()["error"]["code"] == "MCP_NOT_RUNNING"
    for _ in range(2):  # each start of the app gets a session manager of its own
        with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as c:
            r = c.post("/mcp", json=INIT, headers=MCP_HEADERS)
            assert r.status_code == 200 and r.headers.get("mcp-session-id"), r.text


@pytest.mark.parametrize("mode", MODES)
async def test_astra_mcp_relays_to_a_server_with_the_key(served, bases, core, home, mode):
    import os
    import sys

    from mcp import Client, StdioServerParameters

    from .conftest import ROOT

    caller = key(core, "caller")
    env = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", ""), "ASTRALYX_API": f"{served}/v1",
           "ASTRALYX_TOKEN": caller}
    params = StdioServerParameters(command=sys.executable, args=["-m", "astralyx", "mcp"], env=env, cwd=str(ROOT))
    async with Client(params, read_timeout_seconds=60, mode=mode) as c:
        names = [t.name for t in (await c.list_tools()).tools]
        given = await c.call_tool("search_knowledge", {"query": "vacation"})
        denied = await c.call_tool("recall", {"memory": "team"})
    assert "search_knowledge" in names
    assert result(given)["knowledge_base"] == "handbook"
    assert given.meta["astralyx/receipt"]["receipt"]["caller"] != "local"  # the key called, not the machine's owner
    assert error_of(denied)["details"]["permission"] == "knowledge-bases:read"
    # Elicitation crosses the relay: the admin key's save is asked of the person.
    env["ASTRALYX_TOKEN"] = ADMIN_TOKEN
    params = StdioServerParameters(command=sys.executable, args=["-m", "astralyx", "mcp", "--base", "handbook"], env=env,
                                   cwd=str(ROOT))
    async with Client(params, read_timeout_seconds=60, mode=mode, elicitation_callback=answering("accept")) as c:
        saved = await c.call_tool("save_to_knowledge", {"title": "Offsite", "text": "Porto."})
    assert result(saved)["status"] == "saved" and result(saved)["knowledge_base"] == "handbook"
