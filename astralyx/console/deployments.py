"""Eos ▸ Deployments: the list (with health when the runtimes can tell), a deployment, its Tools tab."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response
from starlette.routing import Route

from .web import Ctx, page


def health_of(ctx: Ctx, dep) -> dict[str, Any] | None:
    """The deployment's health from the runtimes service, when this build has one."""
    runtimes = getattr(ctx.core, "runtimes", None)
    if runtimes is None or not hasattr(runtimes, "health"):
        return None
    try:
        return runtimes.health(dep)
    except Exception as e:  # a health probe must never break the page
        return {"ok": False, "detail": str(e)}


@page
async def list_deployments(ctx: Ctx) -> Response:
    deployments = await ctx.call(ctx.core.deployments.list, ctx.actor)
    rows = [{"dep": d, "health": await ctx.call(health_of, ctx, d)} for d in deployments]
    return ctx.render("eos/list.html", rows=rows)


@page
async def show_deployment(ctx: Ctx) -> Response:
    dep = await ctx.call(ctx.core.deployments.get, ctx.actor, ctx.request.path_params["name"])
    health = await ctx.call(health_of, ctx, dep)
    return ctx.render("eos/show.html", dep=dep, health=health, tab="overview")


routes = [
    Route("/eos/deployments", list_deployments, methods=["GET"]),
    Route("/eos/deployments/{name}", show_deployment, methods=["GET"]),
]
