"""Syncs of a base as background jobs: /v1/metis/knowledge-bases/<base>/{sync,reindex}.

GET …/sync is the base's latest job (anyone who may read the base): state queued | running |
finished | failed (idle: none since the server started), files and passages done/total,
passages/s, an ETA, errors per file, the report at the end.

POST …/sync (and …/reindex) starts the job, or joins the one running, then:
- answers its report as JSON when it ends (the default);
- with `?wait=false`, answers 202 with the job at once (follow it with GET …/sync);
- with `?progress=true`, streams NDJSON lines ({"progress": {"done", "total", "document", …}} …
  then {"result": …} or {"error": …}) as the job goes.
A reindex asked while a sync runs answers 409 SYNC_RUNNING with the job.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from ...auth.actor import Actor
from ...core import Astralyx
from ...metis.jobs import IdleSync, SyncJob, SyncResult, SyncStatus
from ..deps import get_actor, get_core
from ..openapi import errors, ndjson_answer
from ..streams import guarded, ndjson

router = APIRouter(prefix="/metis/knowledge-bases/{base}", tags=["documents and search"])

SYNC_ANSWER = ndjson_answer(
    "The sync's report when it ends; 202 with the job under ?wait=false; with ?progress=true NDJSON lines: "
    "{\"progress\": {done, total, document, state, phase, passages, …}} …, then {\"result\": report} or {\"error\": …}"
)

JOB_ANSWER = {"model": SyncStatus, "description": "With ?wait=false: the job at once (follow it with GET …/sync)"}

POLL = 0.25  # seconds between two looks at a job being streamed


def follow(job: SyncJob) -> Iterator[dict[str, Any]]:
    """A job's progress as it changes, then its result (a failed job raises its error)."""
    last = None
    while True:
        ended = job.done.wait(POLL)
        status = job.status()
        event = {
            "done": status.files.done, "total": status.files.total or 0, "document": status.document,
            "state": status.state, "phase": status.phase, "passages": status.passages.model_dump(),
            "passages_per_second": status.passages_per_second, "eta_seconds": status.eta_seconds,
        }
        seen = (event["done"], event["total"], event["state"], event["phase"], status.passages.done, event["document"])
        if seen != last:
            last = seen
            yield {"progress": event}
        if ended:
            break
    if job.exception is not None:
        raise job.exception
    yield {"result": job.report}


async def _answer(core: Astralyx, actor: Actor, base: str, kind: str, wait: bool, progress: bool):
    job, started = await run_in_threadpool(core.documents.start, actor, base, kind)
    if progress:
        return ndjson(guarded(follow(job), kind))
    if not wait:
        status = job.status()
        status.started = started
        return JSONResponse(status.model_dump(), status_code=202)
    return await run_in_threadpool(core.documents.wait, job)


@router.get("/sync", responses=errors(404))
def sync_status(
    base: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)
) -> SyncStatus | IdleSync:
    """The base's latest sync job: state, files and passages done/total, passages/s, ETA, errors, report."""
    return core.documents.status(actor, base)


# The report is checked against its model (the job keeps it as JSON, for every process); 202 and NDJSON are answered as they are.
@router.post("/sync", response_model=SyncResult, responses={200: SYNC_ANSWER, 202: JOB_ANSWER, **errors(404, 409, 503)})
async def sync(
    base: str, progress: bool = False, wait: bool = True,
    actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core),
):
    """Index new and changed files of the base's folder and sources; drop removed ones (a background job)."""
    return await _answer(core, actor, base, "sync", wait, progress)


@router.post("/reindex", response_model=SyncResult, responses={200: SYNC_ANSWER, 202: JOB_ANSWER, **errors(404, 409, 503)})
async def reindex(
    base: str, progress: bool = False, wait: bool = True,
    actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core),
):
    """Build the base's index again from its files, aside, then swap it in (a background job; searches meanwhile
    answer from the old index)."""
    return await _answer(core, actor, base, "reindex", wait, progress)
