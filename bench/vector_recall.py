"""Recall@10 of the HNSW sidecar's settings against exact search, on real embeddings.

SciFact's whole corpus, cut into passages by the product's own chunking and embedded by an
embedded model of the library (all-MiniLM-L6-v2 by default: e5-small needs about 70 minutes here),
the 300 test claims as queries. The graph is made by `vectors._new_index` (the sidecar's own
connectivity and expansion) and searched for 50 candidates as a search asks; exact is a full
cosine scan in numpy. Vectors are kept in a cache file so a second run skips the model.

Then the same vectors go through the product: a SciFact base synced from files (an embedder that
looks the cached vectors up), searched hybrid and by vectors with the sidecar and with
`core.index.exact = True`, scored by nDCG@10 as bench/scifact.py does.

    flock /tmp/astralyx-bench.lock .venv/bin/python bench/vector_recall.py [--model all-minilm-l6-v2] [--write]
"""

from __future__ import annotations

import argparse
import os
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
from astralyx.eos.deployments import DeploymentSpec  # noqa: E402
from astralyx.eos.runtimes.base import Embedder  # noqa: E402
from astralyx.metis.bases import parse_request  # noqa: E402
from astralyx.metis.index.passages import embedding_text  # noqa: E402
from astralyx.metis.index.vectors import EXPANSION_PER_CANDIDATE, EXPANSION_SEARCH, _new_index  # noqa: E402
from astralyx.metis.parsing import read_markdown  # noqa: E402
from bench.scifact import load, ndcg_at_10, write_section  # noqa: E402


