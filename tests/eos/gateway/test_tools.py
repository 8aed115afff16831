"""Built-in tools in a deployment's spec: shape, naming, validation, permissions, the CLI, an edge gateway."""

from __future__ import annotations

import json

import pytest

from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.server import create_app

from .conftest import TOOLS, openai_for, put_deployment

DOC_TABLE = """TOOL                    FUNCTION                      APPROVAL
search_knowledge        (search_knowledge: handbook)  -
save_to_knowledge       (save_to_knowledge: handbook) -
save_to_journal         (save_to_knowledge: journal, saves on its own) -
"""



def test_spec_is_written_as_the_doc_shows(client, bases, scripted_openai):
    given = [
        {"builtin": "search_knowledge", "knowledge_base": "handbook"},
        {"builtin": "save_to_knowledge", "knowledge_base": "handbook", "confirm": True},
        {"builtin": "save_to_knowledge", "knowledge_base": "journal", "confirm": False},
    ]
    dep = put_deployment(client, "chat", scripted_openai.url, given)
    assert dep["spec"]["tools"] == TOOLS  # confirm written only when false
    assert client.get("/v1/eos/deployments/chat").json()["spec"]["tools"] == TOOLS


def test_naming_first_of_each_kind_then_by_base_or_given(client, bases, scripted_openai):
    put_deployment(client, "chat", scripted_openai.url, [
        {"builtin": "search_knowledge", "knowledge_base": "handbook"},
        {"builtin": "search_knowledge", "knowledge_base": "journal"},
        {"builtin": "save_to_knowledge", "knowledge_base": "journal", "name": "keep_in_journal",
         "description": "Keep a line in the team journal."},
        {"builtin": "save_to_knowledge", "knowledge_base": "handbook"},
    ])
    names = [t["name"] for t in client.get("/v1/eos/deployments/chat/tools").json()["tools"]]
    assert names == ["search_knowledge", "search_journal", "keep_in_journal", "save_to_knowledge"]
    # What the model is offered: those names, and the description given.
    scripted_openai.reply("hi")
    openai_for(client).chat.completions.create(model="chat", messages=[{"role": "user", "content": "hi"}])
    offered = {t["function"]["name"]: t["function"] for t in scripted_openai.chat_requests[0]["tools"]}
    assert list(offered) == names
    assert offered["keep_in_journal"]["description"] == "Keep a line in the team journal."
    assert offered["search_journal"]["parameters"]["required"] == ["query"]
    assert offered["save_to_knowledge"]["parameters"]["required"] == ["title", "text"]


@pytest.mark.parametrize("tools, code, words", [
    ([{"builtin": "search_knowledge", "knowledge_base": "nope"}], "TOOL_BASE_NOT_FOUND", "no knowledge base named 'nope'"),
    ([{"builtin": "browse_web", "knowledge_base": "handbook"}], "INVALID_TOOLS", "spec.tools[0]"),
    ([{"builtin": "search_knowledge"}], "INVALID_TOOLS", "knowledge_base"),
    ([{"builtin": "search_knowledge", "knowledge_base": "handbook", "colour": "red"}], "INVALID_TOOLS", "colour"),
    ([{"builtin": "search_knowledge", "knowledge_base": "handbook", "name": "has space"}], "INVALID_TOOLS", "name"),
    ([{"builtin": "search_knowledge", "knowledge_base": "handbook", "name": "x"},
      {"builtin": "save_to_knowledge", "knowledge_base": "handbook", "name": "x"}], "TOOL_NAME_TAKEN", "same name"),
])
def test_invalid_tools_are_a_clear_422(client, bases, scripted_openai, tools, code, words):
    spec = {"model": "scripted", "kind": "chat", "runtime": {"type": "upstream", "url": scripted_openai.url}, "tools": tools}
    r = client.put("/v1/eos/deployments/chat", json={"spec": spec})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == code and words in r.json()["error"]["message"]


def test_the_base_must_be_of_the_deployment_s_workspace(client, bases, scripted_openai, key_client):
    acme = key_client("admin", workspace="acme")
    spec = {"model": "scripted", "kind": "chat", "runtime": {"type": "upstream", "url": scripted_openai.url},
            "tools": [{"builtin": "search_knowledge", "knowledge_base": "handbook"}]}
    r = acme.put("/v1/eos/deployments/chat", json={"spec": spec})
    assert r.status_code == 422
    assert r.json()["error"]["code"] == "TOOL_BASE_NOT_FOUND" and "workspace 'acme'" in r.json()["error"]["message"]


