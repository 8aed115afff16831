"""Remembered well: does search find what was said? LoCoMo evidence recall@8, facts and turns.

LoCoMo (../shared/data/locomo) has 10 long conversations and 1,986 questions, each with the turns
(`dia_id`s) that hold its answer. Each conversation goes through the public domain API of a real core
(real SQLite, the workspace's embedded e5-small) two ways:

- facts: each gold observation kept as a fact in a memory (`core.memory.keep`: subject = the speaker,
  said_at = the session's date, attribute "observation N", source "locomo D1:3" = the turn it came from);
- turns: each turn saved as a note "Speaker (8 May 2023): text" (a shared photo's caption after it) in a
  documents base (`core.notes.write`), one note per turn.

Each question (categories 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop; 5 adversarial left
out) is then searched in its conversation's base. Evidence recall@8: the share of the question's evidence
turns whose fact (any fact from that turn) or turn is among the 8 passages. For facts, only the evidence
turns that have an observation count (a question with none is left out of the facts columns).

Modes: keywords, vectors, hybrid = the first 8 of `core.search.hits` with that ranking (the re-ranking
rules applied); final = the answer itself (`core.search.search_in`: at most 8 numbered passages within
~6,000 characters; a turn shown whole as the context of another, or a fact shown with others said with it,
counts as found). Dev = conversations 0–4
(tune on these), test = 5–9.

    .venv/bin/python bench/locomo_search.py --keep-home /tmp/locomo-home            # all ten, cached base
    .venv/bin/python bench/locomo_search.py --keep-home /tmp/locomo-home --conversations 0-1 --kinds facts
    .venv/bin/python bench/locomo_search.py --keep-home /tmp/locomo-home --write [--notes notes.md]
    .venv/bin/python bench/locomo_search.py --keep-home /tmp/locomo-home --conversations 0-1 --cost 100

--keep-home: build the bases once in that folder and reuse them (embedding LoCoMo takes minutes);
a conversation missing there is added. --write puts the table in docs/benchmarks.md (between the
locomo_search markers). --cost N: what the recall steps (a chat's second keyword pass, facts said together)
cost per search, on and off interleaved, in process and through the HTTP route.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from astralyx.auth.actor import Actor  # noqa: E402
from astralyx.config import Settings  # noqa: E402
from astralyx.core import Astralyx  # noqa: E402
from astralyx.metis.bases import parse_request  # noqa: E402
from astralyx.metis.search import MAX_RESULTS  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- locomo_search:start -->", "<!-- locomo_search:end -->"
CATEGORIES = {4: "single-hop", 2: "temporal", 1: "multi-hop", 3: "open-domain"}
MODES = ("keywords", "vectors", "hybrid", "final")
KINDS = ("facts", "turns")
DEV, TEST = range(0, 5), range(5, 10)
_DIA = re.compile(r"D\d+:\d+")
_TURN_NOTE = re.compile(r"/(D\d+)-(\d+)\.md$")


def conversations(path: Path = DATA) -> list[dict[str, Any]]:
    """Each conversation as sessions (number, date, turns), observations and questions."""
    out = []
    for i, sample in enumerate(json.loads(path.read_text())):
        conv = sample["conversation"]
        sessions = []
        n = 1
        while f"session_{n}" in conv:
            when = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y")
            sessions.append({"n": n, "when": when, "turns": conv[f"session_{n}"]})
            n += 1
        observations = []
        for key, per_speaker in sample.get("observation", {}).items():
            n = int(re.findall(r"\d+", key)[0])
            for speaker, facts in per_speaker.items():
                for fact, dia in facts:
                    for dia_id in _DIA.findall(str(dia)) or [None]:
                        observations.append({"session": n, "speaker": speaker, "fact": fact, "dia_id": dia_id})
        questions = [
            {"question": q["question"], "category": q["category"],
             "evidence": sorted(set(_DIA.findall(" ".join(map(str, q["evidence"])))))}
            for q in sample["qa"] if q["category"] in CATEGORIES
        ]
        out.append({"index": i, "id": sample["sample_id"], "sessions": sessions, "observations": observations,
                    "questions": questions})
    return out


def facts_of(conv: dict[str, Any]) -> list[dict[str, Any]]:
    """One fact per observation (an observation citing several turns once, its first turn as its source)."""
    dates = {s["n"]: s["when"] for s in conv["sessions"]}
    seen: set[tuple[str, str]] = set()
    counts: dict[str, int] = defaultdict(int)
    facts = []
    for o in conv["observations"]:
        if (o["speaker"], o["fact"]) in seen or o["dia_id"] is None:
            continue
        seen.add((o["speaker"], o["fact"]))
        counts[o["speaker"]] += 1
        facts.append({
            "subject": o["speaker"], "attribute": f"observation {counts[o['speaker']]}", "fact": o["fact"],
            "source": f"locomo {o['dia_id']}", "said_at": dates[o["session"]].strftime("%Y-%m-%dT%H:%M:00Z"),
        })
    return facts


def turn_text(turn: dict[str, Any], when: datetime) -> str:
    text = f"{turn['speaker']} ({when.day} {when:%B %Y}): {turn['text']}"
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


def build(core: Astralyx, conv: dict[str, Any]) -> None:
    """The conversation's memory and its documents base of turns, through the domain API."""
    actor = Actor.local_owner("default")
    i = conv["index"]
    start = time.perf_counter()
    memory = {"metadata": {"name": f"locomo-{i}-facts"}, "spec": {"kind": "memory", "sources": []}}
    core.bases.create(actor, parse_request(memory), default_embedding=True)
    facts = facts_of(conv)
    for at in range(0, len(facts), 500):
        core.memory.keep(actor, f"locomo-{i}-facts", facts[at : at + 500])
    turns = {"metadata": {"name": f"locomo-{i}-turns"}, "spec": {"kind": "documents", "sources": []}}
    core.bases.create(actor, parse_request(turns), default_embedding=True)
    count = 0
    for session in conv["sessions"]:
        for turn in session["turns"]:
            path = turn["dia_id"].replace(":", "-") + ".md"
            core.notes.write(actor, f"locomo-{i}-turns", "notes", path, turn_text(turn, session["when"]))
            count += 1
    print(f"conversation {i} ({conv['id']}): {len(facts)} facts, {count} turns in {time.perf_counter() - start:.0f} s",
          flush=True)