class Cached(Embedder):
    """The cached vectors of the passages and claims, looked up by text."""

    name = "cached"

    def __init__(self, texts: list[str], passages: np.ndarray, claims: list[str], queries: np.ndarray) -> None:
        self.dimensions = passages.shape[1]
        self.passages = dict(zip(texts, passages, strict=True))
        self.queries = dict(zip(claims, queries, strict=True))

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        return np.stack([self.passages[t] for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self.queries[text]


def through_the_product(corpus, queries, qrels, embedder: Cached) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "scifact"
        src.mkdir()
        for doc in corpus:
            (src / f"{doc['_id']}.md").write_text(f"# {doc['title']}\n\n{doc['text']}\n")
        core = Astralyx(Settings.load(Path(tmp) / "home")).start()
        core.deployments.put(None, "default", "bench-embed", DeploymentSpec(model="all-minilm-l6-v2", kind="embedding"))
        core.index.embedder_for = lambda base: embedder
        actor = Actor.local_owner("default")
        spec = {"sources": [{"folder": str(src)}], "embedding": {"deployment": "bench-embed"}}
        core.bases.create(actor, parse_request({"metadata": {"name": "scifact"}, "spec": spec}))
        core.documents.sync(actor, "scifact")
        base = core.bases.find("default", "scifact")
        store = core.index.store(base)
        assert store.vectors_sidecar().wait()
        store.keywords.ensure(store.keywords_generation)
        assert store.keywords.wait()  # hybrid "sidecar" is both sidecars: HNSW and tantivy
        scores: dict[str, list[float]] = {}
        for exact in (False, True):
            core.index.exact = exact
            for mode in ("vectors", None):
                name = f"{'hybrid' if mode is None else mode}, {'exact' if exact else 'sidecar'}"
                for qid, relevant in qrels.items():
                    hits = core.search.hits(base, queries[qid], limit=100, mode=mode)[1]
                    ranked = list(dict.fromkeys(h.document.rsplit("/", 1)[1].removesuffix(".md") for h in hits))
                    scores.setdefault(name, []).append(ndcg_at_10(ranked, relevant))
        answered = store.vectors_sidecar().answered
        words_answered = store.keywords.answered
        core.close()
    out = {name: float(np.mean(v)) for name, v in scores.items()}
    out["answered by the sidecar"] = answered
    out["answered by the keyword sidecar"] = words_answered
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--model", default="all-minilm-l6-v2")
    parser.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "astralyx-bench-vectors")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()

    corpus, queries, qrels = load(args.data, None)
    texts = []
    for doc in corpus:
        title, chunks = read_markdown(f"# {doc['title']}\n\n{doc['text']}\n", doc["_id"])
        texts += [embedding_text(title, c) for c in chunks]
    claims = [queries[q] for q in qrels]
    args.cache.mkdir(parents=True, exist_ok=True)
    cache = args.cache / f"scifact-{args.model}.npz"
    if cache.exists():
        saved = np.load(cache)
        passages, asked = saved["passages"], saved["queries"]
    else:
        with tempfile.TemporaryDirectory() as tmp:
            core = Astralyx(Settings.load(Path(tmp) / "home")).start()
            core.deployments.put(None, "default", "bench-embed", DeploymentSpec(model=args.model, kind="embedding"))
            model = core.runtimes.embedder("default", "bench-embed")
            start = time.perf_counter()
            parts = []
            for i in range(0, len(texts), 64):
                parts.append(model.embed_passages(texts[i : i + 64]))
                if i % 1280 == 0:
                    print(f"  embedded {i}/{len(texts)} in {time.perf_counter() - start:.0f} s", flush=True)
            passages = np.vstack(parts).astype(np.float32)
            asked = np.stack([model.embed_query(c) for c in claims]).astype(np.float32)
            core.close()
        np.savez(cache, passages=passages, queries=asked)
    norm = passages / np.linalg.norm(passages, axis=1, keepdims=True)
    qn = asked / np.linalg.norm(asked, axis=1, keepdims=True)
    exact = np.argsort(-(qn @ norm.T), axis=1)[:, :10]

    index = _new_index(passages.shape[1])
    start = time.perf_counter()
    index.add(np.arange(len(passages), dtype=np.uint64), passages, threads=os.cpu_count() or 1)
    build = time.perf_counter() - start
    breadth = max(EXPANSION_SEARCH, EXPANSION_PER_CANDIDATE * 50)  # as the sidecar searches for 50 candidates
    index.expansion_search = breadth
    found, times = 0, []
    for i, q in enumerate(asked):
        t = time.perf_counter()
        keys = index.search(q, 50).keys
        times.append(time.perf_counter() - t)
        found += len(set(keys[:10].tolist()) & set(exact[i].tolist()))
    recall = found / (10 * len(asked))
    text = (
        f"`flock /tmp/astralyx-bench.lock .venv/bin/python bench/vector_recall.py --model {args.model} --write` "
        f"({time.strftime('%Y-%m-%d')}): the whole SciFact corpus ({len(passages):,} passages, "
        f"{passages.shape[1]} dimensions, {args.model}), {len(asked)} test claims as queries. The sidecar's HNSW "
        f"(usearch, connectivity 16, expansion {breadth} at search, 50 candidates as a search asks) against "
        f"an exact cosine scan: **recall@10 {recall:.3f}**; built in {build:.1f} s on {os.cpu_count()} busy cores; "
        f"a search {np.median(times) * 1000:.2f} ms p50 / {np.percentile(times, 95) * 1000:.2f} ms p95."
    )
    product = through_the_product(corpus, queries, qrels, Cached(texts, passages, claims, asked))
    print(product)
    text += (
        " Through the product (a SciFact base synced from files, `core.search.hits`, nDCG@10 over abstracts): "
        + ", ".join(f"{name} {value:.3f}" for name, value in product.items() if not name.startswith("answered"))
        + f" ({product['answered by the sidecar']} searches answered by the vector sidecar, "
        f"{product['answered by the keyword sidecar']} by the keyword sidecar)."
    )
    print(text)
    if args.write:
        write_section("Vector sidecar: recall@10 on real embeddings (`bench/vector_recall.py`)", text)


if __name__ == "__main__":
    main()
