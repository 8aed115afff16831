"""Notes of a base: /v1/metis/knowledge-bases/<base>/notes/<path> (and saved/<path>).

GET answers JSON (or the markdown file itself with `Accept: text/markdown`), with the
note's version as ETag. PUT takes JSON {"metadata", "content"} or the markdown file;
`If-Match` makes it conditional, `If-None-Match: *` makes it create-only.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Header, Request, Response
from fastapi.responses import PlainTextResponse
from starlette.concurrency import run_in_threadpool

from ...auth.actor import Actor
from ...core import Astralyx
from ...errors import BadRequest
from ...metis.notes import Note, NoteList, NoteView, parse, render
from ..body import parse_json, surrogate_problem
from ..deps import get_actor, get_core
from ..models import TEXT, Deleted
from ..openapi import errors, ok

# The body is read here (JSON or the markdown file itself), so the schema is said rather than inferred.
NOTE_BODY = {"requestBody": {"required": True, "content": {
    "application/json": {"schema": {"type": "object", "properties": {
        "metadata": {"type": "object", "description": "The front matter (title, tags, …)"},
        "content": {"type": "string", "description": "The note's markdown", **TEXT}}}},
    "text/markdown": {"schema": {"type": "string", "description": "The file: front matter, then markdown", **TEXT}}}}}
NOTE_ANSWER = {"model": NoteView, "description": "The note (or with Accept: text/markdown the file itself); its version is "
               "the ETag", "content": {"text/markdown": {"schema": {"type": "string"}}}}

router = APIRouter(prefix="/metis/knowledge-bases/{base}", tags=["notes"])


def _etag(note: Note) -> dict[str, str]:
    return {"ETag": f'"{note.version}"'}


async def _body(request: Request) -> tuple[dict, str]:
    raw = await request.body()
    ctype = request.headers.get("content-type", "")
    if "json" in ctype:
        data = parse_json(raw, empty={})
        if not isinstance(data, dict) or not isinstance(data.get("content", ""), str):
            raise BadRequest('Send {"metadata": {...}, "content": "markdown"}', code="INVALID_NOTE")
        metadata = data.get("metadata") or {}
        if not isinstance(metadata, dict):
            raise BadRequest("metadata must be an object", code="INVALID_NOTE")
        note = metadata, data.get("content", "")
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise BadRequest("A note is UTF-8 text", code="INVALID_NOTE") from None
        note = parse(text)  # YAML front matter has "\\udc00" escapes too (libyaml refuses them; PyYAML's own loader not)
    problem = surrogate_problem({"metadata": note[0], "content": note[1]})
    if problem:  # the rule of every JSON body (models.Body), with this route's code
        raise BadRequest(f"The note is not valid: {problem}", code="INVALID_NOTE")
    return note


def _mount(area: str) -> None:
    @router.get(f"/{area}", name=f"list_{area}", responses=ok(NoteList, 404))
    def list_notes(base: str, actor: Actor = Depends(get_actor), core: Astralyx = Depends(get_core)) -> NoteList:
        return NoteList.model_construct(notes=[n.summary() for n in core.notes.list(actor, base, area)])

    # The JSON answers are the model's (filtered by it); the markdown file is a Response of its own.
    @router.get(f"/{area}/{{path:path}}", name=f"read_{area}", response_model=NoteView,
                responses={200: NOTE_ANSWER, **errors(404)})
    def read_note(
        base: str, path: str, request: Request, response: Response, actor: Actor = Depends(get_actor),
        core: Astralyx = Depends(get_core),
    ) -> Any:
        note = core.notes.read(actor, base, area, path)
        if "text/markdown" in request.headers.get("accept", ""):
            return PlainTextResponse(render(note.metadata, note.content), media_type="text/markdown", headers=_etag(note))
        response.headers.update(_etag(note))
        return note.view()

    @router.put(f"/{area}/{{path:path}}", name=f"write_{area}", openapi_extra=NOTE_BODY,
                responses={200: {"model": NoteView, "description": "The note, changed"},
                           201: {"model": NoteView, "description": "The note, created"},
                           **errors(404, 409)})
    async def write_note(
        base: str,
        path: str,
        request: Request,
        response: Response,
        if_match: str | None = Header(default=None),
        if_none_match: str | None = Header(default=None),
        actor: Actor = Depends(get_actor),
        core: Astralyx = Depends(get_core),
    ) -> NoteView:
        metadata, content = await _body(request)
        note, created = await run_in_threadpool(
            core.notes.write, actor, base, area, path, content, metadata,
            if_match=if_match, create_only=(if_none_match == "*"),
        )
        response.status_code = 201 if created else 200
        response.headers.update(_etag(note))
        return note.view()

    @router.delete(f"/{area}/{{path:path}}", name=f"delete_{area}", responses=ok(Deleted, 404, 409))
    def delete_note(
        base: str,
        path: str,
        if_match: str | None = Header(default=None),
        actor: Actor = Depends(get_actor),
        core: Astralyx = Depends(get_core),
    ) -> Deleted:
        core.notes.delete(actor, base, area, path, if_match=if_match)
        return Deleted(deleted=path)


_mount("notes")
_mount("saved")
