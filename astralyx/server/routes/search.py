"""Documents and search of a base: /v1/metis/knowledge-bases/<base>/{sync,files,documents,search,reindex}.

POST …/sync and …/reindex answer the report as JSON, or with `?progress=true` a stream of
NDJSON lines ({"progress": {"done", "total", "document"}} … then {"result": …} or {"error": …})
so a client can show a progress bar.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Body, Depends, File, UploadFile
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ...auth.actor import Actor
from ...core import Astralyx
from ..deps import get_actor, get_core
from ..models import SearchIn, SearchOut
from ..openapi import errors, ndjson_answer, ok
from ..streams import guarded, ndjson, with_progress

log = logging.getLogger("astralyx")

router = APIRouter(prefix="/metis/knowledge-bases/{base}", tags=["documents and search"])

SEARCH_EXAMPLE = {"query": "How many vacation days do I have?", "max_results": 8}


def _stream(work: Callable[..., dict[str, Any]]) -> StreamingResponse:
    return ndjson(guarded(with_progress(work), "sync"))


SYNC_ANSWER = ndjson_answer("The sync's report; with ?progress=true NDJSON lines: {\"progress\": {done, total, document}} "
                     "…, then {\"result\": report} or {\"error\": …}")


@router.post("/sync", responses={200: SYNC_ANSWER, **errors(404, 409, 503)})
async def sync(
    base: str, progress: bool = False, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
):
    """Index new and changed files of the base's folder and sources; drop removed ones."""
    if progress:
        await run_in_threadpool(core.documents.check_write, actor, base)
        return _stream(lambda progress: core.documents.sync(actor, base, progress))
    return await run_in_threadpool(core.documents.sync, actor, base)


@router.post("/reindex", responses={200: SYNC_ANSWER, **errors(404, 409, 503)})
async def reindex(
    base: str, progress: bool = False, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
):
    """Drop the base's index and build it again from its files."""
    if progress:
        await run_in_threadpool(core.documents.check_write, actor, base)
        return _stream(lambda progress: core.documents.reindex(actor, base, progress))
    return await run_in_threadpool(core.documents.reindex, actor, base)


@router.post("/files", status_code=201, responses=errors(404, 409, 503))
async def upload(
    base: str,
    file: list[UploadFile] = File(..., min_length=1, description="One or more files: Markdown, plain text, HTML or PDF"),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> dict:
    uploaded = []
    for f in file:
        data = await f.read()
        uploaded.append(await run_in_threadpool(core.documents.upload, actor, base, f.filename or "", data))
    return {"knowledge_base": base, "uploaded": uploaded}


@router.get("/files", responses=errors(404, 409))
def list_files(base: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return {"knowledge_base": base, "files": core.documents.files(actor, base)}


@router.delete("/files/{name}", responses=errors(404, 409))
def delete_file(base: str, name: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    core.documents.delete_file(actor, base, name)
    return {"deleted": name}


@router.get("/documents", responses=errors(404))
def list_documents(base: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> dict:
    return core.documents.documents(actor, base)


@router.post("/search", responses=ok(SearchOut, 404, 503))
def search(
    base: str,
    body: SearchIn = Body(..., examples=[SEARCH_EXAMPLE]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> dict:
    """At most 8 passages, numbered, each with its document, title and where (headings › line or page)."""
    return core.search.search(actor, base, body.query, max_results=body.max_results, as_of=body.as_of)
