"""`astra metis bases|create|delete`."""

from __future__ import annotations

import click

from ...util import quoted
from ..output import json_option, print_json, print_table
from ..state import State, pass_state
from . import metis


@metis.command("bases")
@json_option
@pass_state
def bases(state: State, as_json: bool) -> None:
    """List the knowledge bases of the workspace."""
    data = state.client.get("/metis/knowledge-bases")
    if as_json:
        return print_json(data)
    rows = [
        {
            "name": b["metadata"]["name"],
            "kind": b["spec"]["kind"],
            "embedding": (b["spec"].get("embedding") or {}).get("deployment"),
            "extractor": (b["spec"].get("extractor") or {}).get("deployment"),
            "sources": ", ".join(s["folder"] for s in b["spec"].get("sources", [])),
        }
        for b in data["knowledge_bases"]
    ]
    print_table(rows, ["name", "kind", "embedding", "extractor", "sources"])


@metis.command("create")
@click.argument("name")
@click.option("--kind", type=click.Choice(["documents", "memory"]), default="documents", show_default=True,
              help="documents (folders, uploads, notes) or memory (dated facts).")
@click.option("--embedding", help="Embedding deployment (without one the base searches by keywords).")
@click.option("--extractor", help="Chat deployment that reads conversations for facts (memory).")
@click.option("--source", "sources", multiple=True, help="A folder on the server's machine to sync (repeatable).")
@click.option("--mcp-saves-on-its-own", "mcp_own", is_flag=True,
              help="MCP clients' save_to_knowledge saves at once (a journal, a scratchpad) instead of asking first.")
@json_option
@pass_state
def create(
    state: State, name: str, kind: str, embedding: str | None, extractor: str | None, sources: tuple[str, ...],
    mcp_own: bool, as_json: bool,
) -> None:
    """Create a knowledge base (or a memory, with --kind memory)."""
    from ...metis.bases import new_base  # here, not at import: `astra --help` stays light

    request = new_base(name, kind, folders=sources, embedding=embedding, extractor=extractor,
                       mcp_save="on_its_own" if mcp_own else None)
    data = state.client.post("/metis/knowledge-bases", json=request)
    if as_json:
        return print_json(data)
    click.echo(f"created {data['spec']['kind']} base {data['metadata']['name']}")


@metis.command("delete")
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="Do not ask.")
@json_option
@pass_state
def delete(state: State, name: str, yes: bool, as_json: bool) -> None:
    """Delete a base with its folder: every document, note and fact."""
    if not yes:
        click.confirm(f"Delete {name} and everything in it (documents, notes, facts)?", abort=True)
    data = state.client.delete(f"/metis/knowledge-bases/{quoted(name)}")
    if as_json:
        return print_json(data)
    click.echo(f"deleted {name}")
