"""Documents and search of a base: /v1/metis/knowledge-bases/<base>/{files,documents,search}.

Its syncs (…/sync, …/reindex) are background jobs: routes/sync.py.
"""

from __future__ import annotations

import logging

from fastapi import APIRouter, Body, Depends, File, UploadFile
from starlette.concurrency import run_in_threadpool

from ...answers import Answer
from ...auth.actor import Actor
from ...core import Astralyx
from ...metis.documents import DocumentList, Uploaded, UploadedFile
from ...metis.search import SearchResult
from ..deps import get_actor, get_core
from ..models import Deleted, SearchIn
from ..openapi import ok

log = logging.getLogger("astralyx")

router = APIRouter(prefix="/metis/knowledge-bases/{base}", tags=["documents and search"])

SEARCH_EXAMPLE = {"query": "How many vacation days do I have?", "max_results": 8}


class Uploads(Answer):
    knowledge_base: str
    uploaded: list[Uploaded]


class Files(Answer):
    knowledge_base: str
    files: list[UploadedFile]


@router.post("/files", status_code=201, responses=ok(Uploads, 404, 409, 503, status=201))
async def upload(
    base: str,
    file: list[UploadFile] = File(..., min_length=1, description="One or more files: Markdown, plain text, HTML or PDF"),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> Uploads:
    uploaded = []
    for f in file:
        data = await f.read()
        uploaded.append(await run_in_threadpool(core.documents.upload, actor, base, f.filename or "", data))
    return Uploads.model_construct(knowledge_base=base, uploaded=uploaded)


@router.get("/files", responses=ok(Files, 404, 409))
def list_files(base: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> Files:
    return Files.model_construct(knowledge_base=base, files=core.documents.files(actor, base))


@router.delete("/files/{name}", responses=ok(Deleted, 404, 409))
def delete_file(base: str, name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> Deleted:
    core.documents.delete_file(actor, base, name)
    return Deleted(deleted=name)


@router.get("/documents", responses=ok(DocumentList, 404))
def list_documents(base: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> DocumentList:
    return core.documents.documents(actor, base)


@router.post("/search", responses=ok(SearchResult, 404, 503))
def search(
    base: str,
    body: SearchIn = Body(..., examples=[SEARCH_EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> SearchResult:
    """At most 8 passages, numbered, each with its document, title and where (headings › line or page)."""
    return core.search.search(actor, base, body.query, max_results=body.max_results, as_of=body.as_of)
