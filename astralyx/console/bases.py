"""Metis ▸ Knowledge bases: list, create, delete with confirmation, a base's page."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..auth.roles import DEPLOYMENTS_CALL, MANAGE_BASES
from ..errors import AstralyxError, NotFound
from ..metis.bases import edited_spec, new_base, parse_request, resync_notice
from ..metis.documents import IndexedDocument
from ..metis.jobs import duration
from ..metis.writer import holds_facts
from ..util import quoted
from .web import Ctx, api, page


def deployment_choices(ctx: Ctx) -> dict[str, list[str]]:
    """The workspace's deployments by kind, for the embedding and extractor menus."""
    try:
        deployments = ctx.core.deployments.list(ctx.actor)
    except AstralyxError:
        return {"embedding": [], "chat": []}
    out: dict[str, list[str]] = {"embedding": [], "chat": []}
    for dep in deployments:
        out.setdefault(dep.spec.kind, []).append(dep.name)
    return out


def base_request(form: Any, kind: str | None = None) -> dict[str, Any]:
    """The API's create body from the console's form (the same JSON the docs show, made as the CLI makes it)."""
    kind = kind or str(form.get("kind") or "documents")
    folder = str(form.get("folder") or "") if kind == "documents" else ""  # the form shows a folder for documents only
    return new_base(str(form.get("name") or ""), kind, folders=[folder], embedding=str(form.get("embedding") or ""),
                    extractor=str(form.get("extractor") or ""))


def settings_spec(base: Any, form: Any) -> dict[str, Any]:
    """The base's spec with the settings form's choices (a blank menu: none; each folder row with its patterns,
    a line each), made as the CLI's `astra metis update` makes it: the same JSON PUT …/knowledge-bases/<b> takes."""
    sources = None
    if base.kind == "documents":  # the form shows folders for documents only
        sources, i = [], 0
        while f"folder-{i}" in form:
            sources.append({"folder": str(form.get(f"folder-{i}") or ""),
                            **{key: str(form.get(f"{key}-{i}") or "").splitlines() for key in ("include", "exclude")}})
            i += 1
    embedding, extractor = (str(form.get(role) or "").strip() for role in ("embedding", "extractor"))
    return edited_spec(base.spec.model_dump(mode="json", exclude_none=True), embedding=embedding,
                       no_embedding=not embedding, extractor=extractor, no_extractor=not extractor, sources=sources)


@page
async def list_bases(ctx: Ctx) -> Response:
    bases = await ctx.call(ctx.core.bases.list, ctx.actor)
    choices = await ctx.call(deployment_choices, ctx)
    return ctx.render("bases/list.html", bases=bases, choices=choices)


@page
async def create_base(ctx: Ctx) -> Response:
    form = await ctx.form()
    request = parse_request(base_request(form))
    base = await ctx.call(ctx.core.bases.create, ctx.actor, request)
    where = "/metis/memory/" if base.kind == "memory" else "/metis/knowledge-bases/"
    return ctx.redirect(where + base.name, f"Created {base.kind} base {base.name}")


DOCUMENTS_PER_PAGE = 50  # a base of 539 documents was one 22,500-pixel table


