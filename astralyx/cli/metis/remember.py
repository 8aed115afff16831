"""`astra metis remember BASE --from FILE` (the extractor proposes, you choose) or one fact by hand.

    $ astra metis remember team --from standup.json
    reading the conversation for facts (a small model on a CPU takes a minute or two)…
    new  Ana — role: Ana works in research.  (2026-10-12, conversation: standup.json)
          replaces: Ana leads the data team.
    Keep 1 fact(s) in team? [y/N] y
    kept 1; 1 replaced an older fact

    $ astra metis remember team --from chatgpt-export.zip --since 2026-03-01
    chatgpt-export.zip: 2 ChatGPT conversation(s)
    1  2026-03-01  Planning in March  (2 messages)
    2  2026-10-12  Team standup  (2 messages)
    reading 2 conversation(s) for facts (a small model on a CPU takes a minute or two each)…
    read 0/2 conversations
    read 2/2 conversations
    Ana
      role: conversations differ (side by side; keep one, or both: the later one holds, the other goes to the history)
      |  1 new   role: Ana leads the data team.  (2026-03-01, ChatGPT: Planning in March)  history 2026-03-01 – 2026-10-12
      |  2 new   role: Ana works in research.  (2026-10-12, ChatGPT: Team standup)  current from 2026-10-12
    Keep 2 fact(s) in team? [y/N, or numbers] 2
    kept 1

    $ astra metis remember team --subject Bruno --attribute city --fact "Bruno lives in Recife."
    kept 1

    $ astra metis remember team --subject Bruno --attribute city --fact "Bruno lives in Olinda."
    new  Bruno — city: Bruno lives in Olinda.  (2026-12-04, by hand)
          replaces: Bruno lives in Recife.
    kept 1; 1 replaced an older fact
"""

from __future__ import annotations

import io
import json
import sys
import time
import zipfile
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
        except RecursionError:  # not a ValueError: a doctored file must not end in a traceback
            raise click.BadParameter(f"{path} nests too deep to be a conversation or an export", param_hint="--from") from None
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
    chosen: dict[int, None] = {}  # in order, each once
    for part in text.replace(" ", ",").split(","):
        part = part.strip()
        if not part:
            continue
        low, sep, high = part.partition("-")
        if not low.isdigit() or (sep and not high.isdigit()):
            raise click.BadParameter(f"{text!r}: give numbers as shown, e.g. 1,3 or 2-4", param_hint="--select")
        first, last = int(low), int(high) if sep else int(low)
        for n in (first, last):
            if not 1 <= n <= count:
                raise click.BadParameter(f"{n} is not one of the {count} proposal(s)", param_hint="--select")
        chosen.update(dict.fromkeys(range(first - 1, last)))
    return list(chosen)


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

# -- a chat archive (ChatGPT's or Claude's export) ------------------------------------------------------

FOLLOW_EVERY = 1.0  # seconds between two looks at an import's progress
KEEP_BATCH = 500  # facts in one POST …/memory (the memory's limit)
CONVERSATION_MAX = 20 * 1024 * 1024  # a JSON file larger than this is no single conversation


def archive_payload(path: str) -> bytes | None:
    """The conversations.json of a ChatGPT or Claude export at `path`, packed alone in a zip to upload (the
    export's images and attachments never leave this machine); None when the file is not an export."""
    if path == "-":
        return None
    file = Path(path)
    with file.open("rb") as f:
        head = f.read(4096)
    if not head.startswith(b"PK"):
        stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
        if not stripped.startswith(b"["):
            return None
        # A vendor's list of conversations, not a conversation's list of messages: by its first item's keys
        # (a file too large to be one conversation is taken as an export when it names their keys early).
        if file.stat().st_size > CONVERSATION_MAX:
            if not any(marker in head for marker in (b'"mapping"', b'"chat_messages"')):
                return None
        else:
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError):
                return None
            except RecursionError:
                raise click.BadParameter(f"{file.name} nests too deep to be an export", param_hint="--from") from None
            first = data[0] if isinstance(data, list) and data and isinstance(data[0], dict) else {}
            if "mapping" not in first and "chat_messages" not in first:
                return None
    from ...errors import AstralyxError
    from ...metis.memory.archives import conversations_json

    try:
        with file.open("rb") as f:  # only the zip's directory and conversations.json are read (an export may be GBs)
            raw = conversations_json(f, file.name)  # the same limits as the server's, here first
    except AstralyxError as e:
        raise click.BadParameter(f"{e.message} ({e.code})", param_hint="--from") from None
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("conversations.json", raw)
    return out.getvalue()


