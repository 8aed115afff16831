"""Chunking time against text size: one long line, many paragraphs, and a heading line of spaces.

Linear means each doubling of the text about doubles the time. The inputs are the hard cases a
reviewer found (a 20 MiB single-line .md pinned a core for over a minute): a paragraph with no
blank line to split at, and an ATX heading whose title is a long run of spaces (a backtracking
regex once read it in time proportional to the square of its length); and a text whose every
paragraph is a label ("Label 7:"), each joined to the next (joined once, not copied for each).

    .venv/bin/python bench/chunking.py [--sizes 1 2 4 8] [--write]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from astralyx.metis.parsing import MAX_TEXT_CHARS, parse_file  # noqa: E402

MIB = 1024 * 1024
WORDS = "the of and to in a is that for it as was with be by on not he this are or from at which".split()


def one_line(size: int) -> str:
    rng = random.Random(7)
    out, n = [], 0
    while n < size:
        word = rng.choice(WORDS) + rng.choice(["", "", "", ".", ","])
        out.append(word)
        n += len(word) + 1
    return " ".join(out)[:size]


def paragraphs(size: int) -> str:
    line = one_line(size)
    return "\n\n".join(line[i : i + 400] for i in range(0, len(line), 400))


def heading_of_spaces(size: int) -> str:
    return "# a" + " " * (size - 4) + "b"


def labels(size: int) -> str:
    """Every paragraph a label ('Label 7:'): each is joined to the next, the whole text one run."""
    out, n, i = [], 0, 0
    while n < size:
        out.append(f"Label {i}:\n\n")
        n += len(out[-1])
        i += 1
    return "".join(out)[:size]


CASES = {"one line": one_line, "paragraphs of 400": paragraphs, "a heading of spaces": heading_of_spaces,
         "every paragraph a label": labels}


def timed(text: str, runs: int = 3) -> tuple[float, int]:
    """The best of a few runs (the machine is shared), and the passages made."""
    data = text.encode()
    best, chunks = float("inf"), 0
    for _ in range(runs):
        start = time.perf_counter()
        chunks = len(parse_file("docs:bench/x.md", "x.md", data).chunks)
        best = min(best, time.perf_counter() - start)
    return best, chunks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 2, 4, 8], help="MiB of text")
    parser.add_argument("--write", action="store_true", help="print the markdown table for docs/benchmarks.md")
    args = parser.parse_args()
    rows = []
    for name, make in CASES.items():
        previous = None
        for mib in args.sizes:
            size = int(mib * MIB)
            if size > MAX_TEXT_CHARS:
                continue
            seconds, chunks = timed(make(size))
            ratio = "" if previous is None else f"{seconds / previous:.1f}×"
            previous = seconds
            rows.append((name, mib, chunks, seconds, ratio))
            print(f"{name:<22} {mib:>5} MiB  {chunks:>7} passages  {seconds:7.2f} s  {ratio}", flush=True)
    if args.write:
        print("\n| Text (.md) | Size | Passages | Time (parse + chunk) | Against half the size |")
        print("|---|---:|---:|---:|---:|")
        for name, mib, chunks, seconds, ratio in rows:
            print(f"| {name} | {mib:g} MiB | {chunks:,} | {seconds:.2f} s | {ratio or '–'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
