"""`astra metis export|import`: a base as a .tar.gz, and a memory's facts as markdown."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import click
import httpx

from ...util import quoted
from ..client import ApiError, Client, unreachable
from ..output import json_option, print_json
from ..state import State, pass_state
from . import metis
from .follow import follow, report


def _download(client: Client, path: str, target: Path) -> None:
    """The answer's body into `target`, as it comes (a server streams it; in process it arrives whole), through a
    hidden temporary file beside it: a download cut short leaves nothing under the name."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            try:
                with client.http.stream("GET", client._path(path)) as response:
                    if response.status_code >= 400:
                        response.read()
                        client._answer(response)
                    for chunk in response.iter_bytes():
                        f.write(chunk)
            except httpx.TransportError as e:
                raise unreachable(e) from None
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@metis.command("export")
@click.argument("base")
@click.option("-o", "--output", type=click.Path(path_type=Path),
              help="The file to write (default BASE.tar.gz); with --format markdown, the folder (default BASE).")
@click.option("--format", "fmt", type=click.Choice(["archive", "markdown"]), default="archive", show_default=True,
              help="archive: the whole base, to import anywhere; markdown: a memory's facts, a readable page per subject.")
@pass_state
def export(state: State, base: str, output: Path | None, fmt: str) -> None:
    """Export a base: its spec, notes, saved notes, uploads, facts with their history, and model saves.

    Not its index (an import builds it again) nor its source folders' files (their spec is kept).
    """
    url = f"/metis/knowledge-bases/{quoted(base)}/export?format={fmt}"
    if fmt == "archive":
        target = output or Path(f"{base}.tar.gz")
        if target.exists():
            raise click.UsageError(f"{target} exists already: choose another file with -o")
        _download(state.client, url, target)
        click.echo(f"exported {base} to {target} ({target.stat().st_size:,} bytes)")
        return
    from ...metis.exchange.markdown import unpack

    folder = output or Path(base)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise click.UsageError(f"{folder} exists and is not an empty folder: choose another with -o")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        packed = Path(tmp) / "facts.tar.gz"
        _download(state.client, url, packed)
        with open(packed, "rb") as f:
            written = unpack(f, folder)
    pages = [w for w in written if "/" not in w and w.endswith(".md") and w != "README.md"]
    click.echo(f"exported the facts of {base} to {folder}/: {len(pages)} subject page(s), README.md, and the facts' "
               f"notes in notes/memory/ (`astra metis import {folder} --as NAME` makes a memory of them)")


@metis.command("import")
@click.argument("source", type=click.Path(exists=True, path_type=Path))
@click.option("--as", "name", metavar="NAME", help="The new base's name (default: the one it was exported with).")
@click.option("--no-wait", is_flag=True, help="Do not wait for its index to be built (follow with `astra metis sync`).")
@json_option
@pass_state
def import_(state: State, source: Path, name: str | None, no_wait: bool, as_json: bool) -> None:
    """Import a base from a file of `astra metis export`, or a memory from a folder of facts notes.

    A folder is a memory's notes/memory/ (or a folder holding one, like `export --format markdown`'s): its facts'
    timelines are settled again. Its index is built from the files as they arrive.
    """
    url = "/metis/knowledge-bases/import" + (f"?name={quoted(name)}" if name else "")
    headers = {"content-type": "application/gzip"}
    with tempfile.TemporaryDirectory() as tmp:
        archive = source
        if source.is_dir():
            from ...metis.exchange.markdown import pack_facts

            archive = Path(tmp) / "facts.tar.gz"
            with open(archive, "wb") as f:
                for chunk in pack_facts(source, name):
                    f.write(chunk)
        with open(archive, "rb") as f:
            # A server gets the file as it is read; the app in process takes a body whole.
            body: Any = f if state.client.local is None else f.read()
            try:
                data = state.client.post(url, content=body, headers=headers)
            except ApiError as e:
                if e.code == "TOO_LARGE":
                    raise ApiError(e.status, e.code, f"{e.message} (an import is one request: raise max_body_bytes, "
                                   "ASTRALYX_MAX_BODY_BYTES or config.toml, where the API runs)") from None
                raise
    base = data["knowledge_base"]["metadata"]["name"]
    job = follow(state, base, "reindex", wait=not no_wait, quiet=as_json, started=data["index"])
    data["index"] = job
    if as_json:
        return print_json(data)
    _said(data, source)
    if job.get("state") in ("finished", "failed"):
        report(job, "indexed")


def _said(data: dict[str, Any], source: Path) -> None:
    got = data["imported"]
    kind = data["knowledge_base"]["spec"]["kind"]
    parts = [f"{got['notes']} note file(s)", f"{got['saved']} saved note(s)", f"{got['files']} upload(s)",
             f"{got['model_saves']} model save(s)"]
    if kind == "memory":
        parts.append(f"{got.get('facts', 0)} current fact(s) and {got.get('history', 0)} in the history, "
                     f"on {got.get('subjects', 0)} subject(s)")
    click.echo(f"imported {kind} base {data['knowledge_base']['metadata']['name']} from {source}: " + ", ".join(parts))
    for warning in data.get("warnings") or []:
        click.secho(f"  warning: {warning}", fg="yellow", err=True)
    for skipped in data.get("skipped") or []:
        click.secho(f"  left out: {skipped['file']}: {skipped['why']}", fg="yellow", err=True)
