"""`astra eos tools DEPLOYMENT [knowledge BASE --search --save | --save-on-its-own]`."""

from __future__ import annotations

import click

from ...util import quoted
from ..output import json_option, print_json, wrapped
from ..state import State, pass_state
from . import eos

# Column widths of the listing, as the docs show it (a longer cell pushes the next by one space).
TOOL_WIDTH = 24
FUNCTION_WIDTH = 30


def tools_table(tools: list[dict]) -> str:
    rows = [("TOOL", "FUNCTION", "APPROVAL")]
    rows += [(t["name"], t["function"], t.get("approval") or "-") for t in tools]
    lines = []
    for name, function, approval in rows:
        lines.append(f"{name:<{TOOL_WIDTH - 1}} {function:<{FUNCTION_WIDTH - 1}} {approval}")
    return "\n".join(lines)


@eos.command("tools")
@click.argument("deployment")
@click.argument("what", required=False, type=click.Choice(["knowledge"]))
@click.argument("base", required=False)
@click.option("--search", is_flag=True, help="search_knowledge: the model searches the base when a question needs it.")
@click.option("--save", is_flag=True, help="save_to_knowledge, asking before saving: a draft the person saves or discards.")
@click.option("--save-on-its-own", "save_on_its_own", is_flag=True,
              help="save_to_knowledge, saving at once (listed on the base with Undo; at most 30 an hour).")
@json_option
@pass_state
def tools(state: State, deployment: str, what: str | None, base: str | None, search: bool, save: bool,
          save_on_its_own: bool, as_json: bool) -> None:
    """Show a chat deployment's tools, or give it a knowledge base's (no flags: the base's tools removed).

    \b
      astra eos tools chat
      astra eos tools chat knowledge handbook --search --save
      astra eos tools chat knowledge journal --save-on-its-own
      astra eos tools chat knowledge handbook          # the base's tools removed
    """
    if what is None:
        if search or save or save_on_its_own:
            raise click.UsageError("Name the base: astra eos tools DEPLOYMENT knowledge BASE --search/--save")
        data = state.client.get(f"/eos/deployments/{quoted(deployment)}/tools")
        if as_json:
            return print_json(data)
        click.echo(tools_table(data["tools"]))
        return
    if not base:
        raise click.UsageError("Name the base: astra eos tools DEPLOYMENT knowledge BASE")
    body = {"search": search, "save": save or save_on_its_own, "confirm": not save_on_its_own}
    data = state.client.put(f"/eos/deployments/{quoted(deployment)}/tools/knowledge/{quoted(base)}", json=body)
    if as_json:
        return print_json(data)
    mine = [t for t in data["tools"] if t["knowledge_base"] == base]
    if not mine:
        click.echo(f"{deployment}: no tools on {base} (removed)")
    for t in mine:
        if t["builtin"] == "search_knowledge":
            click.echo(f"{deployment}: {t['name']} searches {base}")
        elif t["confirm"]:
            click.echo(f"{deployment}: {t['name']} saves notes to {base}, asking before saving (a draft to save or discard)")
        else:
            click.echo(f"{deployment}: {t['name']} saves notes to {base} on its own, at once: each is listed on the base "
                       "with Undo (at most 30 an hour)")
    if data.get("warning") and any(t["builtin"] == "search_knowledge" for t in mine):
        click.echo(err=True)  # a paragraph of its own, apart from the lines above
        click.secho(wrapped(f"Note: {data['warning']}", indent="      "), fg="yellow", err=True)
