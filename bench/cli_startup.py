"""How long a local `astra` command takes from start to answer, side by side for several checkouts.

Each round runs every command once per checkout, interleaved, in fresh processes with the same Python;
the medians and the ratio to the first checkout are printed. A local command opens the data directory and
answers through the app in process, so it measures imports, opening and one request.

The commands run in a temporary directory (a checkout as the working directory would come first on sys.path
and be what every column measures) with each checkout's bytecode cached there in the first, untimed run, as
an installed package has it (PYTHONDONTWRITEBYTECODE in the environment would compile every module each time).

    .venv/bin/python bench/cli_startup.py --tree /path/to/old/checkout --tree . [--rounds 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

COMMANDS = [["--help"], ["metis", "bases"], ["eos", "deployments", "--no-health"]]


def run(tree: str, args: list[str], home: str) -> float:
    work = os.path.dirname(home)
    env = {**os.environ, "PYTHONPATH": tree, "ASTRALYX_HOME": home, "ASTRALYX_TOKEN": "bench-token",
           "PYTHONPYCACHEPREFIX": os.path.join(work, "pycache")}
    env.pop("ASTRALYX_API", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "astralyx", *args], env=env, cwd=work, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", action="append", required=True, help="A checkout to measure (repeat)")
    parser.add_argument("--rounds", type=int, default=15)
    opts = parser.parse_args()
    opts.tree = [os.path.abspath(tree) for tree in opts.tree]
    with tempfile.TemporaryDirectory() as tmp:
        homes = {tree: os.path.join(tmp, str(i)) for i, tree in enumerate(opts.tree)}
        for tree in opts.tree:  # the data directory is created once, outside the timing
            run(tree, ["metis", "bases"], homes[tree])
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(opts.rounds):
            for args in COMMANDS:
                for tree in opts.tree:
                    times.setdefault((tree, " ".join(args)), []).append(run(tree, args, homes[tree]))
    first = opts.tree[0]
    print(f"{'command':<28} " + " ".join(f"{t[-24:]:>26}" for t in opts.tree))
    for args in COMMANDS:
        name = " ".join(args)
        base = statistics.median(times[(first, name)])
        cells = []
        for tree in opts.tree:
            median = statistics.median(times[(tree, name)])
            cells.append(f"{median:6.2f} s ({median / base:4.2f}x)".rjust(26))
        print(f"astra {name:<22} " + " ".join(cells))


if __name__ == "__main__":
    main()