def dia_of(document: str, attrs: dict[str, Any] | None, sources: dict[str, str]) -> str | None:
    """The turn a passage comes from: a fact's source ("locomo D1:3"), a turn note's path (D1-3.md)."""
    if document.startswith("memory:"):
        return sources.get(document)
    m = _TURN_NOTE.search(document)
    return f"{m[1]}:{m[2]}" if m else None


def evaluate(core: Astralyx, convs: list[dict[str, Any]], kinds: tuple[str, ...]) -> dict[str, Any]:
    """recall[(kind, mode, half, category)] = per-question recalls; times[kind] = final search seconds."""
    recall: dict[tuple[str, str, str, int], list[float]] = defaultdict(list)
    times: dict[str, list[float]] = defaultdict(list)
    skipped: dict[str, int] = defaultdict(int)
    for conv in convs:
        half = "dev" if conv["index"] in DEV else "test"
        for kind in kinds:
            base = core.bases.find("default", f"locomo-{conv['index']}-{kind}")
            assert base is not None, f"no base for conversation {conv['index']}: build it (drop --keep-home's folder?)"
            sources: dict[str, str] = {}
            if kind == "facts":
                for fact in core.memory.facts_in(base):
                    sources[f"memory:{base.name}/{fact.id}"] = fact.source.removeprefix("locomo ")
                held = set(sources.values())
            else:
                held = {t["dia_id"] for s in conv["sessions"] for t in s["turns"]}
            # a turn shown as the context of another, or a fact shown with others said with it (the answer's
            # text holds it whole), is read too
            said: dict[str, set[str]] = defaultdict(set)
            if kind == "facts":
                for fact in core.memory.facts_in(base):
                    said[fact.fact].add(fact.source.removeprefix("locomo "))
            else:
                for s in conv["sessions"]:
                    for t in s["turns"]:
                        said[turn_text(t, s["when"])].add(t["dia_id"])
            for q in conv["questions"]:
                wanted = [e for e in q["evidence"] if e in held]
                if not wanted:
                    skipped[kind] += 1
                    continue
                found: dict[str, set[str | None]] = {}
                for mode in ("keywords", "vectors", "hybrid"):
                    used, hits = core.search.hits(base, q["question"], mode=None if mode == "hybrid" else mode,
                                                  answer=MAX_RESULTS)
                    found[mode] = {dia_of(h.document, h.attrs, sources) for h in hits[:MAX_RESULTS]}
                t = time.perf_counter()
                answer = core.search.search_in(base, q["question"])
                times[kind].append(time.perf_counter() - t)
                shown = [(r.document, r.text) for r in answer.results]
                found["final"] = {dia_of(document, None, sources) for document, _ in shown}
                found["final"] |= {dia for _, shown_text in shown if "\n" in shown_text
                                   for text, dias in said.items() if text in shown_text for dia in dias}
                for mode in MODES:
                    share = sum(1 for e in wanted if e in found[mode]) / len(wanted)
                    for h in (half, "all"):
                        recall[(kind, mode, h, q["category"])].append(share)
        print(f"  searched conversation {conv['index']}", flush=True)
    return {"recall": recall, "times": times, "skipped": skipped}