def test_changing_tools_needs_deployments_update(chat, key_client):
    viewer = key_client("viewer")
    r = viewer.put("/v1/eos/deployments/chat/tools/knowledge/handbook", json={"search": True})
    assert r.status_code == 403 and r.json()["error"]["details"]["permission"] == "deployments:update"
    editor = key_client("editor")
    r = editor.put("/v1/eos/deployments/chat/tools/knowledge/handbook", json={"search": True})
    assert r.status_code == 200


def test_the_api_says_the_base_becomes_readable_by_callers(client, bases, scripted_openai):
    put_deployment(client, "chat", scripted_openai.url, [])
    r = client.put("/v1/eos/deployments/chat/tools/knowledge/handbook", json={"search": True, "save": True})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["readable_by_callers"] == ["handbook"]
    assert "Anyone who may call chat" in body["warning"] and "search handbook" in body["warning"]
    assert "even without permission to read it" in body["warning"]


def test_cli_gives_lists_and_removes_tools_as_the_doc_shows(astra, client, bases, scripted_openai):
    put_deployment(client, "chat", scripted_openai.url, [])
    out = astra("eos", "tools", "chat", "knowledge", "handbook", "--search", "--save").output
    assert "search_knowledge searches handbook" in out
    said = " ".join(out.split())  # the note is a paragraph wrapped at the terminal's width
    assert "Anyone who may call chat" in said and "even without permission to read it" in said
    out = astra("eos", "tools", "chat", "knowledge", "journal", "--save-on-its-own").output
    assert "save_to_journal saves notes to journal on its own" in out
    assert client.get("/v1/eos/deployments/chat").json()["spec"]["tools"] == TOOLS
    assert astra("eos", "tools", "chat").output == DOC_TABLE
    # No flags: the base's tools removed.
    out = astra("eos", "tools", "chat", "knowledge", "handbook").output
    assert "no tools on handbook" in out
    assert client.get("/v1/eos/deployments/chat").json()["spec"]["tools"] == [TOOLS[2]]
    # save_to_journal is now the first save tool: it takes the plain name.
    assert astra("eos", "tools", "chat").output.splitlines()[1].startswith("save_to_knowledge ")
    listed = json.loads(astra("eos", "tools", "chat", "--json").output)
    assert listed["tools"][0]["function"] == "(save_to_knowledge: journal, saves on its own)"
    result = astra("eos", "tools", "chat", "knowledge", "nope", "--search", ok=False)
    assert result.exit_code == 1 and "TOOL_BASE_NOT_FOUND" in result.output


def test_an_edge_gateway_answers_built_in_tools_as_unavailable(home, chat, client):
    from starlette.testclient import TestClient

    edge = Astralyx(Settings.load(home, edge=True)).start()
    try:
        edge_client = TestClient(create_app(edge), headers=dict(client.headers))
        chat.reply(tool_calls=[("search_knowledge", {"query": "vacation"}),
                               ("save_to_journal", {"title": "Offsite", "text": "Porto"})])
        chat.reply("I cannot reach the handbook from here.")
        answer = openai_for(edge_client).chat.completions.create(
            model="chat", messages=[{"role": "user", "content": "vacation days?"}])
        assert answer.choices[0].message.content == "I cannot reach the handbook from here."
        results = [json.loads(m["content"]) for m in chat.chat_requests[1]["messages"] if m["role"] == "tool"]
        for result in results:
            assert result["error"]["code"] == "TOOL_UNAVAILABLE"
            assert "edge gateway" in result["error"]["message"] and "Answer without it and say so" in result["error"]["message"]
        extra = answer.model_extra["astralyx"]
        assert extra["saves"] == [] and len(extra["receipts"]) == 2
        assert not (home / "bases" / "default" / "journal" / "saved").exists()
    finally:
        edge.close()


def test_the_whole_spec_put_says_it_too(client, bases, scripted_openai):
    dep = put_deployment(client, "chat", scripted_openai.url, TOOLS)
    assert dep["warnings"] == [
        "Anyone who may call chat (people of the workspace, API keys, workspaces it is shared with) can have its model "
        "search handbook through it, even without permission to read it."]
    assert "warnings" not in put_deployment(client, "plain", scripted_openai.url, [])
