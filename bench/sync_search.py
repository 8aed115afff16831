"""Search during a sync: p95 latency of searches while a base syncs a 10k-passage folder, against idle.

A base of the default embedder (`e5-small`: multilingual-e5-small int8 through onnxruntime, the real
path, query embedding included) first gets a small folder indexed (`--seed` passages), so searches have
something to find. Then:

- idle, before: searches in a loop for `--idle` seconds;
- the sync: the base's folder gets `--passages` more (SciFact text, ~400–650 characters a passage,
  10 to a file) and its sync job runs (`core.documents.start`, as the API and the CLI start it) while
  the same loop searches. The sync runs `--run` seconds, then waits `--pause` seconds (its thread
  stopped at its next call to the embedder, through `Gate`), and so on to its end: the searches while
  it runs are "during the sync", those while it waits are "idle" at the same size of index and the
  same moment, interleaved with them (a shared machine's slow minutes weigh on both); searches while
  it goes from running to waiting are not counted. Notes are written meanwhile, each timed until a
  search finds it;
- idle, after, at the larger size, for `--idle` seconds.

A base that passes 10,000 passages (`keywords_from`) gets its keyword sidecar built once, in a thread of its
own that the sync starts (or the first search past the threshold): that build is part of the sync's work
here. "The sync running" lasts until both have ended, the gate holds the build too (at its next step), and
the searches while the build ran are also reported on their own. `--seed 9500 --passages 1000` makes the
build fall inside the measured sync (`--seed 500 --passages 9000` stays below the threshold).

With `--upstream`, the base embeds through an OpenAI-compatible upstream deployment instead: a tiny
embeddings server on 127.0.0.1 in a process of its own (as a GPU server would be: another machine's
work) answering at once with deterministic vectors (384 dimensions, chosen by a hash of the text). The embedder
then costs the sync almost nothing, and what weighs on the searches is the sync's own Python work.

Every search is the whole `core.search.search` (permission, query embedding, both rankings, RRF,
passages). The ratio is p95 while the sync runs / p95 while it waits (interleaved); also against the
idle phases before and after it (which a shared machine's load can move: the interleaved ratio is the
one to compare). Also: the time to the first new document searchable, the sync's passages/s (its
waits not counted), a note's write time and time to searchable.

    flock /tmp/astralyx-bench.lock .venv/bin/python bench/sync_search.py [--passages 10000] [--upstream] [--write]
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
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
from astralyx.metis.index.keywords import KeywordSidecar  # noqa: E402
from bench.scifact import write_section  # noqa: E402
from bench.search_speed import passages  # noqa: E402

PER_FILE = 10
UPSTREAM_DIMS = 384  # the default embedder's
UPSTREAM_VECTORS = 4096
THINK = 0.05  # seconds between two searches of the loop (a person, a chat model's tool calls)


class Gate(Embedder):
    """The base's embedder, with a gate: while it is shut, a sync's thread ("sync:…") waits at its next
    call (so the sync stands still, as if it were not running); searches and notes go through. `hold_build`
    puts the same gate before each step of the keyword sidecar's build."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dimensions = inner, inner.name, inner.dimensions
        self.open, self.parked, self.build_parked = threading.Event(), threading.Event(), threading.Event()
        self.open.set()

    def hold_build(self, sidecar: KeywordSidecar) -> None:
        """The sidecar's build waits at its next step while the gate is shut (then goes on to its own pause)."""
        pause = sidecar.pause

        def gated() -> None:
            if not self.open.is_set():
                self.build_parked.set()
                self.open.wait()
                self.build_parked.clear()
            pause()

        sidecar.pause = gated

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if threading.current_thread().name.startswith("sync:") and not self.open.is_set():
            self.parked.set()
            self.open.wait()
            self.parked.clear()
        return self.inner.embed_passages(texts)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def serve_embeddings(port: int) -> None:
    """An OpenAI-compatible /v1/embeddings on 127.0.0.1:port answering at once (the `--upstream` server, run
    as a process of its own): each text gets one of UPSTREAM_VECTORS unit vectors of UPSTREAM_DIMS dimensions,
    chosen by a hash of the text and written as JSON beforehand, so that the server takes next to no CPU (a
    GPU server's work is another machine's); the client reads them as from any server (JSON floats)."""
    import zlib
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    rng = np.random.default_rng(0)
    pool = rng.standard_normal((UPSTREAM_VECTORS, UPSTREAM_DIMS)).astype(np.float32)
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    rendered = ["[" + ",".join(f"{x:.6f}" for x in row) + "]" for row in pool]

    def vector(text: str) -> str:
        return rendered[zlib.crc32(text.encode()) % UPSTREAM_VECTORS]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real server

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            items = ",".join(f'{{"object":"embedding","index":{i},"embedding":{vector(t)}}}' for i, t in enumerate(texts))
            answer = f'{{"object":"list","model":{json.dumps(body.get("model", "fast"))},"data":[{items}]}}'.encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def start_upstream() -> tuple[subprocess.Popen[bytes], str]:
    """The `--upstream` embeddings server in a process of its own; (the process, its base URL)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    process = subprocess.Popen([sys.executable, __file__, "--serve-embeddings", str(port)])
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"http://127.0.0.1:{port}/v1"
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise SystemExit("the --upstream embeddings server did not start") from None
            time.sleep(0.1)


def write_files(folder: Path, texts: list[str], prefix: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(0, len(texts), PER_FILE):
        (folder / f"{prefix}{i // PER_FILE:05}.md").write_text("\n\n".join(texts[i : i + PER_FILE]) + "\n")


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000 if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "scifact")
    parser.add_argument("--passages", type=int, default=10_000, help="passages the sync indexes while searching")
    parser.add_argument("--seed", type=int, default=500, help="passages indexed before (so searches find something)")
    parser.add_argument("--idle", type=float, default=30.0, help="seconds of searching idle, before and after")
    parser.add_argument("--run", type=float, default=3.0, help="seconds the sync runs between two waits")
    parser.add_argument("--pause", type=float, default=1.5,
                        help="seconds it waits (below the vector sidecar's 2 s before a save)")
    parser.add_argument("--no-yield", action="store_true",
                        help="the sync (and the keyword sidecar's build) neither waits for searches nor runs niced (compare)")
    parser.add_argument("--switch", type=float, default=None,
                        help="Python's thread switch interval, seconds (sys.setswitchinterval; Python's default 0.005)")
    parser.add_argument("--upstream", action="store_true",
                        help="embed through an OpenAI-compatible upstream on 127.0.0.1 that answers at once")
    parser.add_argument("--serve-embeddings", type=int, metavar="PORT", help=argparse.SUPPRESS)  # --upstream's server
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    if args.serve_embeddings:
        serve_embeddings(args.serve_embeddings)
        return
    if args.switch is not None:
        sys.setswitchinterval(args.switch)

    texts = passages(args.data, args.seed + args.passages, seed=5)
    claims = [json.loads(line)["text"] for line in (args.data / "queries.jsonl").open()]
    actor = Actor.local_owner("default")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        src = tmp / "folder"
        write_files(src, texts[: args.seed], "a")
        core = Astralyx(Settings.load(tmp / "home", yield_to_searches=not args.no_yield)).start()
        if args.no_yield:
            core.documents.jobs.nice = 0
        deployment, upstream = "e5-small", None
        if args.upstream:
            upstream, url = start_upstream()
            atexit.register(upstream.kill)  # whatever ends the bench (a failed assertion too) ends its server
            deployment = "fast-upstream"
            core.deployments.put(None, "default", deployment, DeploymentSpec.model_validate(
                {"model": "fast", "kind": "embedding", "runtime": {"type": "upstream", "url": url}}))
        spec = {"sources": [{"folder": str(src)}], "embedding": {"deployment": deployment}}
        core.bases.create(actor, parse_request({"metadata": {"name": "docs"}, "spec": spec}))
        core.documents.sync(actor, "docs")
        gate = Gate(core.runtimes.embedder("default", deployment))
        core.index.embedder_for = lambda base: gate  # the seam for a base's embedder
        model = gate.name
        keywords = core.index.store(core.bases.get(actor, "docs")).keywords
        gate.hold_build(keywords)
        if args.no_yield:
            keywords.nice = 0  # its build neither (it yields through `Index.yield_to_searches`, off)
        if args.seed > (core.index.keywords_from or args.seed):
            raise SystemExit("the seed is past keywords_from: its sidecar would be built before the sync")

        n = 0

        def search() -> float:
            nonlocal n
            n += 1
            query = claims[n % len(claims)] + ("" if n < len(claims) else f" {n}")  # never a cached embedding
            start = time.perf_counter()
            core.search.search(actor, "docs", query)
            return time.perf_counter() - start

        built: list[float] = []  # searches while the keyword sidecar's build ran (at their start or end)
        after: list[float] = []  # searches once it was built (each write of the sync then committed to it too)

        def loop(seconds: float, until: threading.Event | None = None) -> list[float]:
            out: list[float] = []
            end = time.monotonic() + seconds
            while time.monotonic() < end and not (until is not None and until.is_set() and not keywords.building):
                building, ready = keywords.building, keywords.ready
                out.append(search())
                if until is not None and (building or keywords.building):
                    built.append(out[-1])
                elif until is not None and ready:
                    after.append(out[-1])
                time.sleep(THINK)
            return out

        def busy() -> bool:
            """The sync, or the keyword sidecar's build it left to the background, is under way."""
            return not job.done.is_set() or keywords.building

        def stood_still() -> bool:
            """At the gate: the sync (or done) and the build (or none)."""
            sync = gate.parked.is_set() or job.done.is_set()
            return sync and (gate.build_parked.is_set() or not keywords.building)

        loop(5)  # warm: pages, statements, the model
        idle_before = loop(args.idle)

        write_files(src, texts[args.seed :], "b")
        first_new = texts[args.seed]
        job, _ = core.documents.start(actor, "docs")
        started = time.monotonic()
        first_seen: list[float] = []
        notes: list[tuple[float, float]] = []  # (write seconds, seconds until searchable)

        def watcher() -> None:
            """When the sync's first new document answers, and notes written during it."""
            while not job.done.is_set() and not first_seen:
                hits = core.search.search(actor, "docs", first_new[:200]).results
                if any(h.document.startswith("docs:docs/b") for h in hits):
                    first_seen.append(time.monotonic() - started)
                time.sleep(0.5)
            for i in range(5):
                if job.done.wait(20):
                    return
                word = f"zyxnote{i}q"
                t = time.perf_counter()
                core.notes.write(actor, "docs", "notes", f"during-{i}.md", f"# Note {i}\n\nThe code word is {word}.\n")
                wrote = time.perf_counter() - t
                note = f"notes:docs/during-{i}.md"
                while note not in [r.document for r in core.search.search(actor, "docs", word).results]:
                    time.sleep(0.05)
                notes.append((wrote, time.perf_counter() - t))

        watching = threading.Thread(target=watcher, daemon=True)
        watching.start()
        during: list[float] = []
        waiting: list[float] = []
        waited = 0.0
        while busy():
            during += loop(args.run, until=job.done)
            gate.open.clear()
            while busy() and not stood_still():  # its embedding call (or the build's step) under way ends
                search()
                time.sleep(THINK)
            if busy():
                stopped = time.monotonic()
                waiting += loop(args.pause)
                waited += time.monotonic() - stopped
            gate.open.set()
        sync_s = time.monotonic() - started
        watching.join(30)
        report = core.documents.wait(job)
        assert report is not None and report["added"] == args.passages // PER_FILE, report
        assert waiting, "the sync never waited at the gate (its thread is no longer named sync:…?)"
        builds = keywords.builds
        # idle: once what the sync leaves to the background is done (the keyword sidecar, built past
        # 10,000 passages, and the vector sidecar's save), as a base is a few seconds after its sync
        store = core.index.store(core.bases.get(actor, "docs"))
        store.keywords.ensure(store.keywords_generation)
        store.keywords.wait()
        sidecar = store.vectors_sidecar()
        if sidecar is not None:
            sidecar.wait()
            sidecar.save()
        idle_after = loop(args.idle)
        core.close()
        if upstream is not None:
            upstream.terminate()
            upstream.wait(10)

    rate = args.passages / (sync_s - waited)
    ratio = pct(during, 95) / pct(waiting, 95)
    rows = [
        (f"idle, before ({args.seed:,} passages)", idle_before),
        ("the sync running", during),
        ("the sync waiting (interleaved)", waiting),
        (f"idle, after ({args.seed + args.passages:,} passages)", idle_after),
    ]
    if built:
        rows.insert(2, ("… of which, the keyword sidecar's first build running", built))
    if after:
        rows.insert(3 if built else 2, ("… of which, the keyword sidecar built (the sync's writes committed to it)", after))
    table = ["| searches | n | p50 | p95 | max |", "|---|---:|---:|---:|---:|"]
    for name, values in rows:
        table.append(f"| {name} | {len(values)} | {pct(values, 50):.0f} ms | {pct(values, 95):.0f} ms | "
                     f"{max(values) * 1000:.0f} ms |")
    note_text = (
        ", ".join(f"{w * 1000:.0f} ms / {s:.1f} s" for w, s in notes) if notes else "none (the sync ended first)"
    )
    flag = (" --no-yield" if args.no_yield else "") + (f" --switch {args.switch:g}" if args.switch is not None else "")
    flag += " --upstream" if args.upstream else ""
    first_text = f"{first_seen[0]:.1f} s" if first_seen else "(never seen before it ended)"
    body = (
        f"`flock /tmp/astralyx-bench.lock .venv/bin/python bench/sync_search.py --passages {args.passages} "
        f"--seed {args.seed} --run {args.run:g} --pause {args.pause:g}{flag} --write` ({time.strftime('%Y-%m-%d')}): "
        f"a base of `{model}` ("
        + ("an upstream deployment: a server on 127.0.0.1, a process of its own, answering at once"
           if args.upstream else "the default embedder")
        + f", query embedding included in every search) with {args.seed} "
        f"passages indexed; its folder then gets {args.passages:,} more (SciFact text, {PER_FILE} passages a file) "
        f"and its sync job runs while one loop searches (`core.search.search`, a SciFact claim, "
        f"{THINK * 1000:.0f} ms between searches); the sync runs {args.run:g} s, waits {args.pause:g} s, and so on "
        f"to its end.\n\n"
        + "\n".join(table)
        + f"\n\n**p95 while the sync runs / while it waits, interleaved: {ratio:.2f}×** (target ≤ 2×; against "
        f"idle before: {pct(during, 95) / pct(idle_before, 95):.2f}×, idle after: "
        f"{pct(during, 95) / pct(idle_after, 95):.2f}×). The sync: {sync_s:.0f} s ({waited:.0f} s of it waiting), "
        f"{rate:.1f} passages/s while searched; its first new document searchable after {first_text}"
    )
    if built:
        body += (f". The keyword sidecar was built {builds}× during it: p95 while it was built / while the sync "
                 f"waits: {pct(built, 95) / pct(waiting, 95):.2f}×")
    body += (
        f". Notes written during the sync (write call / until a search finds it): {note_text}.\n\n"
        f"On {os.cpu_count()} cores shared with other work; compare within the run."
    )
    print(body)
    if args.write:
        title = "Search during a sync (`bench/sync_search.py`)" + (", the sync not yielding" if args.no_yield else "")
        title += ", an upstream embedder answering at once" if args.upstream else ""
        write_section(title, body)


if __name__ == "__main__":
    main()
