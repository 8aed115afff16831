"""Documents and search of a base: /v1/metis/knowledge-bases/<base>/{files,documents,search}.

Its syncs (…/sync, …/reindex) are background jobs: routes/sync.py.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Body, Depends, File, UploadFile
from starlette.concurrency import run_in_threadpool

from ...auth.actor import Actor
from ...core import Astralyx
from ...errors import BadRequest
from ..deps import get_actor, get_core

log = logging.getLogger("astralyx")

router = APIRouter(prefix="/metis/knowledge-bases/{base}", tags=["documents and search"])

SEARCH_EXAMPLE = {"query": "How many vacation days do I have?", "max_results": 8}


@router.post("/files", status_code=201)
async def upload(
    base: str,
    file: list[UploadFile] = File(..., description="One or more files: Markdown, plain text, HTML or PDF"),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> dict:
    uploaded = []
    for f in file:
        data = await f.read()
        uploaded.append(await run_in_threadpool(core.documents.upload, actor, base, f.filename or "", data))
    return {"knowledge_base": base, "uploaded": uploaded}


@router.get("/files")
def list_files(base: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return {"knowledge_base": base, "files": core.documents.files(actor, base)}


@router.delete("/files/{name}")
def delete_file(base: str, name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    core.documents.delete_file(actor, base, name)
    return {"deleted": name}


@router.get("/documents")
def list_documents(base: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return core.documents.documents(actor, base)


@router.post("/search")
def search(
    base: str,
    body: dict[str, Any] = Body(..., examples=[SEARCH_EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> dict:
    """At most 8 passages, numbered, each with its document, title and where (headings › line or page)."""
    query = body.get("query")
    if not isinstance(query, str):
        raise BadRequest('Send {"query": "...", "max_results": 8}', code="INVALID_QUERY")
    max_results = body.get("max_results", 8)
    as_of = body.get("as_of")
    if as_of is not None and not isinstance(as_of, str):
        raise BadRequest("as_of is a date like 2026-09-30", code="INVALID_QUERY")
    return core.search.search(actor, base, query, max_results=max_results, as_of=as_of)
