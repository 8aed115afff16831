"""A scripted OpenAI-compatible server: the network edge of our tests.

A real HTTP server (uvicorn, on 127.0.0.1, a free port, in a thread) that speaks the
OpenAI wire protocol and answers chat completions from a script the test writes. Nothing
of ours is mocked: our code talks HTTP to it exactly as to Ollama, llama.cpp or vLLM.

    server.reply("plain answer")                                   # assistant content
    server.reply(tool_calls=[("search_knowledge", {"query": "x"})])  # a tool call
    server.reply(status=503)                                       # an error answer
    server.reply("late", delay=3)                                  # a slow answer
    server.reply(lambda request: "computed from the request")
    server.requests  # every request body received, in order

Streaming requests (`"stream": true`) get SSE chunks, tool-call arguments split in pieces.
Embeddings answer a deterministic bag-of-words hashing vector (unit length), so retrieval
through an upstream embedding deployment works in tests.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

EMBED_DIM = 64


@dataclass
class Reply:
    content: str | None = None
    tool_calls: list[tuple[str, Any]] | None = None
    status: int = 200
    body: Any = None
    delay: float = 0.0
    fn: Callable[[dict], Any] | None = None
    extra: dict = field(default_factory=dict)


def hash_embedding(text: str, dim: int = EMBED_DIM) -> list[float]:
    vec = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        h = int(hashlib.md5(word.encode()).hexdigest(), 16)
        vec[h % dim] += 1.0 if (h >> 8) % 2 else -1.0
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


class ScriptedOpenAI:
    def __init__(self, model: str = "scripted") -> None:
        self.model = model
        self.script: deque[Reply] = deque()
        self.requests: list[dict] = []
        self.models_asked = 0  # GET /v1/models: how often the server was checked
        self.default: Reply | None = None
        self.embed_delay = 0.0  # seconds each embeddings answer takes (a slow embedding server)
        self.port = _free_port()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # -- the script ----------------------------------------------------------
    def reply(
        self,
        content: str | Callable[[dict], Any] | None = None,
        *,
        tool_calls: list[tuple[str, Any]] | None = None,
        status: int = 200,
        body: Any = None,
        delay: float = 0.0,
        always: bool = False,
    ) -> ScriptedOpenAI:
        fn = content if callable(content) else None
        item = Reply(None if fn else content, tool_calls, status, body, delay, fn)
        if always:
            self.default = item
        else:
            self.script.append(item)
        return self

    @property
    def chat_requests(self) -> list[dict]:
        return [r for r in self.requests if "messages" in r]

    # -- the server ----------------------------------------------------------
    def start(self) -> ScriptedOpenAI:
        app = Starlette(
            routes=[
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
                Route("/v1/embeddings", self._embeddings, methods=["POST"]),
                Route("/v1/models", self._models, methods=["GET"]),
            ]
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("scripted OpenAI server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
            self._thread.join(timeout=5)  # type: ignore[union-attr]

    def __enter__(self) -> ScriptedOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _models(self, request: Request) -> Response:
        self.models_asked += 1
        return JSONResponse({"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "scripted"}]})

    async def _embeddings(self, request: Request) -> Response:
        data = await request.json()
        self.requests.append(data)
        inputs = data["input"] if isinstance(data["input"], list) else [data["input"]]
        if self.embed_delay:
            await asyncio.sleep(self.embed_delay)
        return JSONResponse(
            {
                "object": "list",
                "model": data.get("model", self.model),
                "data": [{"object": "embedding", "index": i, "embedding": hash_embedding(t)} for i, t in enumerate(inputs)],
                "usage": {"prompt_tokens": 0, "total_tokens": 0},
            }
        )

    async def _chat(self, request: Request) -> Response:
        data = await request.json()
        self.requests.append(data)
        if self.script:
            item = self.script.popleft()
        elif self.default is not None:
            item = self.default
        else:
            return JSONResponse({"error": {"message": "the test's script is exhausted"}}, status_code=500)
        if item.delay:
            await asyncio.sleep(item.delay)
        if item.fn is not None:
            produced = item.fn(data)
            item = produced if isinstance(produced, Reply) else Reply(content=str(produced))
        if item.status != 200:
            return JSONResponse(item.body or {"error": {"message": f"scripted status {item.status}"}}, status_code=item.status)
        message: dict[str, Any] = {"role": "assistant", "content": item.content}
        finish = "stop"
        if item.tool_calls:
            finish = "tool_calls"
            message["tool_calls"] = [
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
                }
                for name, args in item.tool_calls
            ]
        cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        if data.get("stream"):
            events = self._sse(cid, data.get("model", self.model), message, finish)
            return StreamingResponse(events, media_type="text/event-stream")
        return JSONResponse(
            {
                "id": cid,
                "object": "chat.completion",
                "created": int(time.time()),
                "model": data.get("model", self.model),
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        )

    async def _sse(self, cid: str, model: str, message: dict, finish: str):
        def chunk(delta: dict, finish_reason: str | None = None) -> str:
            body = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            }
            return f"data: {json.dumps(body)}\n\n"

        yield chunk({"role": "assistant", "content": ""})
        content = message.get("content") or ""
        for i in range(0, len(content), 8):
            yield chunk({"content": content[i : i + 8]})
        for index, call in enumerate(message.get("tool_calls") or []):
            args = call["function"]["arguments"]
            yield chunk(
                {"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                 "function": {"name": call["function"]["name"], "arguments": ""}}]}
            )
            for i in range(0, len(args), 7):
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": args[i : i + 7]}}]})
        yield chunk({}, finish)
        yield "data: [DONE]\n\n"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
