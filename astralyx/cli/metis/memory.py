"""`astra metis memory BASE [--history]`, `astra metis forget BASE ID [--history]`, `astra metis edit BASE ID --fact …`.

(`astra metis remember` lives in remember.py.)
"""

from __future__ import annotations

import click

from ...util import quoted
from ..output import json_option, print_json
from ..state import State, pass_state
from . import metis


def _url(base: str, fact_id: str | None = None) -> str:
    url = f"/metis/knowledge-bases/{quoted(base)}/memory"
    return f"{url}/{quoted(fact_id)}" if fact_id else url


def _day(stamp: str | None) -> str:
    if not stamp:
        return "now"
    return stamp[:10] if len(stamp) <= 10 or stamp[10:] in ("T00:00:00Z",) else stamp[:16].replace("T", " ")


@metis.command("memory")
@click.argument("base")
@click.option("--history", is_flag=True, help="Also show what each fact replaced, and when each held.")
@click.option("--as-of", "as_of", metavar="DATE", help="The facts that held on that date (2026-09-15).")
@json_option
@pass_state
def memory(state: State, base: str, history: bool, as_of: str | None, as_json: bool) -> None:
    """List a memory's facts, grouped by subject, each with its date and source."""
    params: dict[str, str] = {}
    if history:
        params["history"] = "true"
    if as_of:
        params["as_of"] = as_of
    data = state.client.get(_url(base), params=params)
    if as_json:
        return print_json(data)
    if not data["subjects"]:
        return click.echo("(no facts)")
    for group in data["subjects"]:
        click.secho(group["subject"], bold=True)
        width = max(len(f["attribute"]) for f in group["facts"])
        for fact in group["facts"]:
            click.echo(
                f"  {fact['attribute']:<{width}}  {fact['fact']}  ({_day(fact['said_at'])}{_again(fact)}, {fact['source']})"
                f"  {fact['id']}"
            )
            if history:
                _corrections(fact, width)
            for old in fact.get("replaced", []):
                period = f"{_day(old['said_at'])} – {_day(old.get('until'))}"
                click.echo(f"  {'':<{width}}  was: {old['fact']}  ({period}{_again(old)}, {old['source']})  {old['id']}")
                _corrections(old, width)
    summary = f"{data['count']} fact(s)"
    if history:
        summary += f", {data.get('history_count', 0)} in the history"
    click.echo(summary)


def corrected_line(c: dict) -> str:
    """One Edit of a fact: "corrected from “…”, on 2026-12-03" (and the date or source it had)."""
    parts = []
    if "from" in c:
        parts.append(f"from “{c['from']}”")
    if "said_at" in c:
        parts.append(f"said {_day(c['said_at'])}")
    if "source" in c:
        parts.append(f"source {c['source']}")
    return f"corrected{' ' + ', '.join(parts) if parts else ''}, on {c['on']}"


def _corrections(fact: dict, width: int) -> None:
    for c in fact.get("corrected") or []:
        click.secho(f"  {'':<{width}}    {corrected_line(c)}", dim=True)


def _again(fact: dict) -> str:
    """", said again 2024-03-20" for a fact said more than once."""
    dates = fact.get("said_again") or []
    return f", said again {', '.join(_day(d) for d in dates)}" if dates else ""


@metis.command("forget")
@click.argument("base")
@click.argument("fact_id")
@click.option("--history", is_flag=True, help="Also forget the older facts it replaced: everything kept about it.")
@json_option
@pass_state
def forget(state: State, base: str, fact_id: str, history: bool, as_json: bool) -> None:
    """Forget a fact (delete it from the memory)."""
    data = state.client.delete(_url(base, fact_id), params={"history": "true"} if history else {})
    if as_json:
        return print_json(data)
    line = f"forgot {data['forgotten']}"
    if history:
        line += f" and {data['history_forgotten']} older fact(s) it replaced"
    click.echo(line)
    if data.get("current"):
        click.echo(f"now current again: {data['current']['fact']}  ({_day(data['current']['said_at'])})")


@metis.command("edit")
@click.argument("base")
@click.argument("fact_id")
@click.option("--fact", "sentence", help="The corrected fact, in one sentence.")
@click.option("--said", "said_at", metavar="DATE", help="When it was first said, corrected (2026-10-12).")
@click.option("--source", help="Where it was said, corrected.")
@json_option
@pass_state
def edit(state: State, base: str, fact_id: str, sentence: str | None, said_at: str | None, source: str | None,
         as_json: bool) -> None:
    """Correct a fact's wording, date or source (its history is kept, and what it said before)."""
    body = {k: v for k, v in (("fact", sentence), ("said_at", said_at), ("source", source)) if v is not None}
    if not body:
        raise click.UsageError("Say what to correct: --fact, --said or --source")
    data = state.client.put(_url(base, fact_id), json=body)
    if as_json:
        return print_json(data)
    last = (data.get("corrected") or [{}])[-1]
    was = f" (was: “{last['from']}”)" if "from" in last else ""
    click.echo(f"corrected {data['id']}: {data['fact']}{was}")
