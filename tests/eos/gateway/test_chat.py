"""POST /v1/chat/completions through the gateway, with the official openai client, against a scripted upstream."""

from __future__ import annotations

import json

import openai
import pytest

from astralyx.eos.gateway import MAX_ROUNDS

from .conftest import openai_for, put_deployment

pytestmark = pytest.mark.engines  # records on SQLite and on PostgreSQL

ASK = [{"role": "user", "content": "How many vacation days do I have?"}]


def tool_results(request: dict) -> dict[str, dict]:
    """The tool messages the gateway sent the model, by the name of the call they answer."""
    names = {}
    for m in request["messages"]:
        for call in m.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
    return {names[m["tool_call_id"]] + ":" + m["tool_call_id"]: _json(m["content"])
            for m in request["messages"] if m["role"] == "tool"}


def _json(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text


def only(results: dict, name: str) -> dict:
    found = [v for k, v in results.items() if k.startswith(name + ":")]
    assert len(found) == 1, results
    return found[0]


def test_search_answers_with_citations(chat, oai):
    chat.reply(tool_calls=[("search_knowledge", {"query": "vacation days"})])
    chat.reply("You have 25 vacation days a year [1] (handbook/leave.md).")
    answer = oai.chat.completions.create(model="chat", messages=ASK)
    assert answer.choices[0].message.content.startswith("You have 25 vacation days")
    assert answer.choices[0].finish_reason == "stop"
    assert answer.model == "chat"
    # The model was offered the deployment's tools, named as the doc says.
    offered = [t["function"]["name"] for t in chat.chat_requests[0]["tools"]]
    assert offered == ["search_knowledge", "save_to_knowledge", "save_to_journal"]
    # It got the doc's JSON for its call: numbered passages with document, title, where, text and the note.
    result = only(tool_results(chat.chat_requests[1]), "search_knowledge")
    assert list(result) == ["knowledge_base", "mode", "results", "note"]
    assert result["knowledge_base"] == "handbook"
    assert result["mode"] in ("keywords", "hybrid")
    first = result["results"][0]
    assert list(first) == ["ref", "document", "title", "where", "text"]
    assert first["ref"] == 1 and "leave.md" in first["document"] and "25 vacation days" in first["text"]
    assert first["title"] == "Leave policy" and "Vacation" in first["where"]
    assert result["note"] == "Answer from these passages and cite each one you use as [ref] with its document."
    extra = answer.model_extra["astralyx"]
    assert len(extra["receipts"]) == 1 and extra["rounds"] == 1
    assert extra["tool_calls"][0]["name"] == "search_knowledge" and extra["tool_calls"][0]["status"] == "ok"


def test_nothing_found_is_said_and_not_made_up(chat, oai):
    chat.reply(tool_calls=[("search_knowledge", {"query": "zyzzyva quokka"})])
    chat.reply("I found nothing about that in the handbook.")
    oai.chat.completions.create(model="chat", messages=ASK)
    result = only(tool_results(chat.chat_requests[1]), "search_knowledge")
    assert result["results"] == []
    assert "found nothing" in result["note"] and "do not make an answer up" in result["note"]


def test_several_tool_calls_in_one_turn(chat, oai, client):
    chat.reply(tool_calls=[
        ("search_knowledge", {"query": "vacation"}),
        ("search_knowledge", {"query": "trains"}),
        ("save_to_journal", {"title": "Offsite", "text": "The offsite is in Porto in March."}),
    ])
    chat.reply("Done: 25 days [1], trains [1], and I saved the offsite.")
    answer = oai.chat.completions.create(model="chat", messages=ASK)
    sent = chat.chat_requests[1]
    assistant = [m for m in sent["messages"] if m["role"] == "assistant"][0]
    assert len(assistant["tool_calls"]) == 3
    results = [json.loads(m["content"]) for m in sent["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in sent["messages"] if m["role"] == "tool"] == [c["id"] for c in assistant["tool_calls"]]
    assert "25 vacation days" in results[0]["results"][0]["text"]
    assert "trains" in results[1]["results"][0]["text"]
    assert results[2]["status"] == "saved" and results[2]["message"] == "Saved to journal"
    extra = answer.model_extra["astralyx"]
    assert len(extra["receipts"]) == 3
    assert extra["saves"][0]["message"] == "Saved to journal: Offsite"
    assert client.get(extra["saves"][0]["link"]).status_code == 200


def test_malformed_arguments_are_told_to_the_model(chat, oai):
    chat.reply(tool_calls=[("search_knowledge", '{"query": "vaca'), ("search_knowledge", "[1, 2]"),
                           ("search_knowledge", {"q": "x"}), ("save_to_knowledge", {"title": "No text"})])
    chat.reply(tool_calls=[("search_knowledge", {"query": "vacation"})])
    chat.reply("25 days [1].")
    answer = oai.chat.completions.create(model="chat", messages=ASK)
    assert answer.choices[0].message.content == "25 days [1]."
    results = [json.loads(m["content"]) for m in chat.chat_requests[1]["messages"] if m["role"] == "tool"]
    codes = [r["error"]["code"] for r in results]
    assert codes == ["INVALID_ARGUMENTS"] * 4
    assert "not valid JSON" in results[0]["error"]["message"] and '{"query": "..."}' in results[0]["error"]["message"]
    assert "JSON object" in results[1]["error"]["message"]
    assert "query is missing" in results[2]["error"]["message"]
    assert "text is missing" in results[3]["error"]["message"]
    # The retry in the next round worked.
    last = json.loads(chat.chat_requests[2]["messages"][-1]["content"])
    assert "25 vacation days" in last["results"][0]["text"]


def test_unknown_tool_names_are_told_to_the_model(chat, oai):
    chat.reply(tool_calls=[("delete_everything", {"now": True})])
    chat.reply("I cannot do that.")
    answer = oai.chat.completions.create(model="chat", messages=ASK)
    assert answer.choices[0].message.content == "I cannot do that."
    result = json.loads([m for m in chat.chat_requests[1]["messages"] if m["role"] == "tool"][0]["content"])
    assert result["error"]["code"] == "UNKNOWN_TOOL"
    assert "delete_everything" in result["error"]["message"]
    assert "save_to_journal, save_to_knowledge, search_knowledge" in result["error"]["message"]
    assert answer.model_extra["astralyx"]["receipts"] == []  # not one of ours: nothing ran


def test_a_loop_that_never_ends_is_stopped(chat, oai):
    chat.reply(tool_calls=[("search_knowledge", {"query": "again"})], always=True)
    answer = oai.chat.completions.create(model="chat", messages=ASK)
    # MAX_ROUNDS rounds of calls, then one last call told to answer without tools.
    assert len(chat.chat_requests) == MAX_ROUNDS + 1
    last = chat.chat_requests[-1]
    assert last["tool_choice"] == "none"
    assert "rounds of tool calls" in last["messages"][-1]["content"]
    message = answer.choices[0].message
    assert message.tool_calls is None and answer.choices[0].finish_reason == "stop"
    assert f"after {MAX_ROUNDS} rounds" in message.content
    extra = answer.model_extra["astralyx"]
    assert extra["stopped"] == "MAX_ROUNDS" and extra["rounds"] == MAX_ROUNDS and len(extra["receipts"]) == MAX_ROUNDS


def test_streaming_assembles_tool_call_deltas(chat, oai):
    chat.reply("Let me look. ", tool_calls=[("search_knowledge", {"query": "vacation days a year"}),
                                            ("save_to_knowledge", {"title": "Leave", "text": "25 days"})])
    chat.reply("You have 25 vacation days [1].")
    stream = oai.chat.completions.create(model="chat", messages=ASK, stream=True,
                                         stream_options={"include_usage": True})
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Let me look. You have 25 vacation days [1]."
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == ["stop"]
    assert not any(c.choices[0].delta.tool_calls for c in chunks if c.choices)  # built-in calls never reach the client
    # The upstream was asked streaming, and its deltas were put together into whole calls.
    assert all(r["stream"] for r in chat.chat_requests)
    sent = chat.chat_requests[1]["messages"]
    calls = [m for m in sent if m["role"] == "assistant"][0]["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"query": "vacation days a year"}, {"title": "Leave", "text": "25 days"}]
    assert [m for m in sent if m["role"] == "assistant"][0]["content"] == "Let me look. "
    extra = chunks[-1].model_extra["astralyx"]
    assert len(extra["receipts"]) == 2 and extra["drafts"][0]["title"] == "Leave"
    assert chunks[-1].usage is not None


def test_streaming_client_tool_comes_back_to_the_client(chat, oai):
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}}
    chat.reply(tool_calls=[("get_weather", {"city": "Porto"})])
    stream = oai.chat.completions.create(model="chat", messages=ASK, tools=[weather], stream=True)
    chunks = list(stream)
    calls = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert calls[0].function.name == "get_weather" and json.loads(calls[0].function.arguments) == {"city": "Porto"}
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]


def test_client_tools_pass_through_beside_built_in_calls(chat, oai):
    weather = {"type": "function", "function": {"name": "get_weather", "description": "The weather",
                                                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    chat.reply(tool_calls=[("search_knowledge", {"query": "travel"}), ("get_weather", {"city": "Porto"})])
    first = oai.chat.completions.create(model="chat", messages=ASK, tools=[weather])
    # The client's tool was offered next to the built-in ones, and its call comes back to the client.
    assert [t["function"]["name"] for t in chat.chat_requests[0]["tools"]][-1] == "get_weather"
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert [c.function.name for c in choice.message.tool_calls] == ["get_weather"]
    assert len(first.model_extra["astralyx"]["receipts"]) == 1  # the search ran already
    # The client answers its call as usual; the gateway puts the built-in call back so the model sees it.
    chat.reply("Trains, and it is sunny in Porto.")
    call = choice.message.tool_calls[0]
    second = oai.chat.completions.create(model="chat", tools=[weather], messages=[
        *ASK,
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
        {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
    ])
    assert second.choices[0].message.content == "Trains, and it is sunny in Porto."
    sent = chat.chat_requests[1]["messages"]
    assistant = [m for m in sent if m["role"] == "assistant"][0]
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["search_knowledge", "get_weather"]
    results = tool_results(chat.chat_requests[1])
    assert "trains" in only(results, "search_knowledge")["results"][0]["text"]
    assert only(results, "get_weather") == "sunny"


def test_a_client_tool_cannot_take_a_built_in_name(chat, oai):
    mine = {"type": "function", "function": {"name": "search_knowledge", "parameters": {"type": "object"}}}
    with pytest.raises(openai.UnprocessableEntityError) as e:
        oai.chat.completions.create(model="chat", messages=ASK, tools=[mine])
    assert e.value.body["code"] == "TOOL_NAME_TAKEN"


def test_plain_pass_through_without_tools(client, scripted_openai, oai):
    put_deployment(client, "plain", scripted_openai.url)
    scripted_openai.reply("hello")
    answer = oai.chat.completions.create(model="plain", messages=ASK, temperature=0.2)
    assert answer.choices[0].message.content == "hello"
    sent = scripted_openai.chat_requests[0]
    assert "tools" not in sent and sent["temperature"] == 0.2 and sent["messages"] == ASK
    scripted_openai.reply("streamed hello")
    text = "".join(c.choices[0].delta.content or "" for c in oai.chat.completions.create(
        model="plain", messages=ASK, stream=True) if c.choices)
    assert text == "streamed hello"


def test_a_deleted_base_is_no_longer_offered(client, chat, oai):
    # The handbook is gone (deleted after the deployment got its tools): its tools went with it, so the
    # model is not offered them, and a call to one anyway is told there is no such tool.
    deleted = client.delete("/v1/metis/knowledge-bases/handbook")
    assert deleted.status_code == 200 and deleted.json()["tools_removed_from"] == ["chat"]
    chat.reply(tool_calls=[("search_knowledge", {"query": "vacation"})])
    chat.reply("I could not search the handbook just now.")
    answer = oai.chat.completions.create(model="chat", messages=ASK)
    assert answer.choices[0].message.content == "I could not search the handbook just now."
    offered = [t["function"]["name"] for t in chat.chat_requests[0]["tools"]]
    assert offered == ["save_to_knowledge"]  # journal's: the handbook's two are gone
    result = only(tool_results(chat.chat_requests[1]), "search_knowledge")
    assert result["error"]["code"] == "UNKNOWN_TOOL"


def test_upstream_errors_are_http_errors(client, chat, oai):
    chat.reply(status=500)
    with pytest.raises(openai.APIStatusError) as e:
        oai.chat.completions.create(model="chat", messages=ASK)
    assert e.value.status_code == 502 and e.value.body["code"] == "UPSTREAM_ERROR"
    chat.reply(status=500)
    with pytest.raises(openai.APIStatusError) as e:
        list(oai.chat.completions.create(model="chat", messages=ASK, stream=True))
    assert e.value.status_code == 502


def test_who_may_chat(chat, key_client, client):
    # A viewer of the workspace may call the deployment (and so have it search the base).
    viewer = openai_for(key_client("viewer"))
    chat.reply(tool_calls=[("search_knowledge", {"query": "vacation"})])
    chat.reply("25 days [1].")
    assert viewer.chat.completions.create(model="chat", messages=ASK).choices[0].message.content == "25 days [1]."
    # Another workspace does not see this workspace's deployment.
    other = openai_for(key_client("admin", workspace="acme"))
    with pytest.raises(openai.NotFoundError) as e:
        other.chat.completions.create(model="chat", messages=ASK)
    assert e.value.body["code"] == "DEPLOYMENT_NOT_FOUND"
    with pytest.raises(openai.AuthenticationError):
        openai_for_token(client, "not-a-key").chat.completions.create(model="chat", messages=ASK)


def openai_for_token(client, token: str) -> openai.OpenAI:
    return openai.OpenAI(base_url="http://testserver/v1", api_key=token, http_client=client, max_retries=0)


def test_conversation_is_named_by_metadata(chat, oai, client):
    chat.reply(tool_calls=[("save_to_journal", {"title": "Offsite", "text": "Porto in March."})])
    chat.reply("Saved.")
    answer = oai.chat.completions.create(model="chat", messages=ASK, metadata={"conversation_title": "Planning the year"})
    receipt = client.get(f"/v1/eos/receipts/{answer.model_extra['astralyx']['receipts'][0]}").json()
    assert receipt["receipt"]["conversation"] == "Planning the year"
    assert "metadata" not in chat.chat_requests[0]  # ours, not the upstream's
    chat.reply(tool_calls=[("save_to_journal", {"title": "Lunch", "text": "Fridays."})])
    chat.reply("Saved.")
    answer = oai.chat.completions.create(model="chat", messages=ASK, metadata={"conversation_id": "c-42"})
    assert answer.model_extra["astralyx"]["saves"][0]["conversation"] == "c-42"


def test_streaming_over_a_real_socket(chat, app):
    """The same stream through uvicorn on 127.0.0.1: SSE as the openai package reads it off the wire."""
    import socket
    import threading
    import time

    import uvicorn

    from ...conftest import ADMIN_TOKEN

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key=ADMIN_TOKEN, max_retries=0)
        chat.reply(tool_calls=[("search_knowledge", {"query": "vacation"})])
        chat.reply("You have 25 vacation days [1].")
        chunks = list(client.chat.completions.create(model="chat", messages=ASK, stream=True))
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "You have 25 vacation days [1]."
        assert len(chunks[-1].model_extra["astralyx"]["receipts"]) == 1
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_a_forced_tool_choice_holds_for_the_first_round_only(chat, oai):
    chat.reply(tool_calls=[("search_knowledge", {"query": "vacation"})])
    chat.reply("25 days [1].")
    answer = oai.chat.completions.create(model="chat", messages=ASK, tool_choice="required")
    assert answer.choices[0].message.content == "25 days [1]."
    assert [r["tool_choice"] for r in chat.chat_requests] == ["required", "auto"]


def test_tool_call_deltas_without_index_or_with_object_arguments():
    """Some servers stream calls without `index`, or send arguments as an object: still whole calls."""
    from astralyx.eos.gateway import _assemble

    parts: dict = {}
    for delta in [{"id": "a", "function": {"name": "search_knowledge", "arguments": '{"query"'}},
                  {"function": {"arguments": ': "x"}'}},
                  {"id": "b", "function": {"name": "save_to_journal", "arguments": {"title": "T", "text": "t"}}}]:
        _assemble(parts, delta)
    assert [(p["id"], p["function"]["name"], json.loads(p["function"]["arguments"])) for p in parts.values()] == [
        ("a", "search_knowledge", {"query": "x"}), ("b", "save_to_journal", {"title": "T", "text": "t"})]


def test_words_beside_built_in_calls_are_part_of_the_answer(chat, oai):
    chat.reply("Let me look. ", tool_calls=[("search_knowledge", {"query": "vacation"})])
    chat.reply("You have 25 vacation days [1].")
    answer = oai.chat.completions.create(model="chat", messages=ASK)
    assert answer.choices[0].message.content == "Let me look. You have 25 vacation days [1]."
