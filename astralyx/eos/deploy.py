"""Deploy a model: from a library model (or an upstream's model name) and a few choices to a deployment.

One rule for every shell that deploys (the console's deploy forms call it; `astra eos deploy` goes
through POST /v1/eos/deployments, which calls it): the deployment's default name, embedded or upstream,
Runs on, replicas and Scale to zero, and what happens when a deployment of that name exists: refused
with DEPLOYMENT_EXISTS, or (asked to replace) replaced keeping its tools and sharing. The console and
the API refuse unless asked; `astra eos deploy` asks, since deploying again under a name is how the CLI
changes a deployment's model or resources.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from ..auth.actor import Actor
from ..errors import Conflict, Invalid
from .deployments import Deployment, parse_spec
from .urls import URL_SCHEMA

if TYPE_CHECKING:
    from .catalog import Models
    from .deployments import Deployments


class DeployRequest(BaseModel):
    model: str = Field(description="A library model (name or alias, e.g. qwen3:4b) or the upstream's model name")
    name: str | None = Field(default=None, description="Deployment name (default: from the model's)")
    kind: Literal["chat", "embedding"] | None = Field(default=None, description="Needed for a model the library does not know")
    cpu: bool = Field(default=True, description="Runs on CPUs only")
    min: int = Field(default=1, ge=0, description="Fewest replicas (0: scale to zero when idle)")
    max: int = Field(default=1, ge=1, description="Most replicas")
    url: str | None = Field(default=None, description="An OpenAI-compatible server runs it", json_schema_extra=URL_SCHEMA)
    upstream_model: str | None = None
    api_key_env: str | None = None
    timeout: float | None = None


def default_name(model: str) -> str:
    """`qwen3-4b-q4-k-m` for the library's qwen3-4b-q4-k-m, `qwen3-4b` for an upstream's `qwen3:4b`."""
    return model.replace(":", "-").replace(".", "-").lower()


def name_for(models: Models, request: DeployRequest) -> str:
    """The deployment's name: the one asked for, else the default from the library model's (or upstream's) name."""
    entry = models.resolve(request.model)
    return request.name or default_name(entry.name if entry else request.model)


def deploy(
    actor: Actor, deployments: Deployments, models: Models, request: DeployRequest,
    *, existing: Literal["refuse", "replace"] = "refuse",
) -> Deployment:
    entry = models.resolve(request.model)
    if entry is None and not request.url:
        raise Invalid(
            f"{request.model!r} is not in the library (astra eos models): give a server's URL to run it upstream, "
            "or add its GGUF with `astra eos add NAME --file PATH.gguf`",
            code="UNKNOWN_MODEL",
        )
    kind = request.kind or (entry.kind if entry else None)
    if kind is None:
        raise Invalid(f"Say what {request.model!r} is: kind chat or embedding", code="INVALID_SPEC")
    model_name = entry.name if entry else request.model
    if not request.url and (request.upstream_model or request.api_key_env or request.timeout):
        raise Invalid("The upstream's model name, API key variable and timeout go with a server's URL", code="INVALID_SPEC")
    runtime: dict[str, Any] = {"type": "embedded"}
    if request.url:
        runtime = {"type": "upstream", "url": request.url}
        for key, value in (("model", request.upstream_model), ("api_key_env", request.api_key_env),
                           ("timeout", request.timeout)):
            if value:
                runtime[key] = value
    name = name_for(models, request)
    spec: dict[str, Any] = {"model": model_name, "kind": kind, "runtime": runtime,
                            "resources": {"cpu": request.cpu, "min": request.min, "max": request.max}}
    current = deployments.find(actor.workspace, name)
    if current is not None:
        if existing == "refuse":
            raise Conflict(f"A deployment named {name!r} exists already: choose another name", code="DEPLOYMENT_EXISTS")
        # Deployed again: a new model or resources, the same tools and sharing.
        spec["tools"] = current.spec.tools
        spec["shared_with"] = current.spec.shared_with
    return deployments.put(actor, actor.workspace, name, parse_spec(spec))
