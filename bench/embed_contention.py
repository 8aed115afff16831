"""A search's query embedding while a sync embeds: which way of running the sync's embedding leaves the
searches fastest, and at what cost to the sync.

The default embedder (`e5-small`, int8 onnxruntime). One thread embeds SciFact passages in a loop, 16 at a
time, at nice 5 (as a sync's job does); meanwhile the main thread embeds a query every 30 ms (as searches
do). The background embedding runs, by turns in each round:

- shared: through the searches' own session (what a sync does: one session, its thread pool at normal
  priority, whoever calls it);
- own, 2 threads: a session of its own, created from a thread at nice 5, so its pool runs there too;
- own, 1 thread: a single-threaded session of its own (one core left to the searches).

Each phase measures the queries' p50/p95 and the background's passages/s; an idle phase (no background)
opens each round. Interleaved, several rounds: compare within the run.

    flock /tmp/astralyx-bench.lock .venv/bin/python bench/embed_contention.py [--rounds 3] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from astralyx.config import Settings  # noqa: E402
from astralyx.core import Astralyx  # noqa: E402
from astralyx.eos.runtimes.base import Embedder  # noqa: E402
from astralyx.eos.runtimes.e5onnx import E5OnnxEmbedder, ensure_graph  # noqa: E402
from bench.scifact import write_section  # noqa: E402
from bench.search_speed import passages  # noqa: E402

NICE = 5
SLICE = 16
THINK = 0.03


def lower_priority() -> None:
    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)  # Linux: this thread only


def made_at_nice(make):
    """`make()` from a thread at NICE: the threads it starts (onnxruntime's pool) run there too."""
    out = []

    def run() -> None:
        lower_priority()
        out.append(make())

    t = threading.Thread(target=run)
    t.start()
    t.join()
    return out[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=150, help="queries a phase")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()

    texts = passages(args.data, 2048, seed=5)
    claims = [json.loads(line)["text"] for line in (args.data / "queries.jsonl").open()]
    with tempfile.TemporaryDirectory() as tmp:
        core = Astralyx(Settings.load(Path(tmp) / "home")).start()
        searches = core.runtimes.embedder("default", "e5-small")
        graph = ensure_graph(core.runtimes.models.folder, "multilingual-e5-small-int8", "int8")
        background: dict[str, Embedder] = {
            "shared": searches,
            "own, 2 threads": made_at_nice(lambda: E5OnnxEmbedder(searches.name, graph, threads=2)),
            "own, 1 thread": E5OnnxEmbedder(searches.name, graph, threads=1),
        }
        for e in background.values():
            e.embed_passages(texts[:4])
        n = 0

        def queries() -> list[float]:
            nonlocal n
            out = []
            for _ in range(args.queries):
                n += 1
                start = time.perf_counter()
                searches.embed_query(f"{claims[n % len(claims)]} {n}")  # never the same text twice
                out.append(time.perf_counter() - start)
                time.sleep(THINK)
            return out

        def phase(name: str | None) -> tuple[list[float], float]:
            if name is None:
                return queries(), 0.0
            stop, done = threading.Event(), [0]

            def loop() -> None:
                lower_priority()
                i = 0
                while not stop.is_set():
                    background[name].embed_passages(texts[i : i + SLICE])
                    i, done[0] = (i + SLICE) % (len(texts) - SLICE), done[0] + SLICE

            thread = threading.Thread(target=loop)
            thread.start()
            time.sleep(1.0)
            start, before = time.monotonic(), done[0]
            lat = queries()
            rate = (done[0] - before) / (time.monotonic() - start)
            stop.set()
            thread.join()
            return lat, rate

        results: dict[str, list[tuple[list[float], float]]] = {}
        for r in range(args.rounds):
            for name in [None, *background]:
                lat, rate = phase(name)
                results.setdefault(name or "idle", []).append((lat, rate))
                print(f"round {r + 1} {name or 'idle':15} p50 {np.percentile(lat, 50) * 1000:5.1f} ms  "
                      f"p95 {np.percentile(lat, 95) * 1000:5.1f} ms  background {rate:5.1f} passages/s", flush=True)
        core.close()

    idle95 = float(np.percentile([x for lat, _ in results["idle"] for x in lat], 95))
    table = ["| the sync's embedding | query p50 | query p95 | p95 / idle | sync passages/s |", "|---|---:|---:|---:|---:|"]
    for name, runs in results.items():
        lat = [x for values, _ in runs for x in values]
        rate = f"{np.mean([r for _, r in runs]):.1f}" if name != "idle" else "—"
        table.append(f"| {name} | {np.percentile(lat, 50) * 1000:.1f} ms | {np.percentile(lat, 95) * 1000:.1f} ms | "
                     f"{np.percentile(lat, 95) / idle95:.2f}× | {rate} |")
    body = (
        f"`flock /tmp/astralyx-bench.lock .venv/bin/python bench/embed_contention.py --rounds {args.rounds} "
        f"--queries {args.queries} --write` ({time.strftime('%Y-%m-%d')}): `{searches.name}`; a thread at nice "
        f"{NICE} embeds passages {SLICE} at a time while queries are embedded every {THINK * 1000:.0f} ms; "
        f"{args.rounds} rounds, the phases interleaved, {args.queries} queries each.\n\n" + "\n".join(table)
        + f"\n\nOn {os.cpu_count()} cores shared with other work; compare within the run."
    )
    print(body)
    if args.write:
        write_section("A query's embedding during a sync's (`bench/embed_contention.py`)", body)


if __name__ == "__main__":
    main()
