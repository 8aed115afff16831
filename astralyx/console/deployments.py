"""Eos ▸ Deployments: the list (with health when the runtimes can tell), a deployment, its Tools tab."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError
from starlette.datastructures import FormData
from starlette.responses import Response
from starlette.routing import Route

from ..eos import tools as tools_mod
from ..eos.deploy import DeployRequest
from ..eos.deploy import deploy as deploy_model
from ..eos.deployments import Deployment, Health
from ..errors import AstralyxError, describe
from .web import Ctx, page


def health_of(ctx: Ctx, dep: Deployment, *, check: bool = True) -> Health:
    """The deployment's health from the runtimes (`check`: an upstream is asked; without, its last check or call
    is shown)."""
    try:
        return ctx.core.runtimes.health(dep.workspace, dep.name, check=check)
    except Exception as e:  # a health probe must never break the page
        return Health(ok=False, detail=str(e))


@page
async def list_deployments(ctx: Ctx) -> Response:
    deployments = await ctx.call(ctx.core.deployments.list, ctx.actor)

    def check_all() -> list[dict[str, Deployment | Health]]:
        # A list calls no upstream: each shows its last check or call (its own page asks it).
        return [{"dep": d, "health": health_of(ctx, d, check=False)} for d in deployments]

    rows = await ctx.call(check_all)
    return ctx.render("eos/list.html", rows=rows)


@page
async def show_deployment(ctx: Ctx) -> Response:
    dep = await ctx.call(ctx.core.deployments.get, ctx.actor, ctx.request.path_params["name"])
    health = await ctx.call(health_of, ctx, dep)
    return ctx.render("eos/show.html", dep=dep, health=health, tab="overview")


@page
async def set_sharing(ctx: Ctx) -> Response:
    name = ctx.request.path_params["name"]
    form = await ctx.form()
    workspace = str(form.get("workspace") or "").strip()
    if not workspace:
        raise AstralyxError("Name the workspace to share with", code="INVALID_SPEC")
    stop = form.get("stop") is not None
    dep = await ctx.call(ctx.core.deployments.share, ctx.actor, name, workspace, stop=stop)
    message = (f"{name} is no longer shared with {workspace}" if stop
               else f"Shared {name} with {workspace}: its keys call it as {dep.workspace}/{name}")
    return ctx.redirect(f"/eos/deployments/{name}#sharing", message)


routes = [
    Route("/eos/deployments", list_deployments, methods=["GET"]),
    Route("/eos/deployments/{name}", show_deployment, methods=["GET"]),
    Route("/eos/deployments/{name}/sharing", set_sharing, methods=["POST"]),
]


def knowledge_rows(dep: Deployment) -> list[dict[str, Any]]:
    """One row per base the deployment's tools use: search? save? how it saves?"""
    rows: dict[str, dict[str, Any]] = {}
    for tool in tools_mod.builtin_tools(dep.spec.tools):
        row = rows.setdefault(tool.knowledge_base, {"base": tool.knowledge_base, "search": False, "save": False,
                                                    "confirm": True})
        if tool.builtin == tools_mod.SEARCH:
            row["search"] = True
        else:
            row["save"], row["confirm"] = True, tool.confirm
    return list(rows.values())


@page
async def tools_tab(ctx: Ctx) -> Response:
    dep = await ctx.call(ctx.core.deployments.get, ctx.actor, ctx.request.path_params["name"])
    listing = tools_mod.listing(dep)
    rows = knowledge_rows(dep)
    given = {r["base"] for r in rows}
    bases = [b.name for b in await ctx.call(ctx.core.bases.list, ctx.actor) if b.name not in given]
    return ctx.render("eos/tools.html", dep=dep, tab="tools", listing=listing, rows=rows, bases=bases)


@page
async def set_tools(ctx: Ctx) -> Response:
    name = ctx.request.path_params["name"]
    form = await ctx.form()
    base = str(form.get("base") or "").strip()
    if not base:
        raise AstralyxError("Choose a knowledge base", code="INVALID_TOOLS")
    remove = form.get("remove") is not None
    search = not remove and form.get("search") == "on"
    save = not remove and form.get("save") == "on"
    confirm = form.get("approval") != "own"
    choice = form.get("choice")  # from the warning page: the person has read it
    if choice in ("own", "ask"):
        confirm = choice == "ask"
    dep = await ctx.call(ctx.core.deployments.get, ctx.actor, name)
    before = {r["base"]: r for r in knowledge_rows(dep)}.get(base)
    newly_on_its_own = save and not confirm and not (before and before["save"] and not before["confirm"])
    if newly_on_its_own and choice != "own":
        # The console warns before a deployment saves on its own (the doc's "Why saving on its own is a choice").
        return ctx.render("eos/confirm_own.html", dep=dep, tab="tools", base=base, search=search)
    await ctx.call(tools_mod.set_knowledge, ctx.actor, ctx.core.deployments, name, base,
                   search=search, save=save, confirm=confirm)
    if not (search or save):
        message = f"Removed {base}'s tools from {name}"
    else:
        parts = (["Search"] if search else []) + ([f"Save notes ({'ask before saving' if confirm else 'save on its own'})"]
                                                   if save else [])
        message = f"{name} now has {base}: " + ", ".join(parts)
        if search:
            message += f". Anyone who may call {name} can search {base} through it."
    return ctx.redirect(f"/eos/deployments/{name}/tools", message)


