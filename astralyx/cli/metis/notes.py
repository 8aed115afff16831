"""`astra metis notes BASE` and `astra metis note BASE PATH [--edit|--write FILE|--delete]`."""

from __future__ import annotations

import click

from ...util import quoted
from ..output import json_option, print_json, print_table
from ..state import State, pass_state
from . import metis


def _url(base: str, path: str, area: str) -> str:
    return f"/metis/knowledge-bases/{quoted(base)}/{area}/{quoted(path, slashes=True)}"


@metis.command("notes")
@click.argument("base")
@click.option("--saved", is_flag=True, help="List the notes models saved instead.")
@json_option
@pass_state
def notes(state: State, base: str, saved: bool, as_json: bool) -> None:
    """List a base's notes."""
    data = state.client.get(f"/metis/knowledge-bases/{quoted(base)}/{'saved' if saved else 'notes'}")
    if as_json:
        return print_json(data)
    print_table(data["notes"], ["path", "title", "updated_at"], ["PATH", "TITLE", "UPDATED"])


@metis.command("note")
@click.argument("base")
@click.argument("path")
@click.option("--edit", is_flag=True, help="Open the note in $EDITOR and save it (created if new).")
@click.option("--write", "write_file", type=click.File("r"), help="Write the note from a file (- for stdin).")
@click.option("--delete", is_flag=True, help="Delete the note.")
@click.option("--saved", is_flag=True, help="A note a model saved (saved/) rather than notes/.")
@json_option
@pass_state
def note(
    state: State, base: str, path: str, edit: bool, write_file, delete: bool, saved: bool, as_json: bool
) -> None:
    """Print, edit, write or delete one note."""
    area = "saved" if saved else "notes"
    url = _url(base, path, area)
    md = {"content-type": "text/markdown"}
    if write_file is not None:
        data = state.client.put(url, content=write_file.read().encode(), headers=md)
        return print_json(data) if as_json else click.echo(f"wrote {path} ({data['version'][:12]})")
    if delete:
        data = state.client.delete(url)
        return print_json(data) if as_json else click.echo(f"deleted {path}")
    if edit:
        from ..client import ApiError

        try:
            current = state.client.get(url, headers={"accept": "text/markdown"})
            version = state.client.get(url)["version"]
        except ApiError as e:
            if e.code != "NOTE_NOT_FOUND":
                raise
            current, version = "", None
        edited = click.edit(current, extension=".md")
        if edited is None or edited == current:
            return click.echo("no change")
        headers = dict(md)
        headers["if-match" if version else "if-none-match"] = f'"{version}"' if version else "*"
        data = state.client.put(url, content=edited.encode(), headers=headers)
        return print_json(data) if as_json else click.echo(f"saved {path} ({data['version'][:12]})")
    if as_json:
        return print_json(state.client.get(url))
    click.echo(state.client.get(url, headers={"accept": "text/markdown"}), nl=False)
