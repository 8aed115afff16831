"""`astra eos models|add|deploy|undeploy`: the model library and deploying its models."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from ...util import quoted
from ..output import json_option, print_json, print_table
from ..state import State, pass_state
from . import eos


def human(size: int | None) -> str:
    if not size:
        return "-"
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit in ("B", "KB") or size >= 100 else f"{size:.1f} {unit}"
        size /= 1000  # type: ignore[assignment]
    return str(size)


@eos.command("models")
@json_option
@pass_state
def models(state: State, as_json: bool) -> None:
    """The model library: each model's kind, size, licence and whether it is on this machine."""
    data = state.client.get("/eos/models")
    if as_json:
        return print_json(data)
    rows = []
    for m in data["models"]:
        present = "yes" if m["present"] else ("upstream" if m["runs"] == "upstream only" else "no")
        rows.append({
            "name": m["name"] + (" (default)" if m.get("default") else ""),
            "kind": m["kind"] + (f" {m['dimensions']}d" if m.get("dimensions") else ""),
            "size": human(m.get("size_bytes")),
            "licence": m["licence"],
            "present": present,
        })
    print_table(rows, ["name", "kind", "size", "licence", "present"])
    for m in data["models"]:
        notes = [f"{m['speed']} on 2 cores."] if m.get("speed") else []
        if m.get("memory_bytes"):
            notes.append(f"Uses about {human(m['memory_bytes'])} of memory.")
        notes += [f"also {', '.join(m['aliases'])}."] if m.get("aliases") else []
        if m.get("needs") and m["runs"] != "upstream only":
            notes.append(f"Needs {m['needs'].removeprefix('needs ')}.")
        if m.get("caveat"):
            notes.append(m["caveat"])
        if notes:
            click.echo(f"{m['name']}: " + " ".join(notes))


@eos.command("add")
@click.argument("model")
@click.option("--file", "file", type=click.Path(dir_okay=False),
              help="Add this GGUF file (a path on the server's machine) instead of downloading.")
@click.option("--chat-format", help="llama.cpp chat format of a GGUF added under a new name (default chatml).")
@json_option
@pass_state
def add(state: State, model: str, file: str | None, chat_format: str | None, as_json: bool) -> None:
    """Put a library model on this machine (e.g. qwen3:4b), or add any GGUF file with --file."""
    body: dict = {}
    if file:
        body["file"] = str(Path(file).expanduser().resolve())
    if chat_format:
        body["chat_format"] = chat_format
    data = state.client.post(f"/eos/models/{quoted(model)}/add", json=body)
    if data.get("download", {}).get("state") == "downloading":
        data = _follow_download(state, data)
    if as_json:
        return print_json(data)
    kind = "chat" if data["kind"] == "chat" else "embedding"
    click.echo(f"added {data['name']} ({human(data.get('size_bytes'))}, {kind})")
    if data.get("caveat"):
        click.echo(f"note: {data['caveat']}")
    if data.get("needs"):
        click.echo(f"note: {data['needs']}")
    click.echo(f"deploy it: astra eos deploy {data['name']} --name {data['name'].split('-q')[0]} --cpu --min 1 --max 1")


def _follow_download(state: State, data: dict) -> dict:
    """Poll the server's download with a progress bar until it is done or failed."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn

    name = data["name"]
    columns = ("[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(),
               TimeRemainingColumn())
    with Progress(*columns, transient=False) as progress:
        task = progress.add_task(f"fetching {name}", total=data["download"].get("total"))
        while True:
            download = data.get("download") or {}
            progress.update(task, completed=download.get("downloaded", 0), total=download.get("total"))
            if download.get("state") != "downloading":
                break
            time.sleep(0.5)
            data = state.client.get(f"/eos/models/{quoted(name)}")
    if download.get("state") == "failed":
        click.secho(f"Error: fetching {name} failed: {download.get('error')}. "
                    f"Add a local copy with `astra eos add {name} --file PATH.gguf` (MODEL_DOWNLOAD_FAILED)",
                    fg="red", err=True)
        sys.exit(1)
    return data


@eos.command("deploy")
@click.argument("model")
@click.option("--name", help="Deployment name (default: from the model's).")
@click.option("--kind", type=click.Choice(["chat", "embedding"]), help="Needed for a model the library does not know.")
@click.option("--cpu", is_flag=True, help="Runs on CPUs only (recorded and shown).")
@click.option("--min", "min_", type=int, default=1, show_default=True,
              help="Fewest replicas; 0 scales to zero when idle (only calls through the API wake it).")
@click.option("--max", "max_", type=int, default=1, show_default=True, help="Most replicas (recorded).")
@click.option("--url", help="An OpenAI-compatible server runs it, e.g. Ollama: http://127.0.0.1:11434/v1")
@click.option("--upstream-model", help="The model's name on that server (default: the library's, e.g. qwen3:4b).")
@click.option("--api-key-env", help="Environment variable (on the server) that holds the upstream's API key.")
@click.option("--timeout", type=float, help="Seconds to wait for the upstream (default 600).")
@json_option
@pass_state
def deploy(
    state: State, model: str, name: str | None, kind: str | None, cpu: bool, min_: int, max_: int, url: str | None,
    upstream_model: str | None, api_key_env: str | None, timeout: float | None, as_json: bool,
) -> None:
    """Deploy a model: embedded (in process) or, with --url, from an OpenAI-compatible server.

    Deployed again under its name, the deployment gets the new model and resources and keeps its tools and
    sharing. The rules (default name, library or upstream, kind) are the server's (eos/deploy.py), as for the
    console's deploy form.
    """
    request = {"model": model, "name": name, "kind": kind, "cpu": cpu, "min": min_, "max": max_, "url": url,
               "upstream_model": upstream_model, "api_key_env": api_key_env, "timeout": timeout}
    data = state.client.post("/eos/deployments", json={**{k: v for k, v in request.items() if v is not None}, "replace": True})
    name, model_name, kind = data["metadata"]["name"], data["spec"]["model"], data["spec"]["kind"]
    if as_json:
        return print_json(data)
    where = f"upstream {url}" if url else "embedded"
    status = data.get("status") or {}
    runs_on = "CPUs only" if cpu else "any device"
    click.echo(f"deployed {name}: {model_name} ({kind}, {where}, {runs_on}, {min_}-{max_} replicas)")
    click.echo(f"status: {'ok' if status.get('ok') else 'not answering'} ({status.get('detail', '-')})")


@eos.command("undeploy")
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="Do not ask.")
@json_option
@pass_state
def undeploy(state: State, name: str, yes: bool, as_json: bool) -> None:
    """Delete a deployment (bases that name it can no longer embed or extract with it)."""
    if not yes:
        click.confirm(f"Delete deployment {name}?", abort=True)
    data = state.client.delete(f"/eos/deployments/{quoted(name)}")
    if as_json:
        return print_json(data)
    click.echo(f"deleted {name}")
