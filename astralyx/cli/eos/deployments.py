"""`astra eos deployments`."""

from __future__ import annotations

from ..main import State, pass_state
from ..output import json_option, print_json, print_table
from . import eos


@eos.command("deployments")
@json_option
@pass_state
def deployments(state: State, as_json: bool) -> None:
    """List the workspace's deployments."""
    data = state.client.get("/eos/deployments")
    if as_json:
        return print_json(data)
    rows = [
        {
            "name": d["metadata"]["name"],
            "kind": d["spec"]["kind"],
            "model": d["spec"]["model"],
            "runtime": d["spec"]["runtime"]["type"],
        }
        for d in data["deployments"]
    ]
    print_table(rows, ["name", "kind", "model", "runtime"])
