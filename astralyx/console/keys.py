"""API keys of the workspace: list, create (shown once), revoke. Needs keys:manage (admins)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from .web import Ctx, page


@page
async def list_keys(ctx: Ctx) -> Response:
    keys = await ctx.call(ctx.core.keys.list, ctx.actor)
    return ctx.render("keys.html", keys=keys, new_key=None)


@page
async def create_key(ctx: Ctx) -> Response:
    form = await ctx.form()
    key, token = await ctx.call(ctx.core.keys.create, ctx.actor, ctx.actor.workspace, str(form.get("role") or ""),
                                str(form.get("name") or "").strip())
    keys = await ctx.call(ctx.core.keys.list, ctx.actor)
    # Rendered, not redirected: the key is shown this once and kept nowhere but in its hash.
    response = ctx.render("keys.html", status=201, keys=keys, new_key={"key": key, "token": token})
    response.headers["Cache-Control"] = "no-store"
    return response


@page
async def revoke_key(ctx: Ctx) -> Response:
    key = await ctx.call(ctx.core.keys.revoke, ctx.actor, ctx.request.path_params["key_id"])
    return ctx.redirect("/keys", f"Revoked {key.name or key.id}: it no longer works")


routes = [
    Route("/keys", list_keys, methods=["GET"]),
    Route("/keys", create_key, methods=["POST"]),
    Route("/keys/{key_id}/revoke", revoke_key, methods=["POST"]),
]
