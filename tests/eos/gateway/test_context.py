"""The gateway sizes a request to the deployment's context: search passages fitted, 413 for a conversation too long.

The scripted upstream declares a small context (runtime.context); without a tokenizer at hand the gateway
counts 3 characters a token, so what fits is deterministic here. The real model (SmolLM2, 2,048 tokens)
is tests/eos/test_llama_worker.py's.
"""

from __future__ import annotations

import hashlib
import json

import rfc8785

from .conftest import openai_for

SEARCH = [{"builtin": "search_knowledge", "knowledge_base": "handbook"}]
# Ten notes, each one passage of ~650 characters about vacation: a search answers eight (~5,600 characters).
NOTES = {
    f"rule-{i}.md": f"# Vacation rule {i}\n\n" + " ".join(
        f"Vacation rule {i}, clause {j}: a person who asks for leave in season {j} gets {i + j} more days."
        for j in range(7))
    for i in range(10)
}


def deploy(client, url: str, context: int | None) -> None:
    runtime = {"type": "upstream", "url": url, **({"context": context} if context else {})}
    r = client.put("/v1/eos/deployments/chat", json={"spec": {"model": "scripted", "kind": "chat", "runtime": runtime,
                                                              "tools": SEARCH}})
    assert r.status_code == 200, r.text


def handbook(client) -> None:
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}}).status_code == 201
    for path, text in NOTES.items():
        r = client.put(f"/v1/metis/knowledge-bases/handbook/notes/{path}", json={"content": text})
        assert r.status_code in (200, 201), r.text


def ask(client, scripted, **extra) -> dict:
    """The model searches, then answers: what the search gave it (and the call's receipt, as "_receipt")."""
    scripted.reply(tool_calls=[("search_knowledge", {"query": "vacation rule days"})])
    scripted.reply("Answer [1].")
    answer = openai_for(client).chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "How many vacation days?"}], **extra)
    assert answer.choices[0].message.content == "Answer [1]."
    assert answer.model_extra["astralyx"]["tool_calls"][0]["status"] == "ok"
    tool_message = scripted.chat_requests[-1]["messages"][-1]
    assert tool_message["role"] == "tool"
    return {**json.loads(tool_message["content"]), "_receipt": answer.model_extra["astralyx"]["receipts"][0]}


def test_without_a_declared_context_every_passage_is_given(client, scripted_openai):
    handbook(client)
    deploy(client, scripted_openai.url, None)
    result = ask(client, scripted_openai)
    assert len(result["results"]) == 8 and "left_out" not in result
    assert result["note"] == "Answer from these passages and cite each one you use as [ref] with its document."


def test_a_small_context_gets_the_best_passages_that_fit_and_is_told(client, scripted_openai):
    handbook(client)
    deploy(client, scripted_openai.url, None)
    everything = ask(client, scripted_openai)["results"]
    deploy(client, scripted_openai.url, 2048)
    result = ask(client, scripted_openai)
    kept = result["results"]
    assert 0 < len(kept) < 8 and result["left_out"] == 8 - len(kept)
    assert kept == everything[: len(kept)]  # the best ones, whole, in their order
    assert result["note"].startswith("Answer from these passages")
    assert f"Only the best {len(kept)} of the 8 passages found fit in the model's context" in result["note"]
    # The call's receipt is of the result the model got, fitted.
    record = client.get(f"/v1/eos/receipts/{result.pop('_receipt')}").json()["receipt"]
    assert record["result_sha256"] == hashlib.sha256(rfc8785.dumps(result)).hexdigest()
    # What the model was sent leaves the answer its room: 3 characters a token, 512 tokens kept.
    sent = scripted_openai.chat_requests[-1]
    chars = sum(len(m.get("content") or "") + len(json.dumps(m.get("tool_calls") or "")) + 16 for m in sent["messages"])
    assert (chars + len(json.dumps(sent["tools"], ensure_ascii=False))) // 3 + 1 <= 2048 - 512


def test_max_tokens_sets_the_room_kept_for_the_answer(client, scripted_openai):
    handbook(client)
    deploy(client, scripted_openai.url, 2048)
    default_room = len(ask(client, scripted_openai)["results"])
    small_answer = len(ask(client, scripted_openai, max_tokens=64)["results"])
    assert small_answer > default_room  # less kept for the answer: more passages


