"""Upstream runtime: any OpenAI-compatible server (Ollama, llama.cpp's server, vLLM, a hosted API).

The API key comes from the environment variable the spec names, read at each call: it is
never stored in a spec nor printed. A server that does not answer (connection refused,
timeout) is 503 DEPLOYMENT_UNAVAILABLE; one that answers with an error is 502 UPSTREAM_ERROR.
A URL the rule of eos/urls.py refuses (a row stored before the rule) is never called: 503 saying why.

Health is cached (`HealthCache`): a deployment's own page asks the upstream (at most every HEALTH_TTL
seconds), calls record how they went, and listings show the last of these without calling anyone.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import httpx
import numpy as np

from ...errors import AstralyxError, BadGateway, Unavailable
from ...util import iso
from ..deployments import Health
from ..urls import check_upstream_url
from .base import ChatModel, Embedder
from .embedded import normalise

EMBED_BATCH = 64
HEALTH_TTL = 15.0  # seconds a check of an upstream stands for the next ones


class HealthCache:
    """The last word on each upstream (its URL, model and key variable): a check, or how a call went."""

    def __init__(self, ttl: float = HEALTH_TTL) -> None:
        self.ttl = ttl
        self._last: dict[tuple[str, str, str | None], tuple[float, str, Health]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(upstream: Upstream) -> tuple[str, str, str | None]:
        return upstream.url, upstream.model, upstream.api_key_env

    def record(self, upstream: Upstream, status: Health) -> None:
        with self._lock:
            self._last[self._key(upstream)] = (time.monotonic(), iso(), status)

    def last(self, upstream: Upstream, *, within: float | None = None) -> Health | None:
        """The last status with when it was taken (`checked_at`), if any (and, with `within`, that recent)."""
        with self._lock:
            seen = self._last.get(self._key(upstream))
        if seen is None or (within is not None and time.monotonic() - seen[0] > within):
            return None
        return seen[2].model_copy(update={"checked_at": seen[1]})


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every call: making one reads the system's certificates, tens of milliseconds of CPU
    (hundreds on a busy machine) that each call paid, a sync through a fast upstream every 16 passages."""
    return httpx.create_ssl_context()


class Upstream:
    """One OpenAI-compatible base URL, its model name there, its key and timeout."""

    def __init__(self, deployment: str, url: str, model: str, api_key_env: str | None, timeout: float,
                 *, allow_link_local: bool = False, health: HealthCache | None = None) -> None:
        self.deployment = deployment
        self.url = url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.health_cache = health or HealthCache()
        # A URL stored before the rule (or refused by the operator's setting since) is never called.
        self.refused: AstralyxError | None = None
        try:
            check_upstream_url(url, allow_link_local=allow_link_local)
        except AstralyxError as e:
            self.refused = e

    def check_url(self) -> None:
        if self.refused is not None:
            raise Unavailable(
                f"Deployment {self.deployment!r} is not called: {self.refused.message}. Fix it with "
                f"PUT /v1/eos/deployments/{self.deployment} (or deploy again)",
                code="DEPLOYMENT_UNAVAILABLE", details={"deployment": self.deployment, "cause": self.refused.code},
            )

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
        return httpx.Client(timeout=httpx.Timeout(t, connect=min(10.0, t)), headers=self.headers(), verify=_tls())

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

    def _answered(self) -> None:
        self.health_cache.record(self, Health(ok=True, detail=f"{self.url} answered a call ({self.model})"))

    def _failed(self, e: Exception) -> Unavailable:
        error = self.unavailable(e)
        self.health_cache.record(self, Health(ok=False, detail=error.message))
        return error

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        self.check_url()
        try:
            with self.client() as client:
                response = client.post(f"{self.url}{path}", json=body)
        except httpx.TransportError as e:
            raise self._failed(e) from None
        self._answered()
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
        self.check_url()
        try:
            with self.client() as client, client.stream("POST", f"{self.url}{path}", json=body) as response:
                self._answered()
                if response.status_code >= 400:
                    raise self.error(response)
                yield response
        except httpx.TransportError as e:
            raise self._failed(e) from None

    def health(self, *, check: bool = True) -> Health:
        """With `check`, the upstream asked (unless it was within HEALTH_TTL seconds); without, only what is known
        already (a listing calls no one): the last check or call, or that none was made yet."""
        if self.refused is not None:
            return Health(ok=False, detail=f"not called: {self.refused.message}")
        if not check:
            return self.health_cache.last(self) or Health(
                ok=None, detail="not checked yet: the deployment's own page (GET /v1/eos/deployments/<name>) checks it")
        recent = self.health_cache.last(self, within=self.health_cache.ttl)
        if recent is not None:
            return recent.model_copy(update={"checked_at": None})
        status = self._probe()
        self.health_cache.record(self, status)
        return status

    def _probe(self) -> Health:
        """GET <url>/models with a short timeout: does it answer, and does it serve our model?"""
        try:
            with self.client(timeout=min(5.0, self.timeout)) as client:
                response = client.get(f"{self.url}/models")
        except Unavailable as e:
            return Health(ok=False, detail=e.message)
        except httpx.TransportError as e:
            return Health(ok=False, detail=self.unavailable(e).message)
        except (httpx.HTTPError, httpx.InvalidURL, ValueError) as e:  # a URL httpx cannot use: said, never a 500
            return Health(ok=False, detail=f"{self.url} cannot be asked ({type(e).__name__})")
        if response.status_code >= 400:
            return Health(ok=False, detail=f"{self.url} answered {response.status_code} to GET /models")
        try:
            ids = [m.get("id") for m in response.json().get("data", [])]
        except (ValueError, AttributeError):
            ids = []
        if ids and self.model not in ids and f"{self.model}:latest" not in ids:
            return Health(ok=True, detail=f"{self.url} answers, but does not list {self.model!r} (it lists {len(ids)})")
        return Health(ok=True, detail=f"{self.url} answers ({self.model})")


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
    def __init__(self, upstream: Upstream, *, context: int | None = None) -> None:
        self.name = upstream.deployment
        self.upstream = upstream
        self.context_length = context  # what the spec declares (runtime.context): the server does not say

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
