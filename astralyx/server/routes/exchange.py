"""Export and import of a base: GET /v1/metis/knowledge-bases/<base>/export, POST /v1/metis/knowledge-bases/import.

The export streams as it is written (application/gzip): `?format=markdown` gives a memory's facts as pages
instead. The import takes the archive as the body (application/gzip) or as the field `file` of a form
(multipart/form-data), within the server's body limit (max_body_bytes: 413 TOO_LARGE); `?name=` imports it
under another name; `?wait=true` answers once the index is built (else follow GET …/<base>/sync).
"""

from __future__ import annotations

import tempfile
from typing import BinaryIO, Literal, cast

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from ...auth.actor import Actor
from ...core import Astralyx
from ...errors import AstralyxError, BadRequest
from ...metis.exchange import MEDIA_TYPE, Imported
from ...metis.jobs import IdleSync, SyncStatus
from ..deps import get_actor, get_core
from ..openapi import errors

router = APIRouter(prefix="/metis/knowledge-bases", tags=["knowledge bases"])

ARCHIVE = {"schema": {"type": "string", "format": "binary"}}
EXPORT_ANSWER = {"description": "The base as a .tar.gz (manifest.json, model-saves.json, base/…), streamed; with "
                 "format=markdown a memory's facts as a page per subject and their notes", "content": {MEDIA_TYPE: ARCHIVE}}
IMPORT_BODY = {"requestBody": {"required": True, "content": {
    MEDIA_TYPE: ARCHIVE,
    "multipart/form-data": {"schema": {"type": "object", "properties": {"file": {"type": "string", "format": "binary"}},
                                       "required": ["file"]}}}}}
IMPORT_ANSWER = {"model": Imported, "description": "The base created: what was imported, what was changed or left out "
                 "(warnings, skipped), and the reindex job that builds its index"}
RAW_TYPES = ("application/gzip", "application/x-gzip", "application/octet-stream", "application/x-tar")
SPOOL = 8 << 20  # bytes of a raw body kept in memory before it goes to a temporary file


@router.get("/{base}/export", response_class=StreamingResponse, responses={200: EXPORT_ANSWER, **errors(404, 409)})
async def export(
    base: str,
    format: Literal["archive", "markdown"] = Query("archive", description="archive: the whole base; markdown: a memory's "
                                                  "facts, a page per subject (409 NOT_A_MEMORY for a documents base)"),
    actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core),
) -> StreamingResponse:
    """The base's spec, files (notes, saved notes, uploads, facts with their history) and model saves; not its index,
    not its source folders' files (their spec only). Needs knowledge-bases:read."""
    out = await run_in_threadpool(core.exchange.export, actor, base, format)
    return StreamingResponse(out.chunks(), media_type=out.media_type,
                             headers={"Content-Disposition": f'attachment; filename="{out.filename}"'})


@router.post("/import", status_code=201, openapi_extra=IMPORT_BODY, responses={201: IMPORT_ANSWER, **errors(404, 409)})
async def import_base(
    request: Request,
    name: str | None = Query(None, description="The new base's name (default: the archive's)", max_length=64),
    wait: bool = Query(False, description="Answer once the base's index is built"),
    actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core),
) -> Imported:
    """A new base from an archive of `GET …/export` (or a memory's facts packed by `astra metis import DIR`): checked
    whole before anything is created; its index rebuilt by a reindex job. Needs knowledge-bases:manage."""
    body = await _archive(request)
    try:
        answer = await run_in_threadpool(core.exchange.import_archive, actor, body, name)
    finally:
        body.close()
    if wait:
        created = answer.knowledge_base.metadata
        answer.index = await run_in_threadpool(_wait, core, created.workspace, created.name)
    return answer


def _wait(core: Astralyx, workspace: str, base: str) -> SyncStatus | IdleSync:
    """The base's reindex once it ended (its failure is said in it, the base stays)."""
    job = core.documents.jobs.get(workspace, base)
    if job is not None:
        try:
            core.documents.wait(job)
        except AstralyxError:
            pass
        return job.status()
    return IdleSync.model_construct(knowledge_base=base, state="idle", index={})  # pragma: no cover - the import started it


async def _archive(request: Request) -> BinaryIO:
    """The archive the request carries, in a file (in memory while small)."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype == "multipart/form-data":
        form = await request.form()
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise BadRequest("Send the archive as the form's field `file` (or as the body, application/gzip)", code="NO_FILE")
        return cast(BinaryIO, upload.file)
    if ctype and ctype not in RAW_TYPES:
        raise AstralyxError(f"An import takes the archive as the body ({MEDIA_TYPE}) or as a form's field `file` "
                            f"(multipart/form-data), not {ctype}", code="UNSUPPORTED_MEDIA_TYPE")
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL)  # noqa: SIM115 - handed on, closed by the route
    async for chunk in request.stream():
        spool.write(chunk)
    spool.seek(0)
    return cast(BinaryIO, spool)
