"""`astra workspaces …` and `astra keys …`."""

from __future__ import annotations

import click

from ..util import quoted
from .output import json_option, print_json, print_table
from .state import State, pass_state


@click.group()
def workspaces() -> None:
    """Workspaces: each has its own bases, deployments and keys."""


@workspaces.command("list")
@json_option
@pass_state
def workspaces_list(state: State, as_json: bool) -> None:
    """List the workspaces of this instance."""
    data = state.client.get("/workspaces")
    if as_json:
        return print_json(data)
    print_table(data["workspaces"], ["name", "created_at"], ["WORKSPACE", "CREATED"])


@workspaces.command("create")
@click.argument("name")
@json_option
@pass_state
def workspaces_create(state: State, name: str, as_json: bool) -> None:
    """Create a workspace (it gets its own embedded e5-small deployment)."""
    data = state.client.post("/workspaces", json={"name": name})
    if as_json:
        return print_json(data)
    click.echo(f"created workspace {data['name']}")


@click.group()
def keys() -> None:
    """API keys: each belongs to one workspace and has a role (caller, viewer, editor, admin)."""


@keys.command("create")
@click.option("--workspace", "key_workspace", help="Workspace of the key (default: your own).")
@click.option("--role", type=click.Choice(["caller", "viewer", "editor", "admin"]), required=True,
              help="What the key may do: caller (call deployments), viewer (+ read bases), editor (+ write), admin.")
@click.option("--name", default="", help="What the key is for.")
@json_option
@pass_state
def keys_create(state: State, key_workspace: str | None, role: str, name: str, as_json: bool) -> None:
    """Create a key; it is shown once."""
    body = {"role": role, "name": name, "workspace": key_workspace or None}
    data = state.client.post("/keys", json=body)
    if as_json:
        return print_json(data)
    click.echo(f"created key {data['id']} ({data['role']} of {data['workspace']}); shown once, keep it now:")
    click.echo(data["key"])


@keys.command("list")
@click.option("--workspace", "key_workspace", help="Workspace (default: your own).")
@json_option
@pass_state
def keys_list(state: State, key_workspace: str | None, as_json: bool) -> None:
    """List a workspace's API keys (never the keys themselves: only their ids, roles and names)."""
    params = {"workspace": key_workspace} if key_workspace else {}
    data = state.client.get("/keys", params=params)
    if as_json:
        return print_json(data)
    print_table(
        data["keys"],
        ["id", "workspace", "role", "name", "created_at", "last_used_at", "revoked_at"],
        ["ID", "WORKSPACE", "ROLE", "NAME", "CREATED", "LAST USED", "REVOKED"],
    )


@keys.command("revoke")
@click.argument("key_id")
@json_option
@pass_state
def keys_revoke(state: State, key_id: str, as_json: bool) -> None:
    """Revoke an API key: it is refused from the next request on."""
    data = state.client.delete(f"/keys/{quoted(key_id)}")
    if as_json:
        return print_json(data)
    click.echo(f"revoked {data['id']}")


COMMANDS = [workspaces, keys]
