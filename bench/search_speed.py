"""Search speed of Metis at 10k–100k passages: the HNSW sidecar against the exact path, side by side in one run.

Passages are ~400–650 characters of SciFact text (sentences reshuffled to reach the size), so
each is one chunk, synced from files in a source folder by `core.documents.sync`. Three searches
are timed interleaved (so the machine's load hits all alike), each the whole `core.search.search`
(permission, keyword + vector rankings, RRF, passages within the budget) unless said otherwise:

- ours: the default: vectors answered by the HNSW sidecar (index.vectors.usearch), keywords by
  the tantivy sidecar (index.keywords.tantivy, used from 10k passages; FTS5 `bm25()` below);
- ours, FTS5 keywords: the same with the keyword sidecar off (`keywords_from = None`);
- exact: the same base with `core.index.exact = True`: index.db alone, FTS5 and the vec0 scan
  of every vector, what every search did before the sidecars;
- plain SQL: the same passages in an FTS5 and a vec0 table, two plain queries (`ORDER BY rank`)
  and RRF in a few lines — the floor of the old design;
- HTTP: ours through `POST /v1/metis/knowledge-bases/{name}/search` of the real app served by
  uvicorn on 127.0.0.1 (a thread of this process), one keep-alive httpx client.

At 1M passages the exact path costs seconds a search: `--exact-queries N` times the exact and
plain SQL sides (and measures recall) on the first N claims only; `--no-rebuild` skips timing a
rebuild of the sidecars from index.db.

The query's embedding is excluded: vectors come from a cheap deterministic embedder that places
each text near one of 1,000 centres in a 48-dimensional subspace of 384 dimensions (clustered
like real embeddings; uniform random vectors are neither realistic nor fair to HNSW). Recall@10
of the sidecar is measured against the exact scan on those vectors, per query. Each ranking is
also timed alone (50 candidates): FTS5 `ORDER BY rank` (before), FTS5 `ORDER BY bm25()`, tantivy;
vec0 against HNSW.

    flock /tmp/astralyx-bench.lock .venv/bin/python bench/search_speed.py [--sizes 10000 100000] [--queries 200] [--write]
    flock /tmp/astralyx-bench.lock .venv/bin/python bench/search_speed.py --sizes 1000000 --queries 200 \
        --exact-queries 20 --no-rebuild --write
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from astralyx.auth.actor import Actor  # noqa: E402
from astralyx.config import Settings  # noqa: E402
from astralyx.core import Astralyx  # noqa: E402
from astralyx.eos.runtimes.base import Embedder  # noqa: E402
from astralyx.metis.bases import parse_request  # noqa: E402
from astralyx.metis.index.sqlite_store import fts_query  # noqa: E402
from astralyx.metis.search import rrf  # noqa: E402
from astralyx.sqlite import connect  # noqa: E402
from bench.scifact import write_section  # noqa: E402

DIMS = 384
PER_FILE = 10


CENTRES, RANK = 1000, 48
_rng = np.random.default_rng(2026)
_BASIS = _rng.standard_normal((RANK, DIMS)).astype(np.float32) / np.sqrt(RANK)
_CENTRES = _rng.standard_normal((CENTRES, RANK)).astype(np.float32)


class HashEmbedder(Embedder):
    """Deterministic clustered unit vectors from a text's hash: costs almost nothing.

    A text lands near one of CENTRES points of a RANK-dimensional subspace, plus noise in that
    subspace and a little in all DIMS: nearest neighbours share a cluster, as with a real model."""

    name = "hash"
    dimensions = DIMS

    def _one(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        rng = np.random.default_rng(seed)
        centre = _CENTRES[seed % CENTRES]
        v = (centre + 0.8 * rng.standard_normal(RANK).astype(np.float32)) @ _BASIS
        v = v + 0.35 * rng.standard_normal(DIMS).astype(np.float32)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, DIMS), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


def passages(data: Path, n: int, seed: int = 7) -> list[str]:
    sentences = []
    for line in (data / "corpus.jsonl").open():
        doc = json.loads(line)
        parts = (s.strip().lstrip("#=-`~ ") for s in re.split(r"(?<=[.!?])\s+", doc["text"]))  # no Markdown syntax
        sentences += [s for s in parts if 20 < len(s) < 300]
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        rng.shuffle(sentences)
        para: list[str] = []
        for s in sentences:
            para.append(s)
            size = sum(len(p) + 1 for p in para)
            if size >= 400:
                if size <= 650:
                    out.append(" ".join(para))
                para = []
                if len(out) >= n:
                    break
    return out


class Baseline:
    """FTS5 + sqlite-vec written straight in SQL: the floor our code is measured against."""

    def __init__(self, path: Path) -> None:
        self.conn = connect(path, extensions=True)
        self.conn.execute("CREATE TABLE p(id INTEGER PRIMARY KEY, text TEXT)")
        self.conn.execute("CREATE VIRTUAL TABLE f USING fts5(text, content='', tokenize='porter unicode61 remove_diacritics 2')")
        self.conn.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{DIMS}] distance_metric=cosine)")

    def index(self, texts: list[str], embedder: Embedder) -> None:
        self.conn.execute("BEGIN")
        for i in range(0, len(texts), 64):
            batch = texts[i : i + 64]
            vectors = embedder.embed_passages(batch)
            for j, (text, vec) in enumerate(zip(batch, vectors, strict=True)):
                rowid = i + j + 1
                self.conn.execute("INSERT INTO p(id, text) VALUES (?,?)", (rowid, text))
                self.conn.execute("INSERT INTO f(rowid, text) VALUES (?,?)", (rowid, text))
                self.conn.execute("INSERT INTO v(rowid, embedding) VALUES (?,?)", (rowid, vec.tobytes()))
        self.conn.execute("COMMIT")

    def search(self, query: str, embedder: Embedder) -> list[str]:
        words = fts_query(query)  # the same keyword query as ours (any of its words, common ones left out)
        kw = [r[0] for r in self.conn.execute("SELECT rowid FROM f WHERE f MATCH ? ORDER BY rank LIMIT 50", (words,))]
        vec = embedder.embed_query(query)
        vv = [r[0] for r in self.conn.execute(
            "SELECT rowid FROM v WHERE embedding MATCH ? AND k = 50 ORDER BY distance", (vec.tobytes(),))]
        top = [d for d, _ in rrf([kw, vv])[:8]]
        marks = ",".join("?" * len(top))
        return [r[0] for r in self.conn.execute(f"SELECT text FROM p WHERE id IN ({marks})", top)]


def ours(tmp: Path, texts: list[str], embedder: Embedder, name: str) -> tuple[Astralyx, float]:
    """A base synced from files; the HNSW sidecar follows the writes, so it is ready when sync returns."""
    src = tmp / f"src-{name}"
    src.mkdir()
    for i in range(0, len(texts), PER_FILE):
        (src / f"f{i // PER_FILE:06}.md").write_text("\n\n".join(texts[i : i + PER_FILE]) + "\n")
    core = Astralyx(Settings.load(tmp / f"home-{name}")).start()
    actor = Actor.local_owner("default")
    spec = {"sources": [{"folder": str(src)}], "embedding": {"deployment": "e5-small"}}
    core.bases.create(actor, parse_request({"metadata": {"name": "speed"}, "spec": spec}))
    core.index.embedder_for = lambda base: embedder
    start = time.perf_counter()
    report = core.documents.sync(actor, "speed")
    seconds = time.perf_counter() - start
    assert report["chunks"] == len(texts), (report["chunks"], len(texts))
    return core, seconds


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def disk_mb(folder: Path, pattern: str) -> float:
    return sum(f.stat().st_size for f in folder.glob(pattern)) / 1e6


@contextmanager
def served(app: Any) -> Iterator[str]:
    """An ASGI app on 127.0.0.1 (uvicorn in a thread of this process); yields its base URL."""
    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def transport_floor(answer: bytes) -> Any:
    """An ASGI app that reads the request and sends `answer`: what HTTP costs here without our app."""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": answer})

    return app


def measure(
    core: Astralyx, base: Baseline, queries: list[str], embedder: Embedder, exact_queries: int
) -> dict[str, list[float]]:
    import httpx

    from astralyx.server import create_app

    actor = Actor.local_owner("default")
    core.index.embedder_for = lambda b: embedder
    url = "/v1/metis/knowledge-bases/speed/search"

    def exact(q: str) -> None:
        core.index.exact = True
        try:
            core.search.search(actor, "speed", q)
        finally:
            core.index.exact = False

    store = core.index.store(core.bases.get(actor, "speed"))

    def fts5_keywords(q: str) -> None:
        use, store.keywords.use_from = store.keywords.use_from, None
        try:
            core.search.search(actor, "speed", q)
        finally:
            store.keywords.use_from = use

    def http(q: str) -> None:
        r = client.post(url, json={"query": q})
        assert r.status_code == 200, r.text

    def ours_default(q: str) -> None:
        core.search.search(actor, "speed", q)

    sides = {
        "ours": ours_default,
        "ours, FTS5 keywords": fts5_keywords,
        "exact": exact,
        "plain SQL": lambda q: base.search(q, embedder),
        "HTTP": http,
        "HTTP floor": lambda q: floor.post("/", json={"query": q}),
    }
    slow = {"exact", "plain SQL"}  # on the first `exact_queries` claims only
    times: dict[str, list[float]] = {name: [] for name in sides}
    answer = core.search.search(actor, "speed", queries[0]).model_dump_json().encode()  # a typical answer's size
    with served(create_app(core)) as address, served(transport_floor(answer)) as bare, \
            httpx.Client(base_url=address, headers={"Authorization": f"Bearer {TOKEN}"}) as client, \
            httpx.Client(base_url=bare) as floor:
        for q in queries[:5]:  # warm all (pages in the OS cache, statements prepared)
            for name, run in sides.items():
                if name not in slow or exact_queries >= len(queries):
                    run(q)
        for i, q in enumerate(queries):  # interleaved: load on the machine hits all alike
            for name, run in sides.items():
                if name in slow and i >= exact_queries:
                    continue
                t = time.perf_counter()
                run(q)
                times[name].append(time.perf_counter() - t)
    return times


def indexing_only(args) -> None:
    """A real sync (read, hash, chunk, embed, write) against the default embedder alone, alternating."""
    texts = passages(args.data, args.model_passages, seed=11)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        core = Astralyx(Settings.load(tmp / "home-model")).start()
        model = core.runtimes.embedder("default", "e5-small")
        model.embed_passages(["warm up"])
        model_s = ours_s = float("inf")
        for run in range(3):  # alternating; the best time of each counts (the machine's load varies)
            start = time.perf_counter()
            for i in range(0, len(texts), 64):
                model.embed_passages(texts[i : i + 64])
            model_s = min(model_s, time.perf_counter() - start)
            synced, seconds = ours(tmp, texts, model, f"model-{run}")
            ours_s = min(ours_s, seconds)
            synced.close()
        core.close()
    text = (
        f"`python bench/search_speed.py --indexing-only --write`: {len(texts)} SciFact passages (≤ 700 characters) with "
        f"the default embedder `{model.name}`, three times each, alternating, best time of each: the embedder alone "
        f"{len(texts) / model_s:.1f} passages/s, a real sync (read, hash, chunk, embed, write) {len(texts) / ours_s:.1f} "
        f"passages/s = {model_s / ours_s:.0%} of the embedder's own throughput."
    )
    print(text)
    if args.write:
        write_section("Indexing: a real sync against the embedder alone", text)


def recall(core: Astralyx, queries: list[str], embedder: Embedder) -> tuple[float, float, float]:
    """Recall@10 of the sidecar's vector ranking against the exact scan, the share of the keyword
    sidecar's top 10 that FTS5 has in its top 10, and the share of the 8 passages answered that
    are the exact path's."""
    base = core.bases.get(Actor.local_owner("default"), "speed")
    store = core.index.store(base)
    found = words = same = 0
    for q in queries:
        v = embedder.embed_query(q)
        found += len(set(store.vector_ids(v, 50)[:10]) & set(store.vector_ids(v, 50, exact=True)[:10]))
        words += len(set(store.keyword_ids(q, 50)[:10]) & set(store.keyword_ids(q, 50, exact=True)[:10]))
        a = [h.chunk_id for h in core.search.hits(base, q)[1][:8]]
        core.index.exact = True
        e = [h.chunk_id for h in core.search.hits(base, q)[1][:8]]
        core.index.exact = False
        same += len(set(a) & set(e))
    return found / (10 * len(queries)), words / (10 * len(queries)), same / (8 * len(queries))


