"""`astra eos models|add|deploy|deployments` on a local data directory, as a person types them."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

QWEN_PATH = "/Qwen/Qwen3-4B-GGUF/resolve/main/Qwen3-4B-Q4_K_M.gguf"
FAKE_GGUF = b"GGUF" + bytes(range(256)) * 12_000  # about 3 MB: several blocks of progress



@pytest.fixture
def hub():
    """A stand-in for the model hub on 127.0.0.1: serves one GGUF at the Qwen3 path."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the stdlib's name
            if self.path != QWEN_PATH:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(FAKE_GGUF)))
            self.end_headers()
            for i in range(0, len(FAKE_GGUF), 1 << 18):
                self.wfile.write(FAKE_GGUF[i : i + (1 << 18)])

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_models_shows_the_library(astra):
    out = astra("eos", "models").output
    for name in ("multilingual-e5-small", "all-minilm-l6-v2", "bge-m3", "qwen3-4b-q4-k-m", "smollm2-135m", "gemma3-270m"):
        assert name in out
    assert "LICENCE" in out and "PRESENT" in out and "Apache-2.0" in out
    assert "multilingual-e5-small-q4" in out
    # Each e5-small says its measured speed and memory.
    for name in ("multilingual-e5-small-int8", "multilingual-e5-small", "multilingual-e5-small-q4"):
        note = next(line for line in out.splitlines() if line.startswith(f"{name}: "))
        assert "passages/s" in note and "of memory" in note
    assert "smollm2-135m:" in out and "too small to extract facts" in out
    data = json.loads(astra("eos", "models", "--json").output)
    assert {m["name"]: m["present"] for m in data["models"]}["multilingual-e5-small"] is True


def test_add_fetches_from_the_hub_with_progress(astra, home, hub, monkeypatch):
    monkeypatch.setenv("ASTRALYX_MODEL_HUB", hub)
    out = astra("eos", "add", "qwen3:4b").output
    assert "added qwen3-4b-q4-k-m" in out
    assert "astra eos deploy qwen3-4b-q4-k-m --name qwen3-4b --cpu --min 1 --max 1" in out
    assert (home / "models" / "qwen3-4b-q4-k-m.gguf").read_bytes() == FAKE_GGUF
    assert not list((home / "models").glob(".*part"))
    present = {m["name"]: m["present"] for m in json.loads(astra("eos", "models", "--json").output)["models"]}
    assert present["qwen3-4b-q4-k-m"] is True


def test_add_fails_fast_when_the_hub_cannot_be_reached(astra, home, monkeypatch):
    monkeypatch.setenv("ASTRALYX_MODEL_HUB", f"http://127.0.0.1:{closed_port()}")
    result = astra("eos", "add", "qwen3:4b", ok=False)
    assert result.exit_code == 1
    assert "Cannot reach the model hub" in result.output and "MODEL_HUB_UNREACHABLE" in result.output
    assert "--file PATH.gguf" in result.output
    assert not (home / "models" / "qwen3-4b-q4-k-m.gguf").exists()


def test_add_a_local_file(astra, home, tmp_path):
    gguf = tmp_path / "Qwen3-4B-Q4_K_M.gguf"
    gguf.write_bytes(FAKE_GGUF)
    assert "added qwen3-4b-q4-k-m" in astra("eos", "add", "qwen3:4b", "--file", str(gguf)).output
    assert (home / "models" / "qwen3-4b-q4-k-m.gguf").read_bytes() == FAKE_GGUF
    # Any GGUF under a name of its own, with its chat format.
    out = astra("eos", "add", "my-model", "--file", str(gguf), "--chat-format", "chatml").output
    assert "added my-model" in out
    listed = {m["name"]: m for m in json.loads(astra("eos", "models", "--json").output)["models"]}
    assert listed["my-model"]["present"] and listed["my-model"]["chat_format"] == "chatml"
    text = tmp_path / "notes.txt"
    text.write_text("not a model")
    refused = astra("eos", "add", "other", "--file", str(text), ok=False)
    assert refused.exit_code == 1 and "NOT_GGUF" in refused.output
    upstream = astra("eos", "add", "bge-m3", ok=False)
    assert "UPSTREAM_ONLY" in upstream.output and "ollama pull bge-m3" in upstream.output


def test_deploy_embedded_and_upstream_and_list_with_health(astra, home, tmp_path, scripted_openai):
    gguf = tmp_path / "q.gguf"
    gguf.write_bytes(FAKE_GGUF)
    astra("eos", "add", "qwen3:4b", "--file", str(gguf))
    out = astra("eos", "deploy", "qwen3-4b-q4-k-m", "--name", "qwen3-4b", "--cpu", "--min", "1", "--max", "1").output
    assert "deployed qwen3-4b: qwen3-4b-q4-k-m (chat, embedded, CPUs only, 1-1 replicas)" in out
    out = astra("eos", "deploy", "bge-m3", "--name", "bge-m3", "--url", scripted_openai.url).output
    assert "deployed bge-m3: bge-m3 (embedding, upstream" in out and "status: ok" in out
    astra("eos", "deploy", "llama3.2:1b", "--name", "gone", "--kind", "chat", "--url", f"http://127.0.0.1:{closed_port()}/v1",
          "--upstream-model", "llama3.2:1b", "--api-key-env", "GONE_KEY")
    table = astra("eos", "deployments").output
    assert "e5-small" in table and "qwen3-4b" in table and "bge-m3" in table and "1-1 cpu" in table
    data = {d["metadata"]["name"]: d for d in json.loads(astra("eos", "deployments", "--json").output)["deployments"]}
    assert data["bge-m3"]["status"]["ok"] is True
    assert data["gone"]["status"]["ok"] is False
    assert data["gone"]["spec"]["runtime"] == {"type": "upstream", "url": data["gone"]["spec"]["runtime"]["url"],
                                               "model": "llama3.2:1b", "api_key_env": "GONE_KEY", "timeout": 600.0}
    assert data["qwen3-4b"]["spec"]["resources"] == {"cpu": True, "min": 1, "max": 1}
    unknown = astra("eos", "deploy", "no-such-model", "--name", "x", ok=False)
    assert unknown.exit_code != 0 and "not in the library" in unknown.output
    assert "deleted gone" in astra("eos", "undeploy", "gone", "--yes").output
