"""`astra metis sync|upload|search|reindex|documents|files BASE …`: documents and search of a base."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.progress import Progress

from ...util import quoted
from ..output import json_option, print_json, print_table, progress
from ..state import State, pass_state
from . import metis
from .follow import follow, report


def _url(base: str, rest: str) -> str:
    return f"/metis/knowledge-bases/{quoted(base)}/{rest}"


def _progress() -> Progress:
    return progress("{task.completed}/{task.total}")


def _job(state: State, base: str, kind: str, verb: str, no_wait: bool, quiet: bool, as_json: bool) -> None:
    job = follow(state, base, kind, wait=not no_wait, quiet=quiet or as_json)
    if job.get("state") in ("queued", "running"):  # --no-wait
        if as_json:
            return print_json(job)
        click.echo(f"{kind} of {base} {'started' if job.get('started') else 'already running'} (job {job['id']}): "
                   f"`astra metis sync {base}` follows it")
        return None
    if as_json:
        if job.get("state") == "failed":
            report(job, verb)  # raises: exit 1
        return print_json(job.get("report"))
    report(job, verb)
    return None


@metis.command("sync")
@click.argument("base")
@click.option("--no-wait", is_flag=True, help="Start the sync (or see it running) and return; it goes on on the server.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@json_option
@pass_state
def sync(state: State, base: str, no_wait: bool, quiet: bool, as_json: bool) -> None:
    """Index new and changed documents of BASE (its sources, uploads and notes); drop removed ones.

    Follows the base's sync job (joins one already running) with a bar by passages, rate and ETA;
    exits 0 once it has finished, 1 if it failed."""
    _job(state, base, "sync", "synced", no_wait, quiet, as_json)


@metis.command("reindex")
@click.argument("base")
@click.option("--no-wait", is_flag=True, help="Start the reindex and return; it goes on on the server.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@json_option
@pass_state
def reindex(state: State, base: str, no_wait: bool, quiet: bool, as_json: bool) -> None:
    """Build BASE's index again from its files, aside, then swap it in (followed like a sync)."""
    _job(state, base, "reindex", "reindexed", no_wait, quiet, as_json)


@metis.command("upload")
@click.argument("base")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@json_option
@pass_state
def upload(state: State, base: str, files: tuple[Path, ...], quiet: bool, as_json: bool) -> None:
    """Upload FILES (Markdown, text, HTML, PDF) into BASE; each is indexed as it arrives."""
    uploaded = []
    with _progress() as bar:
        task = bar.add_task("uploading", total=len(files), document="", visible=not (quiet or as_json))
        for path in files:
            bar.update(task, document=path.name)
            with path.open("rb") as f:
                data = state.client.post(_url(base, "files"), files=[("file", (path.name, f))])
            uploaded += data["uploaded"]
            bar.advance(task)
    if as_json:
        return print_json({"knowledge_base": base, "uploaded": uploaded})
    for item in uploaded:
        click.echo(f"{'replaced' if item['replaced'] else 'uploaded'} {item['document']}  "
                   f"({item['title']}, {item['chunks']} passage(s))")


@metis.command("files")
@click.argument("base")
@click.option("--delete", "delete_name", metavar="NAME", help="Delete this uploaded file (and its passages).")
@json_option
@pass_state
def files(state: State, base: str, delete_name: str | None, as_json: bool) -> None:
    """List the files uploaded to BASE (or delete one)."""
    if delete_name:
        data = state.client.delete(_url(base, f"files/{quoted(delete_name)}"))
        return print_json(data) if as_json else click.echo(f"deleted {delete_name}")
    data = state.client.get(_url(base, "files"))
    if as_json:
        return print_json(data)
    print_table(data["files"], ["name", "size", "updated_at"], ["NAME", "BYTES", "UPDATED"])


@metis.command("documents")
@click.argument("base")
@json_option
@pass_state
def documents(state: State, base: str, as_json: bool) -> None:
    """List what BASE's index holds: documents, notes and facts, with their passages."""
    data = state.client.get(_url(base, "documents"))
    if as_json:
        return print_json(data)
    print_table(data["documents"], ["document", "title", "chunks", "indexed_at"], ["DOCUMENT", "TITLE", "PASSAGES", "INDEXED"])


@metis.command("search")
@click.argument("base")
@click.argument("query")
@click.option("--max-results", "-n", default=8, show_default=True, type=click.IntRange(1, 8), help="At most this many passages.")
@click.option("--as-of", help="Facts as they held on this date (memories), e.g. 2026-09-30.")
@json_option
@pass_state
def search(state: State, base: str, query: str, max_results: int, as_of: str | None, as_json: bool) -> None:
    """Search BASE: numbered passages with their document and where they are."""
    body: dict[str, Any] = {"query": query, "max_results": max_results}
    if as_of:
        body["as_of"] = as_of
    data = state.client.post(_url(base, "search"), json=body)
    if as_json:
        return print_json(data)
    if not data["results"]:
        return click.echo(f"nothing found in {data['knowledge_base']} ({data['mode']})")
    for r in data["results"]:
        click.secho(f"[{r['ref']}] {r['document']}", bold=True, nl=False)
        click.secho(f"  {r['where']}" if r["where"] else "", fg="cyan")
        for line in r["text"].splitlines():
            click.echo(f"    {line}")
        if r.get("also_in"):
            n = r["also_in"]
            click.secho(f"    (the same passage is in {n} other document{'s' if n != 1 else ''})", dim=True)
        click.echo()
    click.secho(f"{len(data['results'])} passage(s), {data['mode']} search", dim=True)
