"""One name for "which base" in every MCP tool (`base`; `memory`, the old name of three, still taken), and
BASE_NOT_OFFERED naming the fix in the terms of how the limit was set (?base= over HTTP, --base on stdio)."""

from __future__ import annotations

from .conftest import error_of, http, result

TOOLS = ["search_knowledge", "save_to_knowledge", "remember", "keep_facts", "recall"]
ANA = {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "said_at": "2026-10-12"}


async def test_every_tool_names_the_base_base(served, bases):
    async with http(f"{served}/mcp") as c:
        listed = {t.name: t.input_schema["properties"] for t in (await c.list_tools()).tools}
        kept = await c.call_tool("keep_facts", {"base": "team", "facts": [ANA]})
        recalled = await c.call_tool("recall", {"base": "team", "subject": "Ana"})
        # Clients written against the old schema still call with `memory`.
        old = await c.call_tool("recall", {"memory": "team"})
        wrong = await c.call_tool("recall", {"base": "handbook"})
        both = await c.call_tool("recall", {"base": "team", "memory": "team"})
    assert list(listed) == TOOLS
    for name, properties in listed.items():
        assert "base" in properties and "memory" not in properties, (name, list(properties))
        assert properties["base"]["type"] == "string" and properties["base"]["description"], name
    assert result(kept)["kept"] == 1
    assert result(recalled)["subjects"][0]["facts"][0]["fact"] == "Ana works in research."
    assert result(old)["knowledge_base"] == "team"
    assert error_of(wrong)["code"] == "NOT_A_MEMORY"
    assert error_of(both)["code"] == "INVALID_ARGUMENTS"


async def test_a_memory_to_choose_is_asked_for_as_base(served, bases, client):
    r = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "family"}, "spec": {"kind": "memory"}})
    assert r.status_code == 201, r.text
    async with http(f"{served}/mcp") as c:
        which = await c.call_tool("recall", {})
    assert error_of(which)["code"] == "BASE_REQUIRED"
    assert error_of(which)["message"] == "Say which memory: base is one of family, team"


async def test_base_not_offered_over_http_says_the_address_to_use(served, bases):
    async with http(f"{served}/mcp?base=handbook") as c:
        recall = await c.call_tool("recall", {"base": "team"})
    error = error_of(recall)
    assert error["code"] == "BASE_NOT_OFFERED"
    assert error["message"] == (
        "This MCP server offers only handbook, not 'team' (its address asks for ?base=handbook: connect to "
        "/mcp?base=handbook&base=team to offer it too, or, with `astra mcp` relaying to a server, add --base team)"
    )


async def test_a_field_is_spelt_alike_by_mcp_and_the_api(served, bases, client):
    # tools[0].name, never tools.0.name: MCP's arguments said their list items with dots, the API with brackets.
    async with http(f"{served}/mcp") as c:
        bad = await c.call_tool("keep_facts", {"base": "team", "facts": [ANA, {"subject": "Ana", "fact": "No attribute."}]})
    error = error_of(bad)
    assert error["code"] == "INVALID_ARGUMENTS"
    assert error["message"] == "The arguments of keep_facts are not valid: facts[1].attribute: Field required"
    r = client.put("/v1/metis/knowledge-bases/handbook", json={"spec": {"sources": [{"folder": "/srv/a"}, {"folder": 5}]}})
    assert r.status_code == 422 and "spec.sources[1].folder: Input should be a valid string" in r.json()["error"]["message"]