def _imports(base: str) -> str:
    return f"/metis/knowledge-bases/{quoted(base)}/imports"


def _list_conversations(conversations: list[dict[str, Any]]) -> None:
    width = len(str(len(conversations)))
    for n, conv in enumerate(conversations, 1):
        when = str(conv.get("created_at") or "")[:10] or "?"
        count = conv.get("messages", 0)
        click.echo(f"{n:>{width}}  {when}  {conv.get('title')}  ({count} message{'' if count == 1 else 's'})")


def _pick(conversations: list[dict[str, Any]]) -> list[str]:
    """The interactive choice: numbers as listed (1,3 or 2-5), or all."""
    readable = [c for c in conversations if c.get("messages")]
    reply = click.prompt("Read which conversations? (numbers as listed, e.g. 1,3 or 2-5; all; nothing to stop)",
                         default="", show_default=False, prompt_suffix=" ").strip().lower()
    if not reply:
        return []
    if reply in ("all", "a", "*"):
        return [c["id"] for c in readable]
    return [conversations[i]["id"] for i in parse_selection(reply, len(conversations))]


def _eta(seconds: Any) -> str:
    if not isinstance(seconds, int | float) or seconds <= 0:
        return ""
    minutes = round(seconds / 60)
    return f", about {minutes} min left" if minutes >= 1 else ", under a minute left"


def _follow(state: State, base: str, job: dict[str, Any], quiet: bool) -> dict[str, Any]:
    """Progress by conversations until the job ends (or stops); Ctrl-C leaves it to be continued."""
    url = f"{_imports(base)}/{quoted(job['id'])}"
    shown = -1
    try:
        while job["state"] == "running":
            progress = job.get("progress") or {}
            done = progress.get("done", 0)
            if not quiet and done != shown:
                rate = progress.get("rate_per_minute")
                speed = f" ({rate:g}/min{_eta(progress.get('eta_seconds'))})" if rate else ""
                click.echo(f"read {done}/{progress.get('total', 0)} conversations{speed}")
                shown = done
            time.sleep(FOLLOW_EVERY)
            job = state.client.get(url)
    except KeyboardInterrupt:
        click.echo(f"stopped following: the import {job['id']} is kept for a day; run the same command again to continue")
        raise SystemExit(130) from None
    progress = job.get("progress") or {}
    if not quiet and shown >= 0 and progress.get("done") != shown:
        click.echo(f"read {progress.get('done', 0)}/{progress.get('total', 0)} conversations")
    return job


def _numbered(review: dict[str, Any]) -> list[dict[str, Any]]:
    """The proposals in the order shown (by subject, attribute, date)."""
    return [p for group in review.get("subjects") or [] for attr in group["attributes"] for p in attr["proposals"]]


