"""Upstream runtime: any OpenAI-compatible server (Ollama, llama.cpp's server, vLLM, a hosted API).

The API key comes from the environment variable the spec names, read at each call: it is
never stored in a spec nor printed. A server that does not answer (connection refused,
timeout) is 503 DEPLOYMENT_UNAVAILABLE; one that answers with an error is 502 UPSTREAM_ERROR.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import httpx
import numpy as np

from ...errors import BadGateway, Unavailable
from .base import ChatModel, Embedder
from .embedded import normalise

EMBED_BATCH = 64


class Upstream:
    """One OpenAI-compatible base URL, its model name there, its key and timeout."""

    def __init__(self, deployment: str, url: str, model: str, api_key_env: str | None, timeout: float) -> None:
        self.deployment = deployment
        self.url = url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout

    def headers(self) -> dict[str, str]:
        if not self.api_key_env:
            return {}
        key = os.environ.get(self.api_key_env)
        if not key:
            raise Unavailable(
                f"Deployment {self.deployment!r} takes its API key from the environment variable {self.api_key_env}, "
                "which is not set on the server: set it and restart `astra serve`",
                code="DEPLOYMENT_UNAVAILABLE",
            )
        return {"Authorization": f"Bearer {key}"}

    def client(self, timeout: float | None = None) -> httpx.Client:
        t = timeout if timeout is not None else self.timeout
        return httpx.Client(timeout=httpx.Timeout(t, connect=min(10.0, t)), headers=self.headers())

    def unavailable(self, e: Exception) -> Unavailable:
        what = "did not answer in time" if isinstance(e, httpx.TimeoutException) else "cannot be reached"
        return Unavailable(
            f"Deployment {self.deployment!r}: the server at {self.url} {what} ({type(e).__name__}). "
            "Check that it runs (e.g. `ollama serve`) and that the deployment's runtime.url is right",
            code="DEPLOYMENT_UNAVAILABLE",
            details={"deployment": self.deployment},
        )

    def error(self, response: httpx.Response) -> BadGateway:
        try:
            body = response.read()
            data = json.loads(body)
            err = data.get("error") if isinstance(data, dict) else None
            message = (err.get("message") if isinstance(err, dict) else err) or body[:300].decode(errors="replace")
        except (ValueError, httpx.HTTPError):
            message = response.text[:300] if response.is_stream_consumed else ""
        return BadGateway(
            f"Deployment {self.deployment!r}: the server at {self.url} answered {response.status_code}: {message}",
            code="UPSTREAM_ERROR",
            details={"deployment": self.deployment, "status": response.status_code},
        )

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            with self.client() as client:
                response = client.post(f"{self.url}{path}", json=body)
        except httpx.TransportError as e:
            raise self.unavailable(e) from None
        if response.status_code >= 400:
            raise self.error(response)
        try:
            return cast(dict[str, Any], response.json())
        except ValueError:
            raise BadGateway(
                f"Deployment {self.deployment!r}: the server at {self.url} did not answer with JSON",
                code="UPSTREAM_ERROR",
            ) from None

    @contextmanager
    def stream(self, path: str, body: dict[str, Any]) -> Iterator[httpx.Response]:
        try:
            with self.client() as client, client.stream("POST", f"{self.url}{path}", json=body) as response:
                if response.status_code >= 400:
                    raise self.error(response)
                yield response
        except httpx.TransportError as e:
            raise self.unavailable(e) from None

    def health(self) -> dict[str, Any]:
        """GET <url>/models with a short timeout: does it answer, and does it serve our model?"""
        try:
            with self.client(timeout=min(5.0, self.timeout)) as client:
                response = client.get(f"{self.url}/models")
        except Unavailable as e:
            return {"ok": False, "detail": e.message}
        except httpx.TransportError as e:
            return {"ok": False, "detail": self.unavailable(e).message}
        if response.status_code >= 400:
            return {"ok": False, "detail": f"{self.url} answered {response.status_code} to GET /models"}
        try:
            ids = [m.get("id") for m in response.json().get("data", [])]
        except (ValueError, AttributeError):
            ids = []
        if ids and self.model not in ids and f"{self.model}:latest" not in ids:
            return {"ok": True, "detail": f"{self.url} answers, but does not list {self.model!r} (it lists {len(ids)})"}
        return {"ok": True, "detail": f"{self.url} answers ({self.model})"}


class UpstreamEmbedder(Embedder):
    def __init__(self, upstream: Upstream, *, e5_prefixes: bool = False, dimensions: int | None = None) -> None:
        self.name = upstream.deployment
        self.upstream = upstream
        self.e5_prefixes = e5_prefixes
        self._dimensions = dimensions

    @property
    def dimensions(self) -> int:  # type: ignore[override]
        if self._dimensions is None:
            self._dimensions = int(self._embed(["dimensions"]).shape[1])
        return self._dimensions

    def _embed(self, texts: list[str]) -> np.ndarray:
        rows: list[np.ndarray] = []
        for i in range(0, len(texts), EMBED_BATCH):
            batch = texts[i : i + EMBED_BATCH]
            data = self.upstream.post("/embeddings", {"model": self.upstream.model, "input": batch, "encoding_format": "float"})
            try:
                items = sorted(data["data"], key=lambda d: d.get("index", 0))
                vectors = [_vector(item["embedding"]) for item in items]
            except (KeyError, TypeError, ValueError):
                raise BadGateway(
                    f"Deployment {self.name!r}: the server's embeddings answer is not in the OpenAI shape",
                    code="UPSTREAM_ERROR",
                ) from None
            if len(vectors) != len(batch):
                raise BadGateway(
                    f"Deployment {self.name!r}: asked for {len(batch)} embeddings, got {len(vectors)}", code="UPSTREAM_ERROR"
                )
            rows.extend(vectors)
        matrix = normalise(np.array(rows, dtype=np.float32))
        if self._dimensions is None and len(rows):
            self._dimensions = int(matrix.shape[1])
        return matrix

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return self._embed([("passage: " + t) if self.e5_prefixes else t for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return cast(np.ndarray, self.embed_queries([text])[0])

    def embed_queries(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        return self._embed([("query: " + t) if self.e5_prefixes else t for t in texts])


def _vector(value: Any) -> np.ndarray:
    if isinstance(value, str):  # encoding_format base64, whatever we asked
        return np.frombuffer(base64.b64decode(value), dtype="<f4").astype(np.float32)
    return np.asarray(value, dtype=np.float32)


class UpstreamChat(ChatModel):
    def __init__(self, upstream: Upstream) -> None:
        self.name = upstream.deployment
        self.upstream = upstream

    def _body(self, request: dict[str, Any], stream: bool) -> dict[str, Any]:
        body = {k: v for k, v in request.items() if v is not None and k != "metadata"}
        body["model"] = self.upstream.model
        body["stream"] = stream
        if not stream:
            body.pop("stream_options", None)
        return body

    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        data = self.upstream.post("/chat/completions", self._body(request, False))
        if not isinstance(data, dict) or not data.get("choices"):
            raise BadGateway(
                f"Deployment {self.name!r}: the server's answer has no choices (not an OpenAI chat completion)",
                code="UPSTREAM_ERROR",
            )
        return data

    def stream(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        with self.upstream.stream("/chat/completions", self._body(request, True)) as response:
            try:
                for line in response.iter_lines():
                    line = line.strip()
                    if not line.startswith("data:"):
                        continue
                    payload = line[5:].strip()
                    if payload == "[DONE]":
                        return
                    try:
                        yield json.loads(payload)
                    except ValueError:
                        raise BadGateway(
                            f"Deployment {self.name!r}: the server sent a stream event that is not JSON", code="UPSTREAM_ERROR"
                        ) from None
            except httpx.TransportError as e:
                raise self.upstream.unavailable(e) from None