def cost(core: Astralyx, convs: list[dict[str, Any]], kinds: tuple[str, ...], per_conversation: int) -> list[str]:
    """What the recall steps cost per search: each question searched with them and without them, interleaved
    (the machine's load hits both alike), in process (`search_in`) and through the real HTTP route (uvicorn on
    127.0.0.1 in this process, a keep-alive httpx client); the query's embedding cached beforehand. Without:
    no second keyword pass for a chat (expand.py), no facts put together (context.py); the keyword ranking's
    cut to its first places is in both (it only reads fewer rows)."""
    import httpx

    from astralyx.metis import search as search_module
    from astralyx.server import create_app
    from bench.search_speed import served

    grouped, feedback = search_module.grouped, search_module.FEEDBACK_HITS

    def steps(on: bool) -> None:
        search_module.grouped = grouped if on else (lambda hits, limit, budget: hits)
        search_module.FEEDBACK_HITS = feedback if on else 0  # no hits read: no second pass

    lines = []
    _, token = core.keys.create(None, "default", "viewer", name="locomo cost bench")  # the HTTP route's caller
    with served(create_app(core)) as address, \
            httpx.Client(base_url=address, headers={"Authorization": f"Bearer {token}"}) as client:
        for kind in kinds:
            times: dict[tuple[str, bool], list[float]] = defaultdict(list)
            for conv in convs:
                base = core.bases.find("default", f"locomo-{conv['index']}-{kind}")
                assert base is not None
                url = f"/v1/metis/knowledge-bases/{base.name}/search"
                for q in conv["questions"][:per_conversation]:
                    core.search.search_in(base, q["question"])  # its embedding cached, pages warm
                    for on in (True, False):
                        steps(on)
                        t = time.perf_counter()
                        core.search.search_in(base, q["question"])
                        times[("in process", on)].append(time.perf_counter() - t)
                        t = time.perf_counter()
                        r = client.post(url, json={"query": q["question"]})
                        times[("HTTP", on)].append(time.perf_counter() - t)
                        assert r.status_code == 200, r.text
            steps(True)
            for where in ("in process", "HTTP"):
                with_, without = times[(where, True)], times[(where, False)]
                lines.append(
                    f"{kind}, {where} ({len(with_)} searches): with the steps p50 / p95 {1000 * np.median(with_):.1f} / "
                    f"{1000 * np.percentile(with_, 95):.1f} ms, without {1000 * np.median(without):.1f} / "
                    f"{1000 * np.percentile(without, 95):.1f} ms.")
    return lines


def table(results: dict[str, Any], half: str, kinds: tuple[str, ...]) -> list[str]:
    recall = results["recall"]
    rows = ["| kept as, mode | " + " | ".join(CATEGORIES.values()) + " |", "|---|" + "---:|" * len(CATEGORIES)]
    for kind in kinds:
        for mode in MODES:
            cells = []
            for cat in CATEGORIES:
                got = recall.get((kind, mode, half, cat))
                cells.append(f"{np.mean(got):.2f}" if got else "–")
            rows.append(f"| {kind}, {mode} | " + " | ".join(cells) + " |")
    counts = []
    for kind in kinds:
        counts.append(f"{kind}: " + ", ".join(f"{len(recall.get((kind, 'final', half, c), []))} {name}"
                                              for c, name in CATEGORIES.items()))
    return [*rows, "", f"Questions ({half}): " + "; ".join(counts) + "."]