def show_review(review: dict[str, Any]) -> None:
    """Grouped by subject; each proposal with its period; two conversations that differ, side by side."""
    n = 0
    for group in review.get("subjects") or []:
        click.echo(click.style(group["subject"], bold=True))
        for attr in group["attributes"]:
            if attr.get("conflict"):
                click.echo(f"  {attr['attribute']}: conversations differ (side by side; keep one, or both: "
                           "the later one holds, the other goes to the history)")
            for p in attr["proposals"]:
                n += 1
                status = p.get("status", "new")
                label = {"replaces": "new", "confirms": "known"}.get(status, status)
                colour = {"new": "green", "older": "yellow", "known": "bright_black"}.get(label)
                period = (p.get("period") or {}).get("label", "")
                mark = "|" if attr.get("conflict") else " "
                click.echo(f"  {mark}{n:>3} " + click.style(f"{label:<5}", fg=colour)
                           + f" {p['attribute']}: {p['fact']}  ({str(p.get('said_at') or '')[:10]}, {p['source']})"
                           + (f"  {period}" if period else ""))
                if status == "replaces" and p.get("replaces"):
                    click.echo(f"  {mark}{INDENT}replaces: {p['replaces']['fact']}")
                elif status == "older" and p.get("current"):
                    current = p["current"]
                    click.echo(f"  {mark}{INDENT}older than what holds now: {current['fact']} "
                               f"({str(current.get('said_at') or '')[:10]})")
                elif p.get("known"):
                    click.echo(f"  {mark}{INDENT}known already: not kept unless you select it")


def _keep_all(state: State, base: str, facts: list[dict[str, Any]]) -> dict[str, Any]:
    """Keep through POST …/memory, in batches the memory takes; one answer for all."""
    total: dict[str, Any] = {"facts": [], "kept": 0, "replaced": 0, "known": 0, "confirmed": 0}
    for i in range(0, len(facts), KEEP_BATCH):
        answer = _keep(state, base, facts[i : i + KEEP_BATCH])
        total["facts"] += answer.get("facts") or []
        for k in ("kept", "replaced", "known", "confirmed"):
            total[k] += answer.get(k, 0)
    return total


def remember_archive(
    state: State, base: str, path: str, payload: bytes, *, since: str | None, until: str | None, title: str | None,
    everything: bool, select: str | None, yes: bool, as_json: bool,
) -> None:
    name = Path(path).name
    if as_json and not (everything or since or until or title):
        raise click.UsageError("With --json, choose the conversations with --all, --since, --until or --title")
    job = state.client.post(_imports(base), files={"archive": (name, payload, "application/zip")})
    url = f"{_imports(base)}/{quoted(job['id'])}"
    if job["state"] == "ready":
        conversations = job.get("conversations") or []
        if not as_json:
            fmt = {"chatgpt": "ChatGPT", "claude": "Claude"}.get(job["archive"]["format"], "chat")
            click.echo(f"{name}: {len(conversations)} {fmt} conversation(s)")
            _list_conversations(conversations)
        body: dict[str, Any]
        if everything or since or until or title:
            body = {"all": everything, "since": since, "until": until, "title": title}
            body = {k: v for k, v in body.items() if v}
        else:
            ids = _pick(conversations)
            if not ids:
                state.client.delete(url)
                return click.echo("read nothing (the conversations were not kept)")
            body = {"conversations": ids}
        job = state.client.post(f"{url}/start", json=body)
        if not as_json:
            click.echo(f"reading {len(job.get('chosen') or [])} conversation(s) for facts "
                       "(a small model on a CPU takes a minute or two each)…")
    elif not as_json:
        click.echo(f"{name}: continuing the import {job['id']} of this archive ({job['state']})")
    if job["state"] == "failed":  # stopped (the extractor did not answer): continued as it was chosen
        job = state.client.post(f"{url}/start", json={})
    job = _follow(state, base, job, quiet=as_json)
    if job["state"] == "failed":
        error = job.get("error") or {}
        raise click.ClickException(f"the import stopped: {error.get('message')} ({error.get('code')}); "
                                   "run the same command again to continue")
    if job["state"] != "finished":
        raise click.ClickException(f"the import {job['id']} has {job['state']}: run the command again to import")
    if "review" not in job:
        job = state.client.get(url)
    review = job.get("review") or {}
    proposals = _numbered(review)
    chosen = parse_selection(select, len(proposals)) if select else [i for i, p in enumerate(proposals) if p.get("ticked")]
    if as_json:
        if proposals and chosen and (yes or select):
            job["result"] = _keep_all(state, base, [proposals[i] for i in chosen])
        return print_json(job)
    for error in job.get("errors") or []:
        click.echo(f"not read: {error['title']} ({error['code']}: {error['message']})")
    show_review(review)
    secrets = review.get("left_out_secrets", 0)
    if secrets:
        click.echo(f"left out {secrets} thing(s) that looked like a secret (passwords, keys, card numbers are never kept)")
    if not proposals:
        return click.echo("no facts proposed: nothing durable was said (keep one by hand with --subject, --attribute and --fact)")
    if not chosen:
        return click.echo("nothing to keep: every fact proposed is known already (--select keeps one anyway)")
    if not yes:
        chosen = confirm(base, chosen, len(proposals))
        if not chosen:
            return click.echo("kept nothing (the proposals stay a week: the same command shows them again)")
    click.echo(summary(_keep_all(state, base, [proposals[i] for i in chosen])))


