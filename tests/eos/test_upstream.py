"""Upstream deployments against a scripted OpenAI-compatible server on 127.0.0.1 (the network edge)."""

from __future__ import annotations

import socket

import numpy as np
import pytest
from starlette.requests import Request

from astralyx.eos.deployments import DeploymentSpec
from astralyx.eos.runtimes import ChatModel, Embedder
from astralyx.errors import BadGateway, Invalid, NotFound, Unavailable

from ..scripted_openai import ScriptedOpenAI, hash_embedding


def put(core, name: str, **spec) -> None:
    core.deployments.put(None, "default", name, DeploymentSpec.model_validate(spec))


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once closed


class HeaderRecordingServer(ScriptedOpenAI):
    """The scripted server, also keeping each chat request's Authorization header."""

    def __init__(self) -> None:
        super().__init__()
        self.authorization: list[str | None] = []

    async def _chat(self, request: Request):
        self.authorization.append(request.headers.get("authorization"))
        return await super()._chat(request)


def test_chat_completion_goes_upstream_with_the_upstream_model_name(core, scripted_openai):
    put(core, "chat", model="qwen3-4b-q4-k-m", kind="chat", runtime={"type": "upstream", "url": scripted_openai.url})
    scripted_openai.reply('{"facts": []}')
    model = core.runtimes.chat("default", "chat")
    assert isinstance(model, ChatModel)
    schema = {"type": "object", "properties": {"facts": {"type": "array"}}, "required": ["facts"]}
    request = {
        "model": "chat",
        "messages": [{"role": "system", "content": "Extract facts."}, {"role": "user", "content": "Ana moved."}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "facts", "schema": schema}},
        "max_tokens": 200,
        "temperature": 0,
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        "tool_choice": "auto",
    }
    answer = model.complete(request)
    assert answer["object"] == "chat.completion"
    assert answer["choices"][0]["message"]["content"] == '{"facts": []}'
    sent = scripted_openai.chat_requests[0]
    assert sent["model"] == "qwen3:4b"  # the library's name for it in Ollama
    assert sent["stream"] is False
    for key in ("messages", "response_format", "max_tokens", "temperature", "tools", "tool_choice"):
        assert sent[key] == request[key]


def test_upstream_model_name_from_the_spec(core, scripted_openai):
    put(core, "chat", model="anything", kind="chat",
        runtime={"type": "upstream", "url": scripted_openai.url, "model": "llama3.2:1b"})
    scripted_openai.reply("hi")
    core.runtimes.chat("default", "chat").complete({"messages": [{"role": "user", "content": "hi"}]})
    assert scripted_openai.chat_requests[0]["model"] == "llama3.2:1b"


def test_streaming_chunks_and_tool_calls(core, scripted_openai):
    put(core, "chat", model="m", kind="chat", runtime={"type": "upstream", "url": scripted_openai.url})
    scripted_openai.reply("Hello there, friend.")
    scripted_openai.reply(tool_calls=[("search_knowledge", {"query": "vacation days"})])
    model = core.runtimes.chat("default", "chat")
    chunks = list(model.stream({"messages": [{"role": "user", "content": "hi"}]}))
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "Hello there, friend."
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert scripted_openai.chat_requests[0]["stream"] is True
    chunks = list(model.stream({"messages": [{"role": "user", "content": "days?"}]}))
    args = "".join(
        call["function"].get("arguments") or ""
        for c in chunks
        for call in c["choices"][0]["delta"].get("tool_calls") or []
    )
    assert args == '{"query": "vacation days"}'


def test_api_key_comes_from_the_environment_and_is_never_stored(core, client, monkeypatch):
    monkeypatch.setenv("UPSTREAM_KEY", "sk-secret-value")
    with HeaderRecordingServer() as server:
        spec = {"model": "m", "kind": "chat", "runtime": {"type": "upstream", "url": server.url, "api_key_env": "UPSTREAM_KEY"}}
        assert client.put("/v1/eos/deployments/chat", json={"spec": spec}).status_code == 200
        server.reply("ok")
        core.runtimes.chat("default", "chat").complete({"messages": [{"role": "user", "content": "hi"}]})
        assert server.authorization == ["Bearer sk-secret-value"]
    shown = client.get("/v1/eos/deployments/chat").text + client.get("/v1/eos/deployments").text
    assert "sk-secret-value" not in shown and "UPSTREAM_KEY" in shown
    assert "sk-secret-value" not in (core.home / "astralyx.db").read_bytes().decode(errors="replace")


def test_missing_api_key_variable_is_a_clear_503(core, monkeypatch, scripted_openai):
    monkeypatch.delenv("NO_SUCH_KEY", raising=False)
    put(core, "chat", model="m", kind="chat",
        runtime={"type": "upstream", "url": scripted_openai.url, "api_key_env": "NO_SUCH_KEY"})
    with pytest.raises(Unavailable) as e:
        core.runtimes.chat("default", "chat").complete({"messages": [{"role": "user", "content": "hi"}]})
    assert e.value.code == "DEPLOYMENT_UNAVAILABLE" and "NO_SUCH_KEY" in e.value.message
    assert scripted_openai.chat_requests == []


