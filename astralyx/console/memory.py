"""Metis ▸ Memory: memories, their facts by subject, history, Add a fact, Edit, Forget, Import conversations."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import Route

from ..auth.roles import WRITE_CONTENT
from ..metis.bases import parse_request
from ..metis.memory.facts import FactIn
from ..metis.memory.imports import ImportRemoved
from ..metis.memory.service import FactListing
from .bases import base_request, deployment_choices
from .web import Ctx, page


def older_counts(listing: FactListing) -> dict[str, int]:
    """For each fact shown, how many older facts of its subject and attribute it replaced."""
    counts: dict[str, int] = {}
    for group in listing.subjects:
        for item in group.facts:
            replaced = item.replaced or []
            counts[item.id] = len(replaced)
            for i, old in enumerate(replaced):  # newest first
                counts[old.id] = len(replaced) - i - 1
    return counts


@page
async def list_memories(ctx: Ctx) -> Response:
    bases = [b for b in await ctx.call(ctx.core.bases.list, ctx.actor) if b.kind == "memory"]
    choices = await ctx.call(deployment_choices, ctx)
    return ctx.render("memory/list.html", memories=bases, choices=choices)


@page
async def create_memory(ctx: Ctx) -> Response:
    form = await ctx.form()
    base = await ctx.call(ctx.core.bases.create, ctx.actor, parse_request(base_request(form, "memory")))
    return ctx.redirect(f"/metis/memory/{base.name}", f"Created memory {base.name}")


@page
async def show_memory(ctx: Ctx) -> Response:
    name = ctx.request.path_params["name"]
    history = ctx.request.query_params.get("history") in ("1", "true", "on")
    base = await ctx.call(ctx.core.bases.get, ctx.actor, name)
    listing = await ctx.call(ctx.core.memory.list, ctx.actor, name, history=history)
    imports = None
    if ctx.actor.can(WRITE_CONTENT) and base.spec.extractor is not None:
        imports = (await ctx.call(ctx.core.imports.listing, ctx.actor, name)).imports
    return ctx.render("memory/show.html", base=base, listing=listing, history=history, imports=imports)


@page
async def add_fact(ctx: Ctx) -> Response:
    name = ctx.request.path_params["name"]
    form = await ctx.form()
    fact = {k: str(form.get(k) or "").strip() for k in ("subject", "attribute", "fact", "source", "said_at")}
    fact["source"] = fact["source"] or "by hand"
    result = await ctx.call(ctx.core.memory.keep, ctx.actor, name, [fact])
    entry = result.facts[0]
    if entry.change == "confirms":
        message = f"Already known: kept once, said again {entry.said_at[:10]} recorded"
    elif entry.status == "known":
        message = "Already known: nothing kept twice"
    elif entry.splits is not None:
        message = f"Kept in the history, between two sayings of “{entry.splits.fact}”: now two facts"
    elif entry.status == "history":
        message = "Kept in the history: a fact said later holds now"
    elif result.replaced and entry.replaces is not None:
        message = f"Kept; it replaced “{entry.replaces.fact}”"
    else:
        message = "Kept 1 fact"
    return ctx.redirect(f"/metis/memory/{name}", message)


@page
async def edit_form(ctx: Ctx) -> Response:
    name, fact_id = ctx.request.path_params["name"], ctx.request.path_params["fact_id"]
    fact = await ctx.call(ctx.core.memory.get, ctx.actor, name, fact_id)
    return ctx.render("memory/edit.html", base_name=name, fact=fact)


@page
async def edit_fact(ctx: Ctx) -> Response:
    name, fact_id = ctx.request.path_params["name"], ctx.request.path_params["fact_id"]
    form = await ctx.form()
    said_at = str(form.get("said_at") or "").strip() or None
    source = str(form.get("source") or "").strip() or None
    await ctx.call(ctx.core.memory.edit, ctx.actor, name, fact_id, str(form.get("fact") or ""), said_at=said_at, source=source)
    return ctx.redirect(f"/metis/memory/{name}", "Corrected; its history is kept")


@page
async def forget_form(ctx: Ctx) -> Response:
    name, fact_id = ctx.request.path_params["name"], ctx.request.path_params["fact_id"]
    memory = ctx.core.memory
    fact = await ctx.call(memory.get, ctx.actor, name, fact_id)
    listing = await ctx.call(memory.list, ctx.actor, name, history=True)
    older = older_counts(listing).get(fact_id, 0)
    return ctx.render("memory/forget.html", base_name=name, fact=fact, older=older)


@page
async def forget_fact(ctx: Ctx) -> Response:
    name, fact_id = ctx.request.path_params["name"], ctx.request.path_params["fact_id"]
    form = await ctx.form()
    history = form.get("history") == "true"
    result = await ctx.call(ctx.core.memory.forget, ctx.actor, name, fact_id, history=history)
    n = result.history_forgotten
    message = "Forgot the fact"
    if n:
        message += f" and the {n} older fact{'s' if n != 1 else ''} it replaced"
    if result.current is not None:
        message += f"; “{result.current.fact}” holds again"
    if result.rejoined is not None:
        joined = result.rejoined
        message += f"; “{joined.fact}”, said before and after it, is one fact again (since {joined.said_at[:10]})"
    return ctx.redirect(f"/metis/memory/{name}" + ("?history=1" if history else ""), message)


# -- Import conversations (a ChatGPT or Claude export) -----------------------------------------------
KEEP_BATCH = 500  # facts kept at once (the memory's limit)


@page
async def upload_archive(ctx: Ctx) -> Response:
    name = ctx.request.path_params["name"]
    filename, data = await ctx.upload(
        "archive", "Choose the export to import: the zip ChatGPT or Claude sent, or its conversations.json")
    job, _ = await ctx.call(ctx.core.imports.create, ctx.actor, name, data, filename)
    return ctx.redirect(f"/metis/memory/{name}/imports/{job.id}")


@page
async def show_import(ctx: Ctx) -> Response:
    name, job_id = ctx.request.path_params["name"], ctx.request.path_params["job"]
    job = await ctx.call(ctx.core.imports.get, ctx.actor, name, job_id)
    return ctx.render("memory/import.html", base_name=name, job=job)


@page
async def start_import(ctx: Ctx) -> Response:
    name, job_id = ctx.request.path_params["name"], ctx.request.path_params["job"]
    form = await ctx.form()
    ids = [str(v) for v in form.getlist("conversation")]
    job = await ctx.call(ctx.core.imports.get, ctx.actor, name, job_id)
    if job.state == "ready":
        await ctx.call(ctx.core.imports.start, ctx.actor, name, job_id, ids=ids or None)
    else:  # stopped: continued as it was chosen
        await ctx.call(ctx.core.imports.start, ctx.actor, name, job_id)
    return ctx.redirect(f"/metis/memory/{name}/imports/{job_id}")


@page
async def cancel_import(ctx: Ctx) -> Response:
    name, job_id = ctx.request.path_params["name"], ctx.request.path_params["job"]
    result = await ctx.call(ctx.core.imports.cancel, ctx.actor, name, job_id)
    if isinstance(result, ImportRemoved):
        return ctx.redirect(f"/metis/memory/{name}", "Import removed: its proposals are gone")
    return ctx.redirect(f"/metis/memory/{name}", "Import cancelled: its conversations are gone, nothing was kept")


@page
async def keep_import(ctx: Ctx) -> Response:
    """Keep the ticked proposals: the memory's keep (as POST …/memory), in batches it takes."""
    name, job_id = ctx.request.path_params["name"], ctx.request.path_params["job"]
    form = await ctx.form()
    ticked = {str(v) for v in form.getlist("proposal")}
    job = await ctx.call(ctx.core.imports.get, ctx.actor, name, job_id)
    proposals = [p for g in job.review.subjects for a in g.attributes for p in a.proposals] if job.review else []
    chosen: list[FactIn | dict[str, Any]] = [{"subject": p.subject, "attribute": p.attribute, "fact": p.fact,
                                              "source": p.source, "said_at": p.said_at} for p in proposals if p.id in ticked]
    if not chosen:
        return ctx.redirect(f"/metis/memory/{name}/imports/{job_id}", "Nothing ticked: nothing kept")
    kept = replaced = 0
    for i in range(0, len(chosen), KEEP_BATCH):
        result = await ctx.call(ctx.core.memory.keep, ctx.actor, name, chosen[i : i + KEEP_BATCH])
        kept, replaced = kept + result.kept, replaced + result.replaced
    message = f"Kept {kept} fact{'s' if kept != 1 else ''}"
    if replaced:
        message += f"; {replaced} replaced an older fact"
    return ctx.redirect(f"/metis/memory/{name}", message)


routes = [
    Route("/metis/memory", list_memories, methods=["GET"]),
    Route("/metis/memory", create_memory, methods=["POST"]),
    Route("/metis/memory/{name}", show_memory, methods=["GET"]),
    Route("/metis/memory/{name}/facts", add_fact, methods=["POST"]),
    Route("/metis/memory/{name}/facts/{fact_id}/edit", edit_form, methods=["GET"]),
    Route("/metis/memory/{name}/facts/{fact_id}/edit", edit_fact, methods=["POST"]),
    Route("/metis/memory/{name}/facts/{fact_id}/forget", forget_form, methods=["GET"]),
    Route("/metis/memory/{name}/facts/{fact_id}/forget", forget_fact, methods=["POST"]),
    Route("/metis/memory/{name}/imports", upload_archive, methods=["POST"]),
    Route("/metis/memory/{name}/imports/{job}", show_import, methods=["GET"]),
    Route("/metis/memory/{name}/imports/{job}/start", start_import, methods=["POST"]),
    Route("/metis/memory/{name}/imports/{job}/cancel", cancel_import, methods=["POST"]),
    Route("/metis/memory/{name}/imports/{job}/keep", keep_import, methods=["POST"]),
]