@metis.command("remember")
@click.argument("base")
@click.option(
    "--from", "from_file", type=click.Path(dir_okay=False, allow_dash=True, exists=False),
    help="A conversation: JSON ([{\"role\": \"user\", \"content\": \"…\"}, …], messages may carry a date) or plain "
    "text; or a ChatGPT or Claude export (the zip, or its conversations.json): you choose the conversations, then the facts.",
)
@click.option("--since", help="Archive: the conversations created on or after this day (2026-03-01).")
@click.option("--until", help="Archive: the conversations created on or before this day (2026-06-30).")
@click.option("--title", "title_glob", metavar="GLOB", help="Archive: the conversations whose title matches (standup*; "
              "without * or ?, titles holding it). Case-insensitive.")
@click.option("--all", "everything", is_flag=True, help="Archive: read every conversation (else --since/--until/--title, "
              "or pick them when asked).")
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
    since: str | None,
    until: str | None,
    title_glob: str | None,
    everything: bool,
    select: str | None,
    yes: bool,
    as_json: bool,
) -> None:
    """Remember a conversation (--from FILE: the extractor proposes facts, you choose) or one fact by hand.

    --from a ChatGPT or Claude export (the zip, or its conversations.json): its conversations are listed, you
    choose them (--all, --since, --until, --title, or by number when asked), the extractor reads them in the
    background, then one review of every proposal, grouped by subject, each with the period it would hold.

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
    payload = archive_payload(from_file)
    if payload is not None:
        if said or source:
            raise click.UsageError("--said and --source are for one conversation: an archive's messages carry their dates")
        return remember_archive(state, base, from_file, payload, since=since, until=until, title=title_glob,
                                everything=everything, select=select, yes=yes, as_json=as_json)
    if since or until or title_glob or everything:
        raise click.UsageError("--since, --until, --title and --all choose among the conversations of a ChatGPT or "
                               "Claude export (--from export.zip)")
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
        chosen = confirm(base, chosen, len(proposals), numbers=False)
        if not chosen:
            return click.echo("kept nothing")
    click.echo(summary(_keep(state, base, [proposals[i] for i in chosen])))


def confirm(base: str, chosen: list[int], proposed: int, *, numbers: bool = True) -> list[int]:
    """The person's answer to the review: y keeps the ticked ones, numbers (1,3-5) keep those; else none."""
    ask = "[y/N, or numbers]" if numbers else "[y/N]"
    try:
        reply = click.prompt(f"Keep {len(chosen)} fact(s) in {base}? {ask}", default="", show_default=False,
                             prompt_suffix=" ").strip().lower()
    except click.Abort:
        reply = ""
    if reply in ("y", "yes"):
        return chosen
    if reply and reply[0].isdigit():
        return parse_selection(reply, proposed)
    return []