def rankings(core: Astralyx, queries: list[str], embedder: Embedder, exact_queries: int) -> dict[str, list[float]]:
    """Each ranking alone, 50 candidates, interleaved (the exact ones on the first `exact_queries`)."""
    store = core.index.store(core.bases.get(Actor.local_owner("default"), "speed"))
    vectors = {q: embedder.embed_query(q) for q in queries}
    sides = {
        "FTS5 rank": lambda q: store.db.query(
            "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT 50", (fts_query(q),)),
        "FTS5 bm25()": lambda q: store.keyword_ids(q, 50, exact=True),
        "tantivy": lambda q: store.keyword_ids(q, 50),
        "vec0": lambda q: store.vector_ids(vectors[q], 50, exact=True),
        "HNSW": lambda q: store.vector_ids(vectors[q], 50),
    }
    times: dict[str, list[float]] = {name: [] for name in sides}
    for i, q in enumerate(queries):
        for name, run in sides.items():
            if name in ("FTS5 rank", "FTS5 bm25()", "vec0") and i >= exact_queries:
                continue
            t = time.perf_counter()
            run(q)
            times[name].append(time.perf_counter() - t)
    return times


TOKEN = "bench-admin-token"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--model-passages", type=int, default=64, help="passages indexed with the real model")
    parser.add_argument("--indexing-only", action="store_true",
                        help="only a real sync against the default embedder alone (its own section)")
    parser.add_argument("--exact-queries", type=int, default=None,
                        help="time the exact path and plain SQL (and measure recall) on this many claims only")
    parser.add_argument("--no-rebuild", action="store_true", help="do not time a rebuild of the sidecars")
    parser.add_argument("--write", action="store_true")
    parser.add_argument("--title", default="Search speed: sidecars against the exact path (`bench/search_speed.py`)",
                        help="the section of docs/benchmarks.md to write")
    args = parser.parse_args()
    os.environ["ASTRALYX_TOKEN"] = TOKEN
    if args.indexing_only:
        return indexing_only(args)

    claims = [json.loads(line)["text"] for line in (args.data / "queries.jsonl").open()][: args.queries]
    fast = HashEmbedder()
    exact_n = min(args.exact_queries or len(claims), len(claims))
    rows = []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for n in args.sizes:
            texts = passages(args.data, n)
            rss0 = rss_mb()
            core, sync_s = ours(tmp, texts, fast, str(n))
            base_record = core.bases.get(Actor.local_owner("default"), "speed")
            store = core.index.store(base_record)
            start = time.perf_counter()
            vectors = store.vectors_sidecar()
            assert vectors is not None and vectors.wait() and vectors.generation == store.generation
            words = core.index.keywords_from is not None and n > core.index.keywords_from  # the keyword sidecar in use
            if words:  # built in the background when a search first finds the base past its size
                store.keywords.search(["warm"], 1, store.keywords_generation)
                assert store.keywords.wait() and store.keywords.generation == store.keywords_generation
            after_s = time.perf_counter() - start
            vectors.save()
            rss1 = rss_mb()
            folder = base_record.folder
            disk = {"index.db": disk_mb(folder, "index.db*"), "vectors": disk_mb(folder, "index.vectors.*"),
                    "keywords": disk_mb(folder, "index.keywords.tantivy/*")}
            # rebuilt from index.db, as after a crash or a copy (in the background; timed here)
            rebuild_v = rebuild_k = float("nan")
            if not args.no_rebuild:
                start = time.perf_counter()
                vectors.generation = None
                vectors.ensure(store.generation)
                vectors.wait()
                rebuild_v = time.perf_counter() - start
                if words:
                    start = time.perf_counter()
                    store.keywords.generation = None
                    store.keywords.ensure(store.keywords_generation)
                    store.keywords.wait()
                    rebuild_k = time.perf_counter() - start
            core.index.close(base_record)  # saves the rebuilt sidecar
            start = time.perf_counter()
            store = core.index.store(base_record)
            store.vectors_sidecar().ensure(store.generation)
            if words:
                store.keywords.ensure(store.keywords_generation)
            load_s = time.perf_counter() - start
            assert store.vectors_sidecar().ready and (store.keywords.ready or not words)
            base = Baseline(tmp / f"baseline-{n}.db")
            start = time.perf_counter()
            base.index(texts, fast)
            base_s = time.perf_counter() - start
            print(f"{n}: sync {sync_s:.1f} s (vectors sidecar in step) + {after_s:.1f} s (keyword sidecar), "
                  f"rebuild vectors {rebuild_v:.1f} s, keywords {rebuild_k:.1f} s, load {load_s:.2f} s, "
                  f"plain SQL index {base_s:.1f} s; RSS +{rss1 - rss0:.0f} MB; disk {disk}", flush=True)
            t = measure(core, base, claims, fast, exact_n)
            alone = rankings(core, claims, fast, exact_n)
            r10, words, same = recall(core, claims[:exact_n], fast)
            rows.append(dict(n=n, sync=sync_s, after=after_s, rebuild_v=rebuild_v, rebuild_k=rebuild_k, load=load_s,
                             base=base_s, rss=rss1 - rss0, disk=disk, t=t, alone=alone, recall=r10, words=words,
                             same=same))
            print(f"{n}: p50/p95 " + ", ".join(f"{k} {pct(v, 50):.1f}/{pct(v, 95):.1f} ms" for k, v in t.items())
                  + f"; recall@10 {r10:.3f}, keywords as FTS5 {words:.3f}, passages as exact {same:.3f}", flush=True)
            print(f"{n}: alone " + ", ".join(f"{k} {pct(v, 50):.1f}/{pct(v, 95):.1f} ms" for k, v in alone.items()),
                  flush=True)
            core.close()
            base.conn.close()

    load = os.getloadavg()[0]
    command = (f"--sizes {' '.join(map(str, args.sizes))} --queries {args.queries}"
               + (f" --exact-queries {exact_n}" if exact_n < len(claims) else "")
               + (" --no-rebuild" if args.no_rebuild else ""))
    lines = [
        f"`flock /tmp/astralyx-bench.lock .venv/bin/python bench/search_speed.py {command} --write` "
        f"({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores shared with other "
        f"work, load average {load:.1f} at the end). {len(claims)} SciFact claims"
        + (f" ({exact_n} for the exact path and plain SQL, and for the recall columns)" if exact_n < len(claims) else "")
        + f"; the query's embedding excluded (clustered {DIMS}-dimension vectors from a hash, see the bench's "
        "docstring); searches of the five kinds interleaved. ours = `core.search.search` as it is by default (HNSW "
        "for vectors; tantivy for keywords above 10,000 passages, `core.index.keywords_from`, FTS5 `bm25()` up to "
        "there); ours, FTS5 keywords = the same with the keyword sidecar off; exact = the same base with "
        "`core.index.exact = True` (index.db alone: FTS5 and the vec0 scan, the path before the sidecars); plain "
        "SQL = FTS5 `ORDER BY rank` + vec0 + RRF written straight; HTTP = ours through the search route of the "
        "real app (uvicorn on 127.0.0.1 in this process, a keep-alive httpx client); HTTP floor = the same server "
        "and client with an app that only reads the request and sends an answer of the same size (what HTTP costs "
        "here whatever the app); our route's own share = HTTP − floor − ours.",
        "",
        "| passages | ours p50 / p95 | ours, FTS5 keywords | exact | plain SQL | HTTP (ours) | HTTP floor "
        "| route's own share, p50 | recall@10 (vectors) | keywords: top 10 as FTS5's | passages as exact |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        cell = {k: f"{pct(v, 50):.1f} / {pct(v, 95):.1f} ms" for k, v in r["t"].items()}
        lines.append(f"| {r['n']:,} | {cell['ours']} | {cell['ours, FTS5 keywords']} | {cell['exact']} | "
                     f"{cell['plain SQL']} | {cell['HTTP']} | {cell['HTTP floor']} | "
                     f"{pct(r['t']['HTTP'], 50) - pct(r['t']['HTTP floor'], 50) - pct(r['t']['ours'], 50):.1f} ms | "
                     f"{r['recall']:.3f} | {r['words']:.3f} | {r['same']:.3f} |")
    names = list(rows[0]["alone"]) if rows else []
    lines += ["", "Each ranking alone (50 candidates), p50 / p95:", "",
              "| passages | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for r in rows:
        lines.append(f"| {r['n']:,} | " + " | ".join(
            f"{pct(r['alone'][k], 50):.1f} / {pct(r['alone'][k], 95):.1f} ms" for k in names) + " |")
    lines += [
        "",
        "| passages | sync (files → index.db, vectors sidecar in step) | then keyword sidecar | rebuilt from index.db: "
        "vectors / keywords | both loaded | plain SQL index | RSS after sync | disk: index.db / vectors / keywords |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        d = r["disk"]
        rebuilt = "–" if r["rebuild_v"] != r["rebuild_v"] else f"{r['rebuild_v']:.0f} s"  # nan: not timed
        rebuilt += " / " + ("–" if r["rebuild_k"] != r["rebuild_k"] else f"{r['rebuild_k']:.0f} s")
        lines.append(f"| {r['n']:,} | {r['sync']:.0f} s | {r['after']:.0f} s | {rebuilt} | "
                     f"{r['load']:.2f} s | {r['base']:.0f} s | +{r['rss']:.0f} MB | "
                     f"{d['index.db']:.0f} / {d['vectors']:.0f} / {d['keywords']:.0f} MB |")
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section(args.title, text)


if __name__ == "__main__":
    main()
