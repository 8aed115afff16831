"""`python -m bench [NAME ...]`: run the benchmarks in bench/ (all, or the ones named), one after another."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    available = sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))
    chosen = argv or available
    unknown = [n for n in chosen if n not in available]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; there are: {', '.join(available)}", file=sys.stderr)
        return 2
    failed = []
    for name in chosen:
        print(f"== bench/{name}.py", flush=True)
        if subprocess.call([sys.executable, str(HERE / f"{name}.py")]) != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