def documents_page(documents: list[IndexedDocument], asked: str | None, params: Any) -> tuple[list[IndexedDocument], dict]:
    """One page of a base's documents (?page=N; past the last: the last) and how to reach the others
    (links keep the rest of the query: a search shown above the table stays)."""
    pages = max(1, -(-len(documents) // DOCUMENTS_PER_PAGE))
    page = min(max(int(asked), 1), pages) if asked and asked.isdigit() else 1
    start = (page - 1) * DOCUMENTS_PER_PAGE
    shown = documents[start:start + DOCUMENTS_PER_PAGE]

    def link(n: int) -> str:
        query = urlencode([(k, v) for k, v in params.multi_items() if k != "page"] + ([("page", str(n))] if n > 1 else []))
        return ("?" + query if query else "?") + "#documents"

    return shown, {"page": page, "pages": pages, "total": len(documents), "first": start + 1, "last": start + len(shown),
                   "previous": link(page - 1) if page > 1 else None, "next": link(page + 1) if page < pages else None}


def _extras(ctx: Ctx, base, query: str, as_of: str | None) -> dict[str, Any]:
    """Documents, the search's cited passages and the saves of models, from their services."""
    extras: dict[str, Any] = {"documents": None, "saves": None, "query": query, "as_of": as_of or "", "found": None,
                              "search_error": None}
    if base.kind == "documents":
        docs = ctx.core.documents.documents(ctx.actor, base.name).documents
        extras["documents"] = [d for d in docs if d.origin not in ("notes", "saved")]
    extras["saves"] = ctx.core.saves.list(ctx.actor, base.name)
    extras["drafts"] = ctx.core.saves.drafts(ctx.actor, base.name) if ctx.actor.can(DEPLOYMENTS_CALL) else None
    extras["draft_rules"] = ctx.core.saves.draft_rules()
    if query:
        try:
            extras["found"] = ctx.core.search.search(ctx.actor, base.name, query, as_of=as_of)
        except AstralyxError as e:  # shown beside the box, the rest of the page still useful
            extras["search_error"] = e
    return extras


@page
async def show_base(ctx: Ctx) -> Response:
    name = ctx.request.path_params["name"]
    base = await ctx.call(ctx.core.bases.get, ctx.actor, name)
    notes = await ctx.call(ctx.core.notes.list_in, base, "notes")
    notes = [n for n in notes if not holds_facts(base, n.relpath)]  # facts are shown by the memory
    saved = await ctx.call(ctx.core.notes.list_in, base, "saved")
    params = ctx.request.query_params
    as_of = (params.get("as_of", "").strip() or None) if base.kind == "memory" else None
    extras = await ctx.call(_extras, ctx, base, params.get("q", "").strip(), as_of)
    if extras["documents"] is not None:
        extras["documents"], extras["paging"] = documents_page(extras["documents"], params.get("page"), params)
    status = (await ctx.call(ctx.core.documents.status, ctx.actor, name)).model_dump()
    job = {**status, "text": sync_line(status), "active": status["state"] in ("queued", "running")}
    choices = await ctx.call(deployment_choices, ctx) if ctx.actor.can(MANAGE_BASES) else {"embedding": [], "chat": []}
    return ctx.render("bases/show.html", base=base, notes=notes, saved=saved, job=job, choices=choices, **extras)


@page
async def update_settings(ctx: Ctx) -> Response:
    """The settings form: the base's spec changed through core.bases.update, as PUT does."""
    name = ctx.request.path_params["name"]
    form = await ctx.form()
    base = await ctx.call(ctx.core.bases.get, ctx.actor, name)
    request = parse_request({"metadata": {"name": name}, "spec": settings_spec(base, form)})
    updated = await ctx.call(ctx.core.bases.update, ctx.actor, name, request.spec)
    notice = resync_notice(*(b.spec.model_dump(mode="json", exclude_none=True) for b in (base, updated)))
    message = f"Saved the settings of {name}" + (f": {notice}" if notice else "")
    return ctx.redirect(f"/metis/knowledge-bases/{name}#settings", message)


@page
async def show_note(ctx: Ctx) -> Response:
    name, area, path = (ctx.request.path_params[k] for k in ("name", "area", "path"))
    note = await ctx.call(ctx.core.notes.read, ctx.actor, name, area, path)
    base = await ctx.call(ctx.core.bases.get, ctx.actor, name)
    return ctx.render("bases/note.html", base=base, note=note)


@page
async def new_note(ctx: Ctx) -> Response:
    name = ctx.request.path_params["name"]
    form = await ctx.form()
    title = str(form.get("title") or "").strip()
    path = str(form.get("path") or "").strip() or _slug(title) + ".md"
    content = str(form.get("content") or "")
    metadata = {"title": title} if title else {}
    note, _ = await ctx.call(ctx.core.notes.write, ctx.actor, name, "notes", path, content, metadata, create_only=True)
    return ctx.redirect(f"/metis/knowledge-bases/{name}/notes/{quoted(note.path, slashes=True)}", f"Saved note {note.title}")


def _slug(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return slug[:80] or "note"


@page
async def upload(ctx: Ctx) -> Response:
    name = ctx.request.path_params["name"]
    filename, data = await ctx.upload("file", "Choose a file to upload")
    result = await ctx.call(ctx.core.documents.upload, ctx.actor, name, filename, data)
    return ctx.redirect(f"/metis/knowledge-bases/{name}", f"Uploaded {filename}: {result.chunks} passages")


SYNC_WAIT = 3.0  # seconds "Sync now" waits for a small sync to finish, to say its result at once


def sync_line(status: dict[str, Any]) -> str:
    """One sentence for a base's sync job, on its page (and updated live by console.js)."""
    state, name = status.get("state"), status.get("knowledge_base")
    files, passages = status.get("files") or {}, status.get("passages") or {}
    if state == "queued":
        return f"A sync of {name} is queued: it starts when the sync of another base ends."
    if state == "running":
        if passages.get("total") is None:
            return f"Syncing {name}: reading files, {files.get('read', 0):,} of {files.get('total') or 0:,}."
        text = f"Syncing {name}: {passages['done']:,} of {passages['total']:,} passages indexed"
        text += f", files {files.get('done', 0):,} of {files.get('total') or 0:,}"
        if status.get("passages_per_second"):
            text += f" · {status['passages_per_second']:.1f} passages/s"
        if status.get("eta_seconds") is not None:
            text += f" · about {duration(status['eta_seconds'])} left"
        return text + ". Documents are searchable as they are indexed."
    if state == "finished":
        r = status.get("report") or {}
        text = (f"Last sync finished {(status.get('finished_at') or '').replace('T', ' ').replace('Z', ' UTC')}: "
                f"{r.get('added', 0)} added, {r.get('changed', 0)} changed, {r.get('removed', 0)} removed")
        if r.get("failed"):
            text += f", {len(r['failed'])} could not be read"
        return text + "."
    if state == "failed":
        return f"The last sync of {name} failed: {(status.get('error') or {}).get('message', '')}"
    return ""


def _report_message(name: str, report: dict[str, Any]) -> str:
    def n(key: str) -> int:
        value = report.get(key, 0)
        return len(value) if isinstance(value, list) else int(value or 0)

    message = f"Synced {name}: {n('added')} added, {n('changed')} changed, {n('removed')} removed"
    if n("failed"):
        message += f", {n('failed')} could not be read"
    return message


@page
async def sync(ctx: Ctx) -> Response:
    """Start the base's sync (or join the one running); a small one's result is said at once."""
    name = ctx.request.path_params["name"]
    job, started = await ctx.call(ctx.core.documents.start, ctx.actor, name, "sync")
    back = f"/metis/knowledge-bases/{name}"
    if not started:
        return ctx.redirect(back, f"A sync of {name} is already running: its progress shows on this page")
    report = await ctx.call(ctx.core.documents.wait, job, SYNC_WAIT)
    if report is None:
        return ctx.redirect(back, f"Syncing {name} in the background: its progress shows on this page")
    return ctx.redirect(back, _report_message(name, report))


@api
async def sync_status(ctx: Ctx) -> Response:
    """The base's sync job for console.js: the job, and the sentence the page shows for it."""
    status = (await ctx.call(ctx.core.documents.status, ctx.actor, ctx.request.path_params["name"])).model_dump()
    return JSONResponse({**status, "text": sync_line(status), "active": status["state"] in ("queued", "running")})


@page
async def undo_save(ctx: Ctx) -> Response:
    """Undo a model's save; when the note changed since, ask first (NOTE_CHANGED), then force."""
    name, save_id = ctx.request.path_params["name"], ctx.request.path_params["save_id"]
    form = await ctx.form()
    force = form.get("force") == "yes"
    try:
        save = await ctx.call(ctx.core.saves.undo, ctx.actor, name, save_id, force=force)
    except AstralyxError as e:
        if e.code != "NOTE_CHANGED":
            raise
        save = await ctx.call(ctx.core.saves.get, ctx.actor, name, save_id)
        return ctx.render("bases/undo_changed.html", status=409, base_name=name, save=save, error=e)
    return ctx.redirect(f"/metis/knowledge-bases/{name}#saved-by-models", f"Undone: {save.title} removed from {name}")


@page
async def decide_draft(ctx: Ctx) -> Response:
    """Save or discard a draft a model proposed (Drafts waiting on the base's page)."""
    name, draft_id, choice = (ctx.request.path_params[k] for k in ("name", "draft_id", "choice"))
    if choice not in ("save", "discard"):
        raise NotFound(f"A draft is saved or discarded, not {choice!r}")
    if choice == "save":
        draft, _ = await ctx.call(ctx.core.saves.save_draft, ctx.actor, name, draft_id)
        return ctx.redirect(f"/metis/knowledge-bases/{name}#saved-by-models", f"Saved to {name}: {draft.title}")
    draft = await ctx.call(ctx.core.saves.discard_draft, ctx.actor, name, draft_id)
    return ctx.redirect(f"/metis/knowledge-bases/{name}", f"Discarded: {draft.title}")


@page
async def confirm_delete(ctx: Ctx) -> Response:
    base = await ctx.call(ctx.core.bases.get, ctx.actor, ctx.request.path_params["name"])
    return ctx.render("bases/delete.html", base=base)


@page
async def delete_base(ctx: Ctx) -> Response:
    name = ctx.request.path_params["name"]
    form = await ctx.form()
    if str(form.get("confirm_name") or "").strip() != name:
        raise AstralyxError(f"Type the base's name, {name}, to delete it", code="CONFIRM_NAME")
    base = await ctx.call(ctx.core.bases.get, ctx.actor, name)
    changed = await ctx.call(ctx.core.bases.delete, ctx.actor, name)
    back = "/metis/memory" if base.kind == "memory" else "/metis/knowledge-bases"
    tools = f"; its tools were removed from {', '.join(changed)}" if changed else ""
    return ctx.redirect(back, f"Deleted {name} and everything in it{tools}")


routes = [
    Route("/metis/knowledge-bases", list_bases, methods=["GET"]),
    Route("/metis/knowledge-bases", create_base, methods=["POST"]),
    Route("/metis/knowledge-bases/{name}", show_base, methods=["GET"]),
    Route("/metis/knowledge-bases/{name}/notes", new_note, methods=["POST"]),
    Route("/metis/knowledge-bases/{name}/files", upload, methods=["POST"]),
    Route("/metis/knowledge-bases/{name}/sync", sync, methods=["POST"]),
    Route("/metis/knowledge-bases/{name}/sync", sync_status, methods=["GET"]),
    Route("/metis/knowledge-bases/{name}/settings", update_settings, methods=["POST"]),
    Route("/metis/knowledge-bases/{name}/model-saves/{save_id}/undo", undo_save, methods=["POST"]),
    Route("/metis/knowledge-bases/{name}/drafts/{draft_id}/{choice:str}", decide_draft, methods=["POST"]),
    Route("/metis/knowledge-bases/{name}/delete", confirm_delete, methods=["GET"]),
    Route("/metis/knowledge-bases/{name}/delete", delete_base, methods=["POST"]),
    Route("/metis/knowledge-bases/{name}/{area:str}/{path:path}", show_note, methods=["GET"]),
]
