"""Search and indexing speed of Metis against a plain FTS5 + sqlite-vec baseline, side by side in one run.

Passages are ~400–650 characters of SciFact text (sentences reshuffled to reach the size), so
each is one chunk. Both sides get the same vectors from the same embedder:

- ours: files in a source folder → `core.documents.sync` (read, hash, chunk, embed, write) and
  `core.search.search` (permission, keyword + vector rankings, RRF, passages within the budget);
- baseline: the same passages inserted with plain SQL into an FTS5 table and a vec0 table, and
  searched with two plain queries fused by RRF in a few lines of Python.

Speeds are given as ratios (ours / baseline), measured interleaved so the machine's load hits both.
"Excluding the query's embedding" uses a fast hashing embedder (same vectors on both sides);
"including it" adds the embedded e5 model's query embedding to both. Indexing with the real
model is measured on a small set against the model's own throughput.

    .venv/bin/python bench/search_speed.py [--sizes 10000 100000] [--queries 200] [--write]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from astralyx.auth.actor import Actor  # noqa: E402
from astralyx.config import Settings  # noqa: E402
from astralyx.core import Astralyx  # noqa: E402
from astralyx.eos.runtimes.base import Embedder  # noqa: E402
from astralyx.metis.bases import parse_request  # noqa: E402
from astralyx.metis.index.store import fts_query  # noqa: E402
from astralyx.metis.search import rrf  # noqa: E402
from astralyx.sqlite import connect  # noqa: E402
from bench.scifact import write_section  # noqa: E402

DIMS = 384
PER_FILE = 10


class HashEmbedder(Embedder):
    """Deterministic pseudo-random unit vectors from a text's hash: costs almost nothing."""

    name = "hash"
    dimensions = DIMS

    def _one(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(DIMS).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return np.stack([self._one(t) for t in texts]) if texts else np.zeros((0, DIMS), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._one(text)


class ModelQueries(HashEmbedder):
    """Same stored vectors, but each query pays the real model's embedding."""

    def __init__(self, model: Embedder) -> None:
        self.model = model

    def embed_query(self, text: str) -> np.ndarray:
        return self.model.embed_query(text)


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
    src = tmp / f"src-{name}"
    src.mkdir()
    for i in range(0, len(texts), PER_FILE):
        (src / f"f{i // PER_FILE:06}.md").write_text("\n\n".join(texts[i : i + PER_FILE]) + "\n")
    core = Astralyx(Settings.load(tmp / f"home-{name}"))
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


def measure(core: Astralyx, base: Baseline, queries: list[str], embedder: Embedder) -> dict[str, list[float]]:
    actor = Actor.local_owner("default")
    core.index.embedder_for = lambda b: embedder
    times: dict[str, list[float]] = {"ours": [], "baseline": []}
    for q in queries[:5]:  # warm both (pages in the OS cache, statements prepared)
        core.search.search(actor, "speed", q)
        base.search(q, embedder)
    for q in queries:  # interleaved: load on the machine hits both alike
        t = time.perf_counter()
        core.search.search(actor, "speed", q)
        times["ours"].append(time.perf_counter() - t)
        t = time.perf_counter()
        base.search(q, embedder)
        times["baseline"].append(time.perf_counter() - t)
    return times


def indexing_only(args) -> None:
    """A real sync (read, hash, chunk, embed, write) against the default embedder alone, alternating."""
    texts = passages(args.data, args.model_passages, seed=11)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        core = Astralyx(Settings.load(tmp / "home-model"))
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
        print("written to docs/benchmarks.md")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--model-queries", type=int, default=50, help="queries timed with the real model's embedding")
    parser.add_argument("--model-passages", type=int, default=64, help="passages indexed with the real model")
    parser.add_argument("--indexing-only", action="store_true",
                        help="only a real sync against the default embedder alone (its own section)")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    if args.indexing_only:
        return indexing_only(args)

    claims = [json.loads(line)["text"] for line in (args.data / "queries.jsonl").open()][: args.queries]
    fast = HashEmbedder()
    rows, notes = [], []
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        model = None
        for n in args.sizes:
            texts = passages(args.data, n)
            # Indexing alternates ours and the baseline (twice up to 20k passages; the best time of each counts).
            ours_s = base_s = float("inf")
            for run in range(2 if n <= 20_000 else 1):
                core, seconds = ours(tmp, texts, fast, f"{n}-{run}")
                ours_s = min(ours_s, seconds)
                (tmp / f"baseline-{n}.db").unlink(missing_ok=True)
                base = Baseline(tmp / f"baseline-{n}.db")
                start = time.perf_counter()
                base.index(texts, fast)
                base_s = min(base_s, time.perf_counter() - start)
            print(f"{n}: indexed ours {ours_s:.1f} s, baseline {base_s:.1f} s", flush=True)
            t = measure(core, base, claims, fast)
            if model is None:
                model = core.runtimes.embedder("default", "e5-small")
            tm = measure(core, base, claims[: args.model_queries], ModelQueries(model))
            rows.append((n, ours_s, base_s, t, tm))
            print(f"{n}: search p50 ours {pct(t['ours'], 50):.1f} ms, baseline {pct(t['baseline'], 50):.1f} ms; "
                  f"with e5 {pct(tm['ours'], 50):.0f} / {pct(tm['baseline'], 50):.0f} ms", flush=True)
            core.close()
            base.conn.close()

        # Indexing with the real model: ours against the model alone on the same passages.
        # Alternating, twice; the best time of each counts (the load of the machine varies).
        texts = passages(args.data, args.model_passages, seed=11)
        model_s = ours_model_s = float("inf")
        for run in range(2):
            start = time.perf_counter()
            for i in range(0, len(texts), 64):
                model.embed_passages(texts[i : i + 64])
            model_s = min(model_s, time.perf_counter() - start)
            core, seconds = ours(tmp, texts, model, f"model-{run}")
            ours_model_s = min(ours_model_s, seconds)
            core.close()
        print(f"model alone {len(texts) / model_s:.1f} passages/s; ours with it {len(texts) / ours_model_s:.1f}", flush=True)

    lines = [
        "Side by side in one run (`python bench/search_speed.py --write`): ours = files → `sync` and `core.search.search`; "
        "baseline = the same passages in FTS5 + vec0 tables with plain SQL and RRF in a few lines. "
        "Same vectors, same k (50 per ranking), 8 passages answered. Ratios are ours / baseline; "
        "searches interleaved so the machine's load (shared with other work during this run) hits both alike.",
        "",
        "| passages | index: ours | index: baseline | ratio | search p50 / p95: ours | baseline | ratio p50 / p95 |",
        "|---|---|---|---|---|---|---|",
    ]
    for n, ours_s, base_s, t, _ in rows:
        lines.append(
            f"| {n:,} | {n / ours_s:,.0f}/s | {n / base_s:,.0f}/s | {ours_s / base_s:.2f}× time | "
            f"{pct(t['ours'], 50):.1f} / {pct(t['ours'], 95):.1f} ms | {pct(t['baseline'], 50):.1f} / "
            f"{pct(t['baseline'], 95):.1f} ms | {pct(t['ours'], 50) / pct(t['baseline'], 50):.2f} / "
            f"{pct(t['ours'], 95) / pct(t['baseline'], 95):.2f} |"
        )
    lines += [
        "",
        f"Excluding the query's embedding (a hashing embedder, {DIMS} dimensions, {args.queries} SciFact claims). "
        f"Including it (embedded e5, {args.model_queries} claims):",
        "",
        "| passages | search p50 / p95 with e5: ours | baseline | ratio p50 |",
        "|---|---|---|---|",
    ]
    for n, _, _, _, tm in rows:
        lines.append(
            f"| {n:,} | {pct(tm['ours'], 50):.0f} / {pct(tm['ours'], 95):.0f} ms | {pct(tm['baseline'], 50):.0f} / "
            f"{pct(tm['baseline'], 95):.0f} ms | {pct(tm['ours'], 50) / pct(tm['baseline'], 50):.2f} |"
        )
    lines += [
        "",
        f"Indexing with the real model ({args.model_passages} passages): e5 alone {len(texts) / model_s:.1f} passages/s, "
        f"ours (read, hash, chunk, embed, write) {len(texts) / ours_model_s:.1f} passages/s = "
        f"{model_s / ours_model_s:.0%} of the model's own throughput.",
        *notes,
    ]
    text = "\n".join(lines)
    print(text)
    if args.write:
        write_section("Search speed: Metis against plain FTS5 + sqlite-vec", text)
        print("written to docs/benchmarks.md")


if __name__ == "__main__":
    main()