def test_server_that_does_not_answer_is_503_deployment_unavailable(core, client):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    put(core, "chat", model="m", kind="chat", runtime={"type": "upstream", "url": url})
    with pytest.raises(Unavailable) as e:
        core.runtimes.chat("default", "chat").complete({"messages": [{"role": "user", "content": "hi"}]})
    assert e.value.status == 503 and e.value.code == "DEPLOYMENT_UNAVAILABLE"
    assert url in e.value.message
    with pytest.raises(Unavailable):
        list(core.runtimes.chat("default", "chat").stream({"messages": [{"role": "user", "content": "hi"}]}))
    status = client.get("/v1/eos/deployments/chat").json()["status"]
    assert status["ok"] is False and "cannot be reached" in status["detail"]


def test_slow_server_times_out_as_503(core, scripted_openai):
    put(core, "chat", model="m", kind="chat", runtime={"type": "upstream", "url": scripted_openai.url, "timeout": 0.3})
    scripted_openai.reply("too late", delay=2)
    with pytest.raises(Unavailable) as e:
        core.runtimes.chat("default", "chat").complete({"messages": [{"role": "user", "content": "hi"}]})
    assert e.value.code == "DEPLOYMENT_UNAVAILABLE" and "in time" in e.value.message


def test_error_status_is_502_upstream_error_with_its_message(core, scripted_openai):
    put(core, "chat", model="m", kind="chat", runtime={"type": "upstream", "url": scripted_openai.url})
    scripted_openai.reply(status=500, body={"error": {"message": "model 'm' not found"}})
    scripted_openai.reply(status=400, body={"error": {"message": "bad schema"}})
    model = core.runtimes.chat("default", "chat")
    with pytest.raises(BadGateway) as e:
        model.complete({"messages": [{"role": "user", "content": "hi"}]})
    assert e.value.status == 502 and e.value.code == "UPSTREAM_ERROR" and "model 'm' not found" in e.value.message
    with pytest.raises(BadGateway) as e:
        list(model.stream({"messages": [{"role": "user", "content": "hi"}]}))
    assert "bad schema" in e.value.message


def test_upstream_embedder_unit_rows_from_the_server(core, scripted_openai):
    put(core, "bge-m3", model="bge-m3", kind="embedding", runtime={"type": "upstream", "url": scripted_openai.url})
    embedder = core.runtimes.embedder("default", "bge-m3")
    assert isinstance(embedder, Embedder)
    texts = [f"passage {i} about leave" for i in range(70)]  # more than one upstream batch
    vectors = embedder.embed_passages(texts)
    assert vectors.shape == (70, 64) and vectors.dtype == np.float32 and embedder.dimensions == 64
    assert np.allclose(vectors[3], hash_embedding(texts[3]), atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(embedder.embed_query("leave"), hash_embedding("leave"), atol=1e-6)
    assert {r["model"] for r in scripted_openai.requests} == {"bge-m3"}


def test_e5_served_upstream_gets_its_prefixes(core, scripted_openai):
    put(core, "e5", model="multilingual-e5-small", kind="embedding",
        runtime={"type": "upstream", "url": scripted_openai.url, "model": "e5"})
    embedder = core.runtimes.embedder("default", "e5")
    embedder.embed_passages(["Ana leads the data team."])
    embedder.embed_query("who leads?")
    assert [r["input"] for r in scripted_openai.requests] == [["passage: Ana leads the data team."], ["query: who leads?"]]


def test_unknown_deployment_and_wrong_kind(core, scripted_openai):
    with pytest.raises(NotFound):
        core.runtimes.chat("default", "nope")
    with pytest.raises(Invalid) as e:
        core.runtimes.chat("default", "e5-small")
    assert e.value.code == "WRONG_DEPLOYMENT_KIND"
    put(core, "chat", model="m", kind="chat", runtime={"type": "upstream", "url": scripted_openai.url})
    with pytest.raises(Invalid):
        core.runtimes.embedder("default", "chat")
    with pytest.raises(NotFound):  # another workspace's deployments are not found
        core.workspaces.create(None, "acme")
        core.runtimes.chat("acme", "chat")


def test_changing_a_deployment_drops_its_loaded_instance(core, client):
    with ScriptedOpenAI() as first, ScriptedOpenAI() as second:
        spec = {"model": "m", "kind": "chat", "runtime": {"type": "upstream", "url": first.url}}
        client.put("/v1/eos/deployments/chat", json={"spec": spec})
        before = core.runtimes.chat("default", "chat")
        assert core.runtimes.chat("default", "chat") is before
        spec["runtime"]["url"] = second.url
        client.put("/v1/eos/deployments/chat", json={"spec": spec})
        second.reply("from the second")
        after = core.runtimes.chat("default", "chat")
        assert after is not before
        answer = after.complete({"messages": [{"role": "user", "content": "hi"}]})
        assert answer["choices"][0]["message"]["content"] == "from the second" and first.requests == []
        client.delete("/v1/eos/deployments/chat")
        with pytest.raises(NotFound):
            core.runtimes.chat("default", "chat")


def test_health_of_an_upstream_that_answers(core, client, scripted_openai):
    spec = {"model": "scripted", "kind": "chat", "runtime": {"type": "upstream", "url": scripted_openai.url}}
    client.put("/v1/eos/deployments/chat", json={"spec": spec})
    status = client.get("/v1/eos/deployments/chat").json()["status"]
    assert status == {"ok": True, "detail": f"{scripted_openai.url} answers (scripted)"}
    assert core.runtimes.health("default", "chat").ok is True
