"""`astra eos deployments`."""

from __future__ import annotations

import click

from ..output import json_option, print_json, print_table
from ..state import State, pass_state
from . import eos


@eos.command("deployments")
@click.option("--no-health", is_flag=True, help="Do not say whether each deployment answers.")
@click.option("--check", is_flag=True, help="Ask each upstream now (else: as last checked or called).")
@json_option
@pass_state
def deployments(state: State, no_health: bool, check: bool, as_json: bool) -> None:
    """List the workspace's deployments, and whether each answers (an upstream: as last checked or called,
    or asked now with --check)."""
    client = state.client
    # On the local data directory no server has checked or called an upstream before: ask them now.
    check = check or (client.local is not None and not no_health)
    params = {"health": "false" if no_health else "true", **({"check": "true"} if check else {})}
    data = client.get("/eos/deployments", params=params)
    if as_json:
        return print_json(data)
    rows = []
    for d in data["deployments"]:
        spec, runtime = d["spec"], d["spec"]["runtime"]
        resources = spec.get("resources") or {}
        status = d.get("status")
        rows.append({
            "name": d["metadata"]["name"],
            "kind": spec["kind"],
            "model": spec["model"],
            "runtime": runtime["type"] if runtime["type"] == "embedded" else f"upstream {runtime.get('url')}",
            "replicas": f"{resources.get('min', 1)}-{resources.get('max', 1)}" + (" cpu" if resources.get("cpu") else ""),
            "shared with": ", ".join(spec.get("shared_with") or []) or "-",
            "status": None if status is None else "scaled to zero" if status.get("scaled_to_zero")
            else ("unknown" if status["ok"] is None else "ok" if status["ok"] else "down") + f": {status['detail']}",
        })
    print_table(rows, ["name", "kind", "model", "runtime", "replicas", "shared with", "status"])


@eos.command("share")
@click.argument("deployment")
@click.option("--with", "workspace", required=True, help="The workspace whose keys may call it.")
@click.option("--stop", is_flag=True, help="Stop sharing with that workspace (at once).")
@json_option
@pass_state
def share(state: State, deployment: str, workspace: str, stop: bool, as_json: bool) -> None:
    """Share a deployment with another workspace, or stop.

    Its keys then call it as "model": "<this workspace>/<deployment>", and its built-in tools search and
    save to this workspace's bases for them: share it only if they may read those bases.
    """
    path = f"/eos/deployments/{deployment}/shared-with/{workspace}"
    data = state.client.delete(path) if stop else state.client.put(path)
    if as_json:
        return print_json(data)
    shared = data["spec"].get("shared_with") or []
    owner = data["metadata"]["workspace"]
    if stop:
        click.echo(f"{deployment}: no longer shared with {workspace}")
    else:
        click.echo(f"{deployment}: {workspace} may call it as {owner}/{deployment}")
    click.echo(f"shared with: {', '.join(shared) or 'no other workspace'}")
    for warning in data.get("warnings") or []:
        click.echo(warning)