def write(body: str) -> None:
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    block = f"{START}\n{body.strip()}\n{END}"
    if START in text and END in text:
        text = text[: text.index(START)] + block + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOC.write_text(text)
    print(f"written to {DOC.relative_to(ROOT)}")


def section(report: str, notes: str = "") -> str:
    """The docs section: what was measured and how, the tables, then any notes."""
    command = "python bench/locomo_search.py --keep-home /tmp/locomo-home --write"
    head = [
        "## Remembered well: LoCoMo evidence recall@8 (`bench/locomo_search.py`)",
        "",
        "Each LoCoMo conversation kept two ways through the domain API of a real core (SQLite, the embedded "
        "e5-small): its gold observations as facts in a memory (subject = the speaker, said_at = the session's "
        "date), and its turns as notes \"Speaker (date): text\" in a documents base. Each question (adversarial "
        "ones left out) searched in its conversation's base; evidence recall@8 = the share of its evidence turns "
        "whose fact or turn is among the 8 passages. keywords / vectors / hybrid: the first 8 of that ranking "
        "with the re-ranking rules; final: the search answer itself (8 passages within ~6,000 characters; a turn "
        "shown whole as another's context, or a fact shown in the passage of another said with it, counts). "
        f"Tuned on the dev half only. `{command}`.",
        "",
    ]
    return "\n".join(head) + "\n" + report + ("\n\n" + notes.strip() if notes.strip() else "")


def parse_range(value: str) -> list[int]:
    """"0-4", "0,3,7", "5" → conversation indices."""
    out: list[int] = []
    for part in value.split(","):
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--conversations", default="0-9", help="which conversations, e.g. 0-4 or 0,2 (default all ten)")
    parser.add_argument("--kinds", default="facts,turns", help="facts, turns or both")
    parser.add_argument("--keep-home", type=Path, help="build the bases in this folder once and reuse them")
    parser.add_argument("--write", action="store_true", help="write the table into docs/benchmarks.md")
    parser.add_argument("--notes", type=Path, help="a Markdown file added under the tables when writing")
    parser.add_argument("--cost", type=int, metavar="N",
                        help="only time the recall steps on and off, the first N questions of each conversation")
    args = parser.parse_args()
    kinds = tuple(k for k in args.kinds.split(",") if k in KINDS)
    wanted = set(parse_range(args.conversations))
    convs = [c for c in conversations(args.data) if c["index"] in wanted]

    tmp = None
    home = args.keep_home
    if home is None:
        tmp = tempfile.TemporaryDirectory()
        home = Path(tmp.name) / "home"
    core = Astralyx(Settings.load(home, sync_on_start=False)).start()
    try:
        for conv in convs:
            if core.bases.find("default", f"locomo-{conv['index']}-turns") is None:
                build(core, conv)
        if args.cost:
            print("\n".join(cost(core, convs, kinds, args.cost)))
            return
        started = time.perf_counter()
        results = evaluate(core, convs, kinds)
        print(f"searched in {time.perf_counter() - started:.0f} s")
    finally:
        core.close()
        if tmp is not None:
            tmp.cleanup()

    halves = [h for h in ("all", "test", "dev") if any(k[2] == h for k in results["recall"])]
    lines = []
    for half in halves:
        title = {"all": "All ten conversations", "test": "Test half (conversations 5–9, not tuned on)",
                 "dev": "Dev half (conversations 0–4, tuned on)"}[half]
        lines += [f"{title}:", "", *table(results, half, kinds), ""]
    for kind in kinds:
        seconds = results["times"][kind]
        if seconds:
            lines.append(f"Search ({kind}, final, the query embedded already by the runs before, {len(seconds)} searches): "
                         f"p50 {1000 * np.median(seconds):.1f} ms, p95 {1000 * np.percentile(seconds, 95):.1f} ms.")
    skipped = results["skipped"].get("facts", 0)
    if skipped:
        lines.append(f"Facts: {skipped} questions left out, none of their evidence turns has an observation.")
    report = "\n".join(lines)
    print(report)
    if args.write:
        write(section(report, args.notes.read_text() if args.notes else ""))


if __name__ == "__main__":
    main()
