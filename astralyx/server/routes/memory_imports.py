"""Import a chat archive into a memory: /v1/metis/knowledge-bases/<memory>/imports.

    POST   …/imports                 multipart `archive`: a ChatGPT or Claude export (the zip, or its
                                     conversations.json) → the job with the archive's conversations (201;
                                     200 with the job already there when the same archive was sent before)
    POST   …/imports/<id>/start      the chosen conversations (ids, or since/until/title, or all) are read
    GET    …/imports/<id>            state and progress; once finished, the review of every proposal
    DELETE …/imports/<id>            cancels (its conversations and proposals go); an ended job is removed
    GET    …/imports                 the memory's imports

Nothing is kept in the memory here: the facts chosen in the review are kept with POST …/memory.
Permissions as for extraction: knowledge-bases:write-content.
"""

from __future__ import annotations

from fastapi import APIRouter, Body, Depends, File, Response, UploadFile
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from ...auth.actor import Actor
from ...core import Astralyx
from ...metis.memory.imports import ImportJob, ImportListing, ImportRemoved
from ..deps import get_actor, get_core
from ..models import Body as RequestBody
from ..openapi import errors, ok

router = APIRouter(prefix="/metis/knowledge-bases/{base}/imports", tags=["memory"])


class StartIn(RequestBody):
    """Which conversations to read: their ids, or the filters (dates inclusive, a title glob), or all of them."""

    invalid = ("choice of conversations", "NOTHING_CHOSEN")
    conversations: list[str] | None = Field(default=None, max_length=100_000, description="The ids of the chosen conversations")
    since: str | None = Field(default=None, description="Created on or after this day (2026-03-01)")
    until: str | None = Field(default=None, description="Created on or before this day (2026-06-30)")
    title: str | None = Field(default=None, max_length=200, description="A title glob (standup*); without * or ?: "
                              "the title holds it. Case-insensitive")
    all: bool = Field(default=False, description="Every conversation with messages")


@router.post("", status_code=201, responses={
    201: {"model": ImportJob, "description": "The job, new"},
    200: {"model": ImportJob, "description": "The job of the same archive, sent before (not ended)"},
    **errors(404, 409)})
async def upload(
    base: str,
    response: Response,
    archive: UploadFile = File(..., description="A ChatGPT or Claude export: the zip, or the conversations.json in it"),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> ImportJob:
    """The archive's conversations (title, date, messages), to choose from. The archive itself is read in memory
    and not kept; the conversations are, until the job ends (at most a day)."""
    data = await archive.read()
    job, new = await run_in_threadpool(core.imports.create, actor, base, data, archive.filename or "archive")
    response.status_code = 201 if new else 200
    return job


@router.get("", responses=ok(ImportListing, 404, 409))
async def list_imports(base: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> ImportListing:
    return await run_in_threadpool(core.imports.listing, actor, base)


@router.post("/{job}/start", responses=ok(ImportJob, 404, 409))
async def start(
    base: str,
    job: str,
    body: StartIn = Body(default_factory=StartIn, examples=[{"conversations": ["6a1e…", "9f02…"]}, {"since": "2026-03-01"}]),
    actor: Actor = Depends(get_actor),
    core: Astralyx = Depends(get_core),
) -> ImportJob:
    """Read the chosen conversations in the background (a job stopped is continued as it was chosen)."""
    return await run_in_threadpool(core.imports.start, actor, base, job, ids=body.conversations, since=body.since,
                                   until=body.until, title=body.title, everything=body.all)


@router.get("/{job}", responses=ok(ImportJob, 404, 409))
async def get(base: str, job: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> ImportJob:
    """State, progress (conversations done/total, rate, ETA); once finished, `review`: the proposals grouped by
    subject and attribute, each with what it would replace and the period it would hold."""
    return await run_in_threadpool(core.imports.get, actor, base, job)


@router.delete("/{job}", responses=errors(404, 409))
async def cancel(
    base: str, job: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> ImportJob | ImportRemoved:
    """Cancel: the job stops after the conversation it reads, its conversations and proposals go (the job answered);
    an ended job is removed (`removed`: true)."""
    return await run_in_threadpool(core.imports.cancel, actor, base, job)
