"""`astra eos deployments`."""

from __future__ import annotations

import click

from ..main import State, pass_state
from ..output import json_option, print_json, print_table
from . import eos


@eos.command("deployments")
@click.option("--no-health", is_flag=True, help="Do not check whether each deployment answers.")
@json_option
@pass_state
def deployments(state: State, no_health: bool, as_json: bool) -> None:
    """List the workspace's deployments, and whether each answers."""
    data = state.client.get("/eos/deployments", params={"health": "false" if no_health else "true"})
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
            "status": None if status is None else ("ok" if status["ok"] else "down") + f": {status['detail']}",
        })
    print_table(rows, ["name", "kind", "model", "runtime", "replicas", "status"])