routes += [
    Route("/eos/deployments/{name}/tools", tools_tab, methods=["GET"]),
    Route("/eos/deployments/{name}/tools", set_tools, methods=["POST"]),
]


@page
async def library(ctx: Ctx) -> Response:
    models = await ctx.call(ctx.core.models.list, ctx.actor)
    families = ctx.core.models.families()
    return ctx.render("eos/models.html", models=[m for m in models if not m.family], families=families,
                      members={f.name: [m for m in models if m.family == f.name] for f in families})


@page
async def family_page(ctx: Ctx) -> Response:
    family = await ctx.call(ctx.core.models.family, ctx.actor, ctx.request.path_params["family"])
    chosen = ctx.request.query_params.get("size") or family.default_size
    return ctx.render("eos/family.html", family=family, chosen=chosen)


@page
async def new_deployment(ctx: Ctx) -> Response:
    models = await ctx.call(ctx.core.models.list, ctx.actor)
    chosen = ctx.request.query_params.get("model", "")
    entry = next((m for m in models if m.name == chosen or chosen in m.aliases), None)
    return ctx.render("eos/new.html", models=models, entry=entry, chosen=chosen)


def _form_request(form: FormData, model: str) -> DeployRequest:
    """The form's choices as the domain's deploy request: Runs on, replicas, Scale to zero when idle."""
    try:
        low, high = int(str(form.get("min") or 1)), int(str(form.get("max") or 1))
    except ValueError:
        raise AstralyxError("Replicas are whole numbers", code="INVALID_SPEC") from None
    if form.get("scale_to_zero") == "on":
        low = 0
    url = str(form.get("url") or "").strip()
    if form.get("runs") == "upstream" and not url:
        raise AstralyxError("Give the server's URL, e.g. http://127.0.0.1:11434/v1 for Ollama", code="INVALID_SPEC")
    fields: dict[str, Any] = {k: str(form.get(k) or "").strip() or None for k in ("name", "upstream_model", "api_key_env")}
    try:
        return DeployRequest.model_validate({"model": model, "kind": str(form.get("kind") or "").strip() or None,
                                             "cpu": form.get("runs_on") != "any", "min": low, "max": high,
                                             "url": url or None, **fields})
    except ValidationError as e:
        raise AstralyxError(describe(e, "deployment"), code="INVALID_SPEC") from None


async def _deploy(ctx: Ctx, request: DeployRequest) -> Response:
    dep = await ctx.call(deploy_model, ctx.actor, ctx.core.deployments, ctx.core.models, request)
    message = f"Deployed {dep.name}: {dep.spec.model} ({dep.spec.kind})"
    if dep.spec.scales_to_zero:
        message += "; it scales to zero when idle"
    if dep.spec.kind == "chat":
        message += ". Its Tools tab gives it knowledge bases to search and save to"
    return ctx.redirect(f"/eos/deployments/{dep.name}", message)


@page
async def deploy(ctx: Ctx) -> Response:
    """The deploy form of a model: the domain's deploy (eos/deploy.py) checks it (model, kind, runtime)."""
    form = await ctx.form()
    model = str(form.get("model") or "").strip()
    if not model:
        raise AstralyxError("Choose a model of the library, or name the upstream's model", code="INVALID_SPEC")
    return await _deploy(ctx, _form_request(form, model))


@page
async def deploy_family(ctx: Ctx) -> Response:
    """A family's page: a size and its quantisation (the size's default unless chosen), then the same deploy."""
    form = await ctx.form()
    family = ctx.request.path_params["family"]
    size = str(form.get("size") or "").strip()
    if not size:
        raise AstralyxError("Choose a size", code="INVALID_SPEC")
    quantisation = str(form.get("quantisation") or "").strip() or None
    model = await ctx.call(ctx.core.models.pick, family, size, quantisation)
    return await _deploy(ctx, _form_request(form, model.name))


@page
async def confirm_undeploy(ctx: Ctx) -> Response:
    dep = await ctx.call(ctx.core.deployments.get, ctx.actor, ctx.request.path_params["name"])
    users = [b.name for b in await ctx.call(ctx.core.bases.list, ctx.actor)
             if (b.spec.embedding and b.spec.embedding.deployment == dep.name)
             or (b.spec.extractor and b.spec.extractor.deployment == dep.name)]
    return ctx.render("eos/undeploy.html", dep=dep, tab="overview", users=users)


@page
async def undeploy(ctx: Ctx) -> Response:
    name = ctx.request.path_params["name"]
    await ctx.call(ctx.core.deployments.delete, ctx.actor, name)
    return ctx.redirect("/eos/deployments", f"Undeployed {name}")


routes[0:0] = [
    Route("/eos/models", library, methods=["GET"]),
    Route("/eos/models/{family}", family_page, methods=["GET"]),
    Route("/eos/models/{family}/deploy", deploy_family, methods=["POST"]),
    Route("/eos/deployments/new", new_deployment, methods=["GET"]),
    Route("/eos/deployments", deploy, methods=["POST"]),
]
routes += [
    Route("/eos/deployments/{name}/undeploy", confirm_undeploy, methods=["GET"]),
    Route("/eos/deployments/{name}/undeploy", undeploy, methods=["POST"]),
]
