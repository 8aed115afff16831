"""Labels kept with what they introduce: git's release notes, before and after, two ways.

1. Every label of the folder (a line ending in ':', a list item's or not, then a blank line and a
   paragraph): is the label in the same passage as the first line of what it introduces?
2. A question per security advisory (`* CVE-2022-23521:`, its description below): search a base of
   the folder by keywords for the id; is a passage among the first three (among the eight a model
   gets) the one with the id and its description's first line?

"Before" is the chunker of a git revision (its chunking.py read from `git show`), "after" this one.

    .venv/bin/python bench/chunk_labels.py [--folder /usr/share/doc/git/RelNotes] [--before bfa6a54] [--write]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from astralyx.auth.actor import Actor  # noqa: E402
from astralyx.config import Settings  # noqa: E402
from astralyx.core import Astralyx  # noqa: E402
from astralyx.metis import parsing  # noqa: E402
from astralyx.metis.bases import parse_request  # noqa: E402
from astralyx.metis.parsing import parse_file, supported  # noqa: E402
from bench.scifact import write_section  # noqa: E402

FOLDER = Path("/usr/share/doc/git/RelNotes")
BEFORE = "bfa6a54"  # the last commit whose chunker left a label at the end of a passage
LABEL = re.compile(r"^\s*(?:[*+-]\s+\S.*|\S.{0,78}):\s*$")  # `* CVE-2022-23521:`, `Fixes since v2.30.6:`
ADVISORY = re.compile(r"^\s*\*\s+(CVE-\d{4}-\d+):\s*$")
OWNER = Actor.local_owner("default")


def labels(folder: Path) -> list[tuple[Path, str, str]]:
    """(file, label line, the first line of the paragraph below it) for every label of the folder."""
    found = []
    for file in sorted(folder.rglob("*")):
        if not file.is_file() or not supported(file.name):
            continue
        lines = file.read_text(errors="replace").splitlines()
        for i, line in enumerate(lines):
            if not LABEL.match(line):
                continue
            after = next((nxt for nxt in lines[i + 1 : i + 4] if nxt.strip()), None)
            underline = after is not None and set(after.strip()) <= set("=-")
            if after is not None and lines[i + 1].strip() == "" and not LABEL.match(after) and not underline:
                found.append((file, line.strip(), after.strip()))
    return found


def use_chunker(rev: str | None) -> None:
    """parse_file cuts passages with the chunker of git revision `rev` (None: this one)."""
    from astralyx.metis import chunking

    module = chunking
    if rev is not None:
        source = subprocess.run(["git", "show", f"{rev}:astralyx/metis/chunking.py"], cwd=ROOT, check=True,
                                capture_output=True, text=True).stdout
        module = types.ModuleType(f"chunking_{rev}")
        sys.modules[module.__name__] = module  # its dataclasses look their module up
        exec(compile(source, f"{rev}:chunking.py", "exec"), module.__dict__)  # noqa: S102 - our own file, at a revision
    for name in ("markdown_blocks", "text_blocks", "pack"):
        setattr(parsing, name, getattr(module, name))


def kept_together(folder: Path, found: list[tuple[Path, str, str]]) -> tuple[int, int]:
    """(labels in the same passage as their text, passages of the folder)."""
    parsed = {file: parse_file(f"docs:bench/{file.name}", file.name, file.read_bytes()).chunks
              for file in sorted(folder.rglob("*")) if file.is_file() and supported(file.name)}
    passages = sum(len(chunks) for chunks in parsed.values())
    together = 0
    for file, label, after in found:
        together += any(label in c.text and after in c.text[c.text.index(label) :] for c in parsed[file])
    return together, passages


def advisories(found: list[tuple[Path, str, str]]) -> list[tuple[str, str]]:
    """(CVE id, its description's first line), once per id."""
    seen: dict[str, str] = {}
    for _, label, after in found:
        m = ADVISORY.match(label)
        if m and m[1] not in seen:
            seen[m[1]] = after
    return sorted(seen.items())


def answered(folder: Path, questions: list[tuple[str, str]]) -> tuple[int, int, float]:
    """(questions whose first three passages hold the id with its description, whose eight do, seconds to index)."""
    with tempfile.TemporaryDirectory() as tmp:
        core = Astralyx(Settings.load(Path(tmp) / "home")).start()
        try:
            spec = {"sources": [{"folder": str(folder)}], "embedding": None}
            core.bases.create(OWNER, parse_request({"metadata": {"name": "gitdocs"}, "spec": spec}))
            start = time.perf_counter()
            core.documents.sync(OWNER, "gitdocs")
            seconds = time.perf_counter() - start
            top3 = top8 = 0
            for cve, first_line in questions:
                results = core.search.search(OWNER, "gitdocs", cve).results
                hits = [f"{cve}:" in r.text and first_line in r.text for r in results]
                top3 += any(hits[:3])
                top8 += any(hits)
        finally:
            core.close()
    return top3, top8, seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", type=Path, default=FOLDER, help="a folder of text files with labels")
    parser.add_argument("--before", default=BEFORE, help="the git revision whose chunker is 'before'")
    parser.add_argument("--write", action="store_true", help="write the section of docs/benchmarks.md")
    args = parser.parse_args()
    if not args.folder.is_dir():
        print(f"{args.folder} is not here (Debian's git package puts git's release notes there): give --folder")
        return 2
    found = labels(args.folder)
    questions = advisories(found)
    rows = []
    for name, rev in (("before", args.before), ("after", None)):
        use_chunker(rev)
        together, passages = kept_together(args.folder, found)
        top3, top8, seconds = answered(args.folder, questions)
        rows.append((name, together, passages, top3, top8))
        print(f"{name:<7} labels with their text {together}/{len(found)}  advisories answered {top3}/{len(questions)} "
              f"(top 3), {top8}/{len(questions)} (top 8)  passages {passages:,}  sync {seconds:.1f} s", flush=True)
    if args.write:
        files = sum(1 for f in args.folder.rglob("*") if f.is_file() and supported(f.name))
        body = [
            f"`.venv/bin/python bench/chunk_labels.py --write` ({time.strftime('%Y-%m-%d')}): {args.folder}, "
            f"{files} files. A label is a line ending in ':' (`* CVE-2022-23521:`, `Fixes since v2.30.6:`), a blank "
            f"line, then its text "
            f"({len(found)} in the folder); an advisory question searches (keywords) for a CVE id of a `* CVE-…:` item "
            f"({len(questions)}) and counts it answered when one of the first three passages (of the eight a model "
            f"gets) holds the id and its description's first line. Before: the chunker of {args.before}. The "
            "advisories missed after are ranking, not chunking: shorter notes naming the id in their first line "
            "rank first.",
            "",
            "| Chunker | Labels with their text | Advisories answered, top 3 | … in the 8 answered | Passages |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, together, passages, top3, top8 in rows:
            body.append(f"| {name} | {together} of {len(found)} ({together / len(found):.0%}) | "
                        f"{top3} of {len(questions)} | {top8} of {len(questions)} | {passages:,} |")
        write_section("Chunking: a label stays with what it introduces (`bench/chunk_labels.py`)", "\n".join(body))
    return 0


if __name__ == "__main__":
    sys.exit(main())
