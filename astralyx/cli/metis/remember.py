"""`astra metis remember BASE --from FILE` (the extractor proposes, you choose) or one fact by hand.

    $ astra metis remember team --from standup.json
    reading the conversation for facts (a small model on a CPU takes a minute or two)…
    new  Ana — role: Ana works in research.  (2026-10-12, conversation: standup.json)
          replaces: Ana leads the data team.
    Keep 1 fact(s) in team? [y/N] y
    kept 1; 1 replaced an older fact

    $ astra metis remember team --subject Bruno --attribute city --fact "Bruno lives in Recife."
    kept 1

    $ astra metis remember team --subject Bruno --attribute city --fact "Bruno lives in Olinda."
    new  Bruno — city: Bruno lives in Olinda.  (2026-12-04, by hand)
          replaces: Bruno lives in Recife.
    kept 1; 1 replaced an older fact
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ...util import quoted
from ..output import json_option, print_json
from ..state import State, pass_state
from . import metis

READING = "reading the conversation for facts (a small model on a CPU takes a minute or two)…"
INDENT = " " * 6


def read_conversation(path: str) -> tuple[list[dict], str]:
    """Messages from a JSON file ([{"role", "content"}, …] or {"messages": […]}) or plain text; and its name."""
    if path == "-":
        text, name = sys.stdin.read(), "stdin"
    else:
        file = Path(path)
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise click.BadParameter(f"{path} is not UTF-8 text", param_hint="--from") from None
        name = file.name
    stripped = text.strip()
    if not stripped:
        raise click.BadParameter(f"{path} is empty", param_hint="--from")
    if path.endswith(".json") or stripped[0] in "[{":
        try:
            data = json.loads(stripped)
        except ValueError as e:
            if path.endswith(".json"):
                raise click.BadParameter(f"{path} is not valid JSON ({e})", param_hint="--from") from None
            data = None
        if isinstance(data, dict) and isinstance(data.get("messages"), list):
            data = data["messages"]
        if isinstance(data, list):
            return data, name
        if data is not None:
            raise click.BadParameter(
                f'{path}: a conversation in JSON is a list of messages: [{{"role": "user", "content": "…"}}, …]',
                param_hint="--from",
            )
    return [{"role": "user", "content": text}], name


def parse_selection(text: str, count: int) -> list[int]:
    """'1,3' or '1-3' or '2 4' → 0-based indexes, in order, each once."""
    chosen: list[int] = []
    for part in text.replace(" ", ",").split(","):
        part = part.strip()
        if not part:
            continue
        low, sep, high = part.partition("-")
        if not low.isdigit() or (sep and not high.isdigit()):
            raise click.BadParameter(f"{text!r}: give numbers as shown, e.g. 1,3 or 2-4", param_hint="--select")
        first, last = int(low), int(high) if sep else int(low)
        for n in range(first, last + 1):
            if not 1 <= n <= count:
                raise click.BadParameter(f"{n} is not one of the {count} proposal(s)", param_hint="--select")
            if n - 1 not in chosen:
                chosen.append(n - 1)
    return chosen


def show(proposal: dict[str, Any]) -> None:
    status = proposal.get("status", "new")
    label = {"replaces": "new"}.get(status, status)
    when = str(proposal.get("said_at") or "")[:10]
    colour = {"new": "green", "older": "yellow", "known": "bright_black", "confirms": "bright_black"}.get(label)
    click.echo(
        click.style(f"{label:<4}", fg=colour)
        + f" {proposal['subject']} — {proposal['attribute']}: {proposal['fact']}  ({when}, {proposal['source']})"
    )
    if status == "replaces" and proposal.get("replaces"):
        click.echo(f"{INDENT}replaces: {proposal['replaces']['fact']}")
    elif status == "older" and proposal.get("current"):
        current = proposal["current"]
        click.echo(f"{INDENT}older than what holds now: {current['fact']} ({str(current.get('said_at') or '')[:10]})")
    elif status == "known":
        click.echo(f"{INDENT}known already: not kept unless you select it")
    elif status == "confirms":
        click.echo(f"{INDENT}known already, said on another date: selecting it records that saying")


def summary(answer: dict[str, Any]) -> str:
    """`kept 2; 1 replaced an older fact` from what POST …/memory answered."""
    facts = answer.get("facts") or []
    kept = answer.get("kept", sum(1 for f in facts if f.get("status") != "known"))
    replaced = answer.get("replaced", 0)
    older = sum(1 for f in facts if f.get("change") == "older")
    known = answer.get("known", sum(1 for f in facts if f.get("status") == "known"))
    parts = [f"kept {kept}"]
    if replaced:
        parts.append(f"{replaced} replaced {'an older fact' if replaced == 1 else 'older facts'}")
    if older:
        parts.append(f"{older} went to the history (said before what holds now)")
    confirmed = answer.get("confirmed", 0)
    if known:
        said = f" ({confirmed} said again on another date: recorded)" if confirmed else ""
        parts.append(f"{known} {'was' if known == 1 else 'were'} known already{said}")
    return "; ".join(parts)


def _keep(state: State, base: str, facts: list[dict]) -> dict:
    body = [{k: f[k] for k in ("subject", "attribute", "fact", "source", "said_at") if f.get(k)} for f in facts]
    return state.client.post(f"/metis/knowledge-bases/{quoted(base)}/memory", json={"facts": body})


def _extract(state: State, base: str, body: dict, quiet: bool) -> dict:
    if quiet:
        return state.client.post(f"/metis/knowledge-bases/{quoted(base)}/memory/extract", json=body)
    from rich.console import Console

    console = Console(highlight=False)
    if console.is_terminal:
        with console.status(READING):
            answer = state.client.post(f"/metis/knowledge-bases/{quoted(base)}/memory/extract", json=body)
        click.echo(READING)
        return answer
    click.echo(READING)
    return state.client.post(f"/metis/knowledge-bases/{quoted(base)}/memory/extract", json=body)


@metis.command("remember")
@click.argument("base")
@click.option(
    "--from", "from_file", type=click.Path(dir_okay=False, allow_dash=True, exists=False),
    help="A conversation: JSON ([{\"role\": \"user\", \"content\": \"…\"}, …], messages may carry a date) or plain text.",
)
@click.option("--subject", help="By hand: who or what the fact is about (e.g. Bruno).")
@click.option("--attribute", help="By hand: what about it (e.g. city).")
@click.option("--fact", help='By hand: the fact in one sentence (e.g. "Bruno lives in Recife.").')
@click.option("--said", help="When it was said: 2026-10-12 or 2026-10-12T09:30:00Z (default: the messages' dates, else now).")
@click.option("--source", help='Where it comes from (default: "by hand", or "conversation: <file name>").')
@click.option("--select", help="Keep only these proposals, numbered in the order shown (e.g. 1,3 or 2-4).")
@click.option("--yes", "-y", is_flag=True, help="Keep without asking (the proposals not known already, or --select).")
@json_option
@pass_state
def remember(
    state: State,
    base: str,
    from_file: str | None,
    subject: str | None,
    attribute: str | None,
    fact: str | None,
    said: str | None,
    source: str | None,
    select: str | None,
    yes: bool,
    as_json: bool,
) -> None:
    """Remember a conversation (--from FILE: the extractor proposes facts, you choose) or one fact by hand.

    Facts already known are shown but not kept unless selected. At the question, answer y to keep
    the proposals shown as new or older, or give their numbers (1,3) to keep only those.
    """
    by_hand = [v for v in (subject, attribute, fact) if v is not None]
    if from_file and by_hand:
        raise click.UsageError("Either --from FILE, or --subject, --attribute and --fact: not both")
    if not from_file:
        if len(by_hand) != 3:
            raise click.UsageError("Give --from FILE (a conversation), or --subject, --attribute and --fact (one fact by hand)")
        if select:
            raise click.UsageError("--select chooses among proposals of --from FILE")
        item = {"subject": subject, "attribute": attribute, "fact": fact, "source": source or "by hand", "said_at": said}
        answer = _keep(state, base, [item])
        if as_json:
            return print_json(answer)
        for result in answer.get("facts") or []:
            if result.get("change") in ("replaces", "older"):  # the fact kept, then what it replaced or follows
                show({**result, "status": result["change"]})
        return click.echo(summary(answer))

    if from_file != "-" and not Path(from_file).is_file():
        raise click.BadParameter(f"{from_file} does not exist", param_hint="--from")
    messages, name = read_conversation(from_file)
    body: dict[str, Any] = {"source": source or f"conversation: {name}", "messages": messages}
    if said:
        body["said_at"] = said
    found = _extract(state, base, body, quiet=as_json)
    proposals = found.get("proposals") or []
    chosen = parse_selection(select, len(proposals)) if select else [i for i, p in enumerate(proposals) if not p.get("known")]

    if as_json:
        if proposals and chosen and (yes or select):
            found["result"] = _keep(state, base, [proposals[i] for i in chosen])
        return print_json(found)

    for proposal in proposals:
        show(proposal)
    secrets = found.get("left_out_secrets", 0)
    if secrets:
        click.echo(f"left out {secrets} thing(s) that looked like a secret (passwords, keys, card numbers are never kept)")
    if not proposals:
        return click.echo(
            "no facts proposed: nothing durable was said (keep one by hand with --subject, --attribute and --fact)"
        )
    if not chosen:
        return click.echo("nothing to keep: every fact proposed is known already (--select keeps one anyway)")
    if not yes:
        try:
            reply = click.prompt(
                f"Keep {len(chosen)} fact(s) in {base}? [y/N]", default="", show_default=False, prompt_suffix=" "
            ).strip().lower()
        except click.Abort:
            reply = ""
        if reply in ("y", "yes"):
            pass
        elif reply and reply[0].isdigit():
            chosen = parse_selection(reply, len(proposals))
        else:
            return click.echo("kept nothing")
    click.echo(summary(_keep(state, base, [proposals[i] for i in chosen])))
