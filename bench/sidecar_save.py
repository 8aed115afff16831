"""How long a save of the vector sidecar stops the rest of the process.

usearch's `Index.save` holds Python's GIL for the whole write, so while the HNSW sidecar is saved (a timer
after a sync's writes, spaced by SAVE_SPACING) no other Python thread of the server runs: searches,
requests, the sync itself. This measures it on the product's own sidecar (`VectorSidecar`, built by
`vectors._new_index`, saved by `VectorSidecar.save`): a ticker thread wakes every millisecond, and its
longest gap during a save is how long a request would have stood still. Also: the same graph serialised
to memory first (`Index.save()` to bytes) and written out by Python (GIL released while writing), a
candidate fix, interleaved with the product's save.

Vectors are random unit vectors (the graph's size, not its quality, is what a save costs).

    flock /tmp/astralyx-bench.lock .venv/bin/python bench/sidecar_save.py [--vectors 100000] [--rounds 3] [--write]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from astralyx.metis.index import vectors  # noqa: E402
from bench.scifact import write_section  # noqa: E402

DIMENSIONS = 384


def longest_pause(work) -> tuple[float, float]:
    """(seconds `work()` took, the longest another thread waited to run meanwhile)."""
    gaps: list[float] = []
    stop = threading.Event()

    def tick() -> None:
        last = time.perf_counter()
        while not stop.is_set():
            time.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    time.sleep(0.1)
    start = time.perf_counter()
    work()
    took = time.perf_counter() - start
    time.sleep(0.05)
    stop.set()
    ticker.join()
    return took, max(gaps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()

    rng = np.random.default_rng(5)
    data = rng.standard_normal((args.vectors, DIMENSIONS)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    ids = np.arange(1, args.vectors + 1, dtype=np.int64)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sidecar = vectors.VectorSidecar(
            folder / "index.vectors.usearch", "bench", DIMENSIONS, lambda: (1, ids, data), lambda: args.vectors,
        )
        start = time.monotonic()
        sidecar.ensure(1)
        sidecar.wait()
        built = time.monotonic() - start
        size = 0

        def product() -> None:
            sidecar._dirty = True  # a change since the last save, as after a sync's writes
            sidecar.save()

        def via_memory() -> None:
            nonlocal size
            data = sidecar._index.save()  # bytes: the GIL is held while they are made
            size = len(data)
            with open(folder / "copy.usearch", "wb") as f:  # written with the GIL released
                f.write(data)
                f.flush()
                os.fsync(f.fileno())

        rows: dict[str, list[tuple[float, float]]] = {"the product's save": [], "to memory, then written": []}
        for r in range(args.rounds):
            for name, work in (("the product's save", product), ("to memory, then written", via_memory)):
                took, paused = longest_pause(work)
                rows[name].append((took, paused))
                print(f"round {r + 1} {name:24} save {took:.3f} s, longest pause of another thread {paused:.3f} s",
                      flush=True)
        file_size = (folder / "index.vectors.usearch").stat().st_size
        sidecar.close(save=False)

    table = ["| save | took (median) | another thread stood still (median, max) |", "|---|---:|---:|"]
    for name, runs in rows.items():
        took = float(np.median([t for t, _ in runs]))
        paused = [p for _, p in runs]
        table.append(f"| {name} | {took:.2f} s | {float(np.median(paused)):.2f} s, {max(paused):.2f} s |")
    body = (
        f"`flock /tmp/astralyx-bench.lock .venv/bin/python bench/sidecar_save.py --vectors {args.vectors} "
        f"--rounds {args.rounds} --write` ({time.strftime('%Y-%m-%d')}): the vector sidecar of {args.vectors:,} "
        f"random unit vectors of {DIMENSIONS} dimensions (built in {built:.0f} s; {file_size / 1e6:.0f} MB on disk), "
        f"saved {args.rounds} times each way, interleaved; a ticker thread wakes every millisecond.\n\n"
        + "\n".join(table)
        + f"\n\nOn {os.cpu_count()} cores; compare within the run."
    )
    print(body)
    if args.write:
        write_section("Vector sidecar saves stop the process (`bench/sidecar_save.py`)", body)


if __name__ == "__main__":
    main()