def test_with_little_room_the_best_passage_is_cut_short(client, scripted_openai):
    handbook(client)
    deploy(client, scripted_openai.url, 640)
    result = ask(client, scripted_openai)  # a quarter of the context kept for the answer: 160 tokens
    assert len(result["results"]) == 1 and result["left_out"] == 7
    text = result["results"][0]["text"]
    assert text.endswith(" …") and 200 <= len(text) < 500 and text.startswith("Vacation rule 0, clause 0")
    assert "Only the start of the best of the 8 passages found fits in the model's context" in result["note"]


def test_with_no_room_left_no_passage_is_given_and_the_model_is_told(client, scripted_openai):
    handbook(client)
    deploy(client, scripted_openai.url, 570)
    scripted_openai.reply(tool_calls=[("search_knowledge", {"query": "vacation rule days"})])
    scripted_openai.reply("I could not search.")
    answer = openai_for(client).chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "How many vacation days?"}])
    assert answer.choices[0].message.content == "I could not search."
    result = json.loads(scripted_openai.chat_requests[-1]["messages"][-1]["content"])
    assert result["results"] == [] and result["left_out"] == 8
    assert "none fits in what is left of the model's context" in result["note"]


def test_results_that_fill_the_context_make_the_model_answer_without_tools(client, scripted_openai):
    handbook(client)
    deploy(client, scripted_openai.url, 1024)
    scripted_openai.reply(tool_calls=[("search_knowledge", {"query": f"vacation rule {i}"}) for i in range(3)])
    scripted_openai.reply("Answer [1].")
    answer = openai_for(client).chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "How many vacation days?"}])
    assert answer.choices[0].message.content == "Answer [1]."
    last = scripted_openai.chat_requests[-1]
    first, *others = (json.loads(m["content"]) for m in last["messages"] if m["role"] == "tool")
    assert first["results"] and all(o["results"] == [] for o in others)  # the first search took the room
    assert "none fits in what is left of the model's context" in others[0]["note"]
    assert last["tool_choice"] == "none"
    assert last["messages"][-1] == {"role": "system", "content": "The tool results have filled your context. Do not "
                                    "call tools now: answer with what you have, and say that you stopped before finishing."}
    assert answer.model_extra["astralyx"]["stopped"] is None


def test_results_that_leave_no_room_to_answer_stop_the_turn_saying_why(client, scripted_openai):
    handbook(client)
    deploy(client, scripted_openai.url, 1024)
    for _ in ("complete", "stream"):
        scripted_openai.reply(tool_calls=[("search_knowledge", {"query": f"vacation rule {i}"}) for i in range(4)])
    oai = openai_for(client)
    answer = oai.chat.completions.create(model="chat", messages=[{"role": "user", "content": "How many vacation days?"}])
    assert answer.choices[0].message.content.startswith("I stopped: the tool results filled this model's context")
    assert answer.choices[0].finish_reason == "stop"
    assert answer.model_extra["astralyx"]["stopped"] == "CONTEXT_FULL"
    assert len(answer.model_extra["astralyx"]["receipts"]) == 4
    assert len(scripted_openai.chat_requests) == 1  # the model was not called again, past its context
    chunks = list(oai.chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "How many vacation days?"}], stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text.startswith("I stopped: the tool results filled this model's context")
    assert chunks[-1].model_extra["astralyx"]["stopped"] == "CONTEXT_FULL"


def test_a_conversation_longer_than_the_context_is_413(client, scripted_openai):
    handbook(client)
    deploy(client, scripted_openai.url, 1024)
    messages = [{"role": "user", "content": "Tell me about the rules. " * 200}]
    for stream in (False, True):
        r = client.post("/v1/chat/completions", json={"model": "chat", "messages": messages, "stream": stream})
        assert r.status_code == 413, r.text
        error = r.json()["error"]
        assert error["code"] == "CONVERSATION_TOO_LONG"
        assert "deployment 'chat' reads 1024 at most" in error["message"] and "start a new one" in error["message"]
        assert error["details"]["context"] == 1024 and error["details"]["tokens"] > 1024
    assert scripted_openai.chat_requests == []  # the model was not called


def test_the_context_is_part_of_the_spec(client, scripted_openai):
    handbook(client)
    deploy(client, scripted_openai.url, 8192)
    assert client.get("/v1/eos/deployments/chat").json()["spec"]["runtime"]["context"] == 8192
    r = client.put("/v1/eos/deployments/chat", json={"spec": {"model": "scripted", "kind": "chat", "runtime": {
        "type": "upstream", "url": scripted_openai.url, "context": 10}}})
    assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_SPEC"
    assert "runtime.upstream.context" in r.json()["error"]["message"]
