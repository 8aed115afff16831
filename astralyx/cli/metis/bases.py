"""`astra metis bases|create|update|delete`."""

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
            "sources": ", ".join(_folder(s) for s in b["spec"].get("sources", [])),
        }
        for b in data["knowledge_bases"]
    ]
    print_table(rows, ["name", "kind", "embedding", "extractor", "sources"])


@metis.command("create")
@click.argument("name")
@click.option("--kind", type=click.Choice(["documents", "memory"]), default="documents", show_default=True,
              help="documents (folders, uploads, notes) or memory (dated facts).")
@click.option("--embedding", metavar="DEPLOYMENT",
              help="Embedding deployment (default: the workspace's, e5-small, when it is ready).")
@click.option("--no-embedding", is_flag=True, help="No embedding: the base searches by keywords only.")
@click.option("--extractor", help="Chat deployment that reads conversations for facts (memory).")
@click.option("--source", "sources", multiple=True, help="A folder on the server's machine to sync (repeatable).")
@click.option("--include", multiple=True, metavar="GLOB",
              help="Index only the files of the folders that match (repeatable): '*.md', 'guide/**'.")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Leave out files or folders that match (repeatable): 'drafts/**', 'print.html'. Hidden files, "
                   "version control, node_modules, build output, licence files and backups are left out anyway.")
@click.option("--mcp-saves-on-its-own", "mcp_own", is_flag=True,
              help="MCP clients' save_to_knowledge saves at once (a journal, a scratchpad) instead of asking first.")
@json_option
@pass_state
def create(
    state: State, name: str, kind: str, embedding: str | None, no_embedding: bool, extractor: str | None,
    sources: tuple[str, ...], include: tuple[str, ...], exclude: tuple[str, ...], mcp_own: bool, as_json: bool,
) -> None:
    """Create a knowledge base (or a memory, with --kind memory).

    It embeds with the workspace's embedding deployment (e5-small) unless --embedding names another
    or --no-embedding asks for keywords only; it says which.
    """
    from ...metis.bases import new_base  # here, not at import: `astra --help` stays light

    if (include or exclude) and not sources:
        raise click.UsageError("--include and --exclude choose files of the --source folders: name a --source")
    if embedding and no_embedding:
        raise click.UsageError("--no-embedding and --embedding say opposite things: give one")
    request = new_base(name, kind, folders=sources, include=include, exclude=exclude, embedding=embedding,
                       extractor=extractor, mcp_save="on_its_own" if mcp_own else None, no_embedding=no_embedding)
    data = state.client.post("/metis/knowledge-bases", json=request)
    if as_json:
        return print_json(data)
    click.echo(f"created {data['spec']['kind']} base {data['metadata']['name']}")
    click.echo(f"embedding: {_chosen(data)}")


def _chosen(data: dict) -> str:
    """The embedding a create answer says was chosen, as `astra metis create` says it."""
    choice = data.get("embedding_choice") or {}
    deployment = (data["spec"].get("embedding") or {}).get("deployment")
    if choice.get("chosen") != "default":
        return deployment or "none (keywords only)"
    if deployment:
        return f"{deployment} (the workspace's default; --no-embedding for keywords only)"
    return f"none, {choice.get('message', 'the base searches by keywords')}"


def _folder(source: dict) -> str:
    """A source as people read it: /srv/docs (include *.md; exclude drafts/**)."""
    patterns = "; ".join(f"{k} {', '.join(source[k])}" for k in ("include", "exclude") if source.get(k))
    return source["folder"] + (f" ({patterns})" if patterns else "")


def _describe(spec: dict) -> str:
    parts = [f"embedding {(spec.get('embedding') or {}).get('deployment') or 'none (keywords)'}"]
    if spec.get("extractor"):
        parts.append(f"extractor {spec['extractor']['deployment']}")
    parts.extend(f"source {_folder(s)}" for s in spec.get("sources", []))
    return ", ".join(parts)


@metis.command("update")
@click.argument("name")
@click.option("--embedding", metavar="DEPLOYMENT", help="Embedding deployment: a change embeds every passage again.")
@click.option("--no-embedding", is_flag=True, help="No embedding: the base searches by keywords.")
@click.option("--extractor", metavar="DEPLOYMENT", help="Chat deployment that reads conversations for facts (memory).")
@click.option("--no-extractor", is_flag=True, help="No extractor (facts are kept by hand).")
@click.option("--source", "sources", multiple=True,
              help="The base's folders become these (repeatable); a folder it had keeps its patterns.")
@click.option("--no-sources", is_flag=True, help="No folders (uploads and notes stay).")
@click.option("--include", multiple=True, metavar="GLOB",
              help="For each folder (or those named by --source): index only files that match (repeatable; '' for all).")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="For each folder (or those named by --source): leave out what matches (repeatable; '' for none).")
@click.option("--mcp-save", type=click.Choice(["ask", "on_its_own"]), help="How MCP clients' save_to_knowledge saves.")
@json_option
@pass_state
def update(
    state: State, name: str, embedding: str | None, no_embedding: bool, extractor: str | None, no_extractor: bool,
    sources: tuple[str, ...], no_sources: bool, include: tuple[str, ...], exclude: tuple[str, ...],
    mcp_save: str | None, as_json: bool,
) -> None:
    """Change a base's spec: embedding, extractor, folders and their patterns (PUT …/knowledge-bases/NAME)."""
    opposites: list[tuple[str, bool, object]] = [
        ("--no-embedding", no_embedding, embedding), ("--no-extractor", no_extractor, extractor),
        ("--no-sources", no_sources, sources),
    ]
    for flag, value, other in opposites:
        if value and other:
            raise click.UsageError(f"{flag} and {flag.replace('no-', '')} say opposite things: give one")
    if not any((embedding, no_embedding, extractor, no_extractor, sources, no_sources, include, exclude, mcp_save)):
        raise click.UsageError("Say what to change: --embedding, --extractor, --source, --include, --exclude, --mcp-save")
    from ...metis.bases import edited_spec, resync_notice  # here, not at import: `astra --help` stays light

    url = f"/metis/knowledge-bases/{quoted(name)}"
    before = state.client.get(url)["spec"]
    folders = [s["folder"] for s in before.get("sources", [])]
    if (include or exclude) and not (sources or no_sources or folders):
        raise click.UsageError(f"{name} has no folder to choose files of: add one with --source")
    # Given patterns go to each folder named, or else to every folder the base has.
    patterns = {key: list(given) for key, given in (("include", include), ("exclude", exclude)) if given}
    chosen = [] if no_sources else sources or (folders if patterns else None)
    spec = edited_spec(before, embedding=embedding, no_embedding=no_embedding, extractor=extractor,
                       no_extractor=no_extractor, mcp_save=mcp_save,
                       sources=None if chosen is None else [{"folder": f, **patterns} for f in chosen])
    data = state.client.put(url, json={"spec": spec})
    if as_json:
        return print_json(data)
    after = data["spec"]
    click.echo(f"updated {name}: {_describe(after)}")
    notice = resync_notice(before, after)
    if notice:
        click.echo(f"{notice}: astra metis sync {name}")


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
    if data.get("tools_removed_from"):
        click.echo(f"its tools were removed from: {', '.join(data['tools_removed_from'])}")
