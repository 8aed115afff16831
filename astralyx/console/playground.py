"""The Playground: chat with a chat deployment through the gateway, as the signed-in key.

The conversation lives in the browser; the page's script calls the JSON endpoints below, which
run the same gateway, saves and memory code as the API (/v1/chat/completions, …/drafts,
…/model-saves/<id>/undo, …/memory/extract, …/memory) with the cookie's actor.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterator
from typing import Any

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..eos.gateway import parse_chat
from ..errors import BadRequest
from ..metis.memory.facts import FactIn
from ..server.streams import guarded, sse
from .web import Ctx, api, page

log = logging.getLogger("astralyx.console")


def note_page(save: dict[str, Any]) -> str:
    """The console's page of a saved note (the API's link is for programs)."""
    return f"/metis/knowledge-bases/{save['knowledge_base']}/{save['note']}"


@page
async def playground(ctx: Ctx) -> Response:
    deployments = [d for d in await ctx.call(ctx.core.deployments.list, ctx.actor) if d.spec.kind == "chat"]
    memories = [b for b in await ctx.call(ctx.core.bases.list, ctx.actor) if b.kind == "memory"]
    chosen = ctx.request.query_params.get("deployment") or (deployments[0].name if deployments else "")
    return ctx.render("playground.html", deployments=deployments, memories=memories, chosen=chosen)


def _passages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The passages search_knowledge returned during this answer, by ref (a later search wins)."""
    found: dict[int, dict[str, Any]] = {}
    for message in messages:
        if message.get("role") != "tool":
            continue
        try:
            result = json.loads(message.get("content") or "")
        except (TypeError, ValueError):
            continue
        if isinstance(result, dict) and isinstance(result.get("results"), list):
            for r in result["results"]:
                if isinstance(r, dict) and isinstance(r.get("ref"), int):
                    found[r["ref"]] = {**r, "knowledge_base": result.get("knowledge_base")}
    return [found[k] for k in sorted(found)]


@api
async def chat(ctx: Ctx) -> Response:
    body = await ctx.json()
    if not isinstance(body, dict):
        raise BadRequest("Send {deployment, messages, conversation_title}", code="INVALID_REQUEST")
    messages = [
        {"role": m.get("role"), "content": m.get("content")}
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") in ("user", "assistant") and isinstance(m.get("content"), str)
    ]
    request = parse_chat({
        "model": body.get("deployment"),
        "messages": messages,
        "stream": True,
        "metadata": {"conversation_title": str(body.get("conversation_title") or "").strip()[:200] or None},
    })
    gateway = ctx.core.gateway
    turn = await ctx.call(gateway.prepare, ctx.actor, request)
    start = len(turn.messages)
    chunks = gateway.stream(turn)
    # The model's first event, before answering 200: a deployment that does not answer is an error shown as such.
    first = await ctx.call(next, chunks, None)

    def pieces() -> Iterator[dict[str, Any]]:
        for chunk in itertools.chain([first] if first is not None else [], chunks):
            for choice in chunk.get("choices") or []:
                content = (choice.get("delta") or {}).get("content")
                if content:
                    yield {"delta": content}
            if "astralyx" in chunk:
                report = chunk["astralyx"]
                for save in report.get("saves", []):
                    save["page"] = note_page(save)
                yield {"done": True, "astralyx": report, "passages": _passages(turn.messages[start:])}

    return sse(guarded(pieces(), "answer"))


@api
async def save_draft(ctx: Ctx) -> Response:
    base, draft_id = ctx.request.path_params["base"], ctx.request.path_params["draft_id"]
    body = await ctx.json() if await ctx.request.body() else {}
    body = body if isinstance(body, dict) else {}
    _, save = await ctx.call(ctx.core.saves.save_draft, ctx.actor, base, draft_id, body.get("title"), body.get("text"))
    out = save.to_dict()
    out["page"] = note_page(out)
    return JSONResponse(out)


@api
async def discard_draft(ctx: Ctx) -> Response:
    base, draft_id = ctx.request.path_params["base"], ctx.request.path_params["draft_id"]
    draft = await ctx.call(ctx.core.saves.discard_draft, ctx.actor, base, draft_id)
    return JSONResponse(draft.to_dict())


@api
async def undo_save(ctx: Ctx) -> Response:
    base, save_id = ctx.request.path_params["base"], ctx.request.path_params["save_id"]
    force = ctx.request.query_params.get("force") == "true"
    save = await ctx.call(ctx.core.saves.undo, ctx.actor, base, save_id, force=force)
    return JSONResponse(save.to_dict())


@api
async def extract(ctx: Ctx) -> Response:
    base = ctx.request.path_params["base"]
    body = await ctx.json()
    if not isinstance(body, dict):
        raise BadRequest("Send {messages, source}", code="INVALID_CONVERSATION")
    source = body.get("source") if isinstance(body.get("source"), str) else None
    result = await ctx.call(ctx.core.extractor.extract, ctx.actor, base, body.get("messages"), source=source)
    return JSONResponse(result.model_dump(mode="json"))


@api
async def keep(ctx: Ctx) -> Response:
    base = ctx.request.path_params["base"]
    body = await ctx.json()
    facts = body.get("facts") if isinstance(body, dict) else None
    fields = ("subject", "attribute", "fact", "source", "said_at")
    chosen: list[FactIn | dict[str, Any]] = [{k: f.get(k) for k in fields if f.get(k) is not None}
                                            for f in facts or [] if isinstance(f, dict)]
    result = await ctx.call(ctx.core.memory.keep, ctx.actor, base, chosen)
    return JSONResponse(result.model_dump(mode="json"))


routes = [
    Route("/playground", playground, methods=["GET"]),
    Route("/playground/api/chat", chat, methods=["POST"]),
    Route("/playground/api/drafts/{base}/{draft_id}/save", save_draft, methods=["POST"]),
    Route("/playground/api/drafts/{base}/{draft_id}/discard", discard_draft, methods=["POST"]),
    Route("/playground/api/saves/{base}/{save_id}/undo", undo_save, methods=["POST"]),
    Route("/playground/api/memory/{base}/extract", extract, methods=["POST"]),
    Route("/playground/api/memory/{base}/keep", keep, methods=["POST"]),
]
