"""`astra eos receipts verify FILE` and `astra eos receipts show ID`."""

from __future__ import annotations

import json
import sys

import click

from ...util import quoted
from ..output import json_option, print_json
from ..state import State, pass_state
from . import eos


@eos.group("receipts")
def receipts() -> None:
    """Signed receipts of the tool calls models made through the gateway."""


@receipts.command("show")
@click.argument("receipt_id")
@pass_state
def show(state: State, receipt_id: str) -> None:
    """Print a receipt (save it to a file to verify it later)."""
    print_json(state.client.get(f"/eos/receipts/{quoted(receipt_id)}"))


@receipts.command("public-key")
@pass_state
def public_key(state: State) -> None:
    """The gateway's public key, to verify receipts with."""
    print_json(state.client.get("/eos/receipts/public-key"))


@receipts.command("verify")
@click.argument("file", type=click.File("r"))
@json_option
@pass_state
def verify(state: State, file, as_json: bool) -> None:
    """Check a receipt (JSON, as GET /v1/eos/receipts/<id> gives it): valid, or exactly why not (exit 1)."""
    try:
        document = json.load(file)
    except ValueError as e:
        if as_json:
            print_json({"valid": False, "reason": f"{file.name} is not JSON ({e})"})
        else:
            click.secho(f"invalid: {file.name} is not JSON ({e})", fg="red")
        sys.exit(1)
    verdict = state.client.post("/eos/receipts/verify", json=document)
    if as_json:
        print_json(verdict)
        sys.exit(0 if verdict["valid"] else 1)
    if verdict["valid"]:
        record = document.get("receipt", {})
        click.secho(f"valid: {record.get('id')} signed by {verdict.get('key_id')}", fg="green")
        click.echo(f"  {record.get('deployment')} called {record.get('tool')} ({record.get('function')}: "
                   f"{record.get('knowledge_base')}) at {record.get('time')}, conversation {record.get('conversation')!r}")
        return
    click.secho(f"invalid: {verdict['reason']}", fg="red")
    sys.exit(1)
