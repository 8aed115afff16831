"""Follow a base's sync job (`astra metis sync|reindex`): a bar by passages with rate and ETA.

The job runs on the server; this only starts (or joins) it, then reads GET …/sync until it ends.
A dropped connection is retried (the job goes on meanwhile); the server restarting shows as the
job being gone, and says so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import click
from rich.progress import Progress

from ...metis.jobs import duration
from ...util import quoted
from ..client import ApiError
from ..output import progress
from ..state import State

POLL = 0.5  # seconds between two looks at the job
RECONNECT_FOR = 600.0  # seconds of a lost connection before giving up (the job goes on on the server)


def _url(base: str, rest: str) -> str:
    return f"/metis/knowledge-bases/{quoted(base)}/{rest}"


def _bar() -> Progress:
    return progress("{task.fields[counts]}", "{task.fields[rate]}")


def describe(job: dict[str, Any]) -> tuple[str, int | None, int, str, str]:
    """(what, total, done, counts, rate) of a job, for the bar."""
    files, passages = job.get("files") or {}, job.get("passages") or {}
    if job.get("state") == "queued":
        return "queued (another base's sync runs first)", None, 0, "", ""
    if passages.get("total") is None:
        total, read = files.get("total"), files.get("read", 0)
        return "reading", total, read, f"files {read:,}/{total or 0:,}", ""
    rate = job.get("passages_per_second")
    eta = job.get("eta_seconds")
    counts = f"passages {passages['done']:,}/{passages['total']:,} · files {files.get('done', 0):,}/{files.get('total') or 0:,}"
    return "indexing", passages["total"], passages["done"], counts, f"{rate:.1f}/s, ETA {duration(eta)}" if rate else ""


def follow(state: State, base: str, kind: str, *, wait: bool, quiet: bool,
           sleep: Callable[[float], None] = time.sleep, started: dict[str, Any] | None = None) -> dict[str, Any]:
    """Start (or join) the base's job (`started`: one started already, e.g. by an import); unless `wait` is off,
    follow it to its end. The job's last status."""
    job = started or state.client.post(_url(base, kind) + "?wait=false")
    if not wait:
        if state.client.local is None:
            return job
        click.secho("(no server: the sync runs in this command, so it waits for it)", dim=True, err=True)
    job_id = job["id"]
    lost_since: float | None = None
    with _bar() as bar:
        task = bar.add_task(kind, total=None, counts="", rate="", document="", visible=not quiet)
        while job.get("state") in ("queued", "running"):
            sleep(POLL if state.client.local is None else POLL / 5)
            try:
                now = state.client.get(_url(base, "sync"))
            except ApiError as e:
                if e.code != "UNREACHABLE":
                    raise
                if lost_since is None:
                    lost_since = time.monotonic()
                    if not quiet:
                        click.secho(f"lost the server ({e.message}); reconnecting to the job…", fg="yellow", err=True)
                if time.monotonic() - lost_since > RECONNECT_FOR:
                    raise ApiError(0, "UNREACHABLE", f"Lost the server for {duration(RECONNECT_FOR)}; the sync may go on "
                                   f"there: `astra metis sync {base}` follows it again") from None
                bar.update(task, description="connection lost, reconnecting…")
                continue
            if lost_since is not None and not quiet:
                click.secho("reconnected: following the job again", fg="green", err=True)
            lost_since = None
            if now.get("id") != job_id:
                if now.get("state") == "idle":
                    raise ApiError(0, "SYNC_LOST", f"The server restarted and the sync of {base} stopped with it: "
                                   f"run `astra metis sync {base}` again")
                job_id = now.get("id")  # the server restarted and syncs the base again: follow that one
            job = now
            what, total, done, counts, rate = describe(job)
            bar.update(task, description=what, total=total, completed=done, counts=counts, rate=rate,
                       document=job.get("document") or "")
    return job


def report(job: dict[str, Any], verb: str) -> None:
    """What a finished job did; a failed one raises its error (exit 1)."""
    if job.get("state") == "failed":
        err = job.get("error") or {}
        raise ApiError(500, err.get("code", "SYNC_FAILED"), err.get("message", "The sync failed: see the server's log"))
    data = job.get("report") or {}
    for warning in job.get("warnings") or []:
        click.secho(f"  large: {warning['message']}", fg="yellow", err=True)
    click.echo(
        f"{verb} {data['knowledge_base']}: {data['added']} added, {data['changed']} changed, "
        f"{data['unchanged']} unchanged, {data['removed']} removed — "
        f"{data['documents']} document(s), {data['chunks']} passage(s) indexed"
    )
    for failed in data.get("failed") or []:
        click.secho(f"  not indexed: {failed['document']}: {failed['error']}", fg="yellow", err=True)
