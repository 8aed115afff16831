"""An experiment, not the product: LoCoMo's turns embedded with the turn said before them.

Measures what issue 32's next step would gain before building it: each turn note "Speaker (date): text" is embedded
as "<the turn before it>\\n<its text>" instead of "<its note's name>\\n<its text>" (a note without a title is named by
its file, D1-7, which says nothing). `--variant bare` embeds the text alone, to tell the two apart. The product's
`embedding_text` is replaced in this process only (the stored text, the keyword index and the answer are the same);
the turns bases are built again in a copy of the bench's home, then searched as `bench/locomo_search.py` does.

    flock /tmp/astralyx-bench.lock .venv/bin/python bench/locomo_turn_context.py --home /tmp/locomo-context \\
        --from-home /tmp/locomo-home [--variant bare]

Building it into the product needs a rule for staleness (a turn's vector depends on the note before it: writing
turn n embeds turn n+1 again, and a sync counts a changed turn's successor as changed); see docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import astralyx.metis.index.service as service  # noqa: E402
from astralyx.auth.actor import Actor  # noqa: E402
from astralyx.config import Settings  # noqa: E402
from astralyx.core import Astralyx  # noqa: E402
from astralyx.metis.bases import parse_request  # noqa: E402
from astralyx.metis.chunking import Chunk  # noqa: E402
from astralyx.metis.index import passages  # noqa: E402
from bench import locomo_search as locomo  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, required=True, help="where the experiment's bases are kept")
    parser.add_argument("--from-home", type=Path, help="a locomo_search --keep-home folder to start from (its facts)")
    parser.add_argument("--variant", choices=("before", "bare"), default="before")
    args = parser.parse_args()
    convs = list(locomo.conversations(locomo.DATA))
    if not args.home.exists() and args.from_home:
        shutil.copytree(args.from_home, args.home)

    said_before: dict[str, str | None] = {}  # a turn's text → the turn before it (None: a conversation's first)
    for conv in convs:
        last = None
        for session in conv["sessions"]:
            for turn in session["turns"]:
                text = locomo.turn_text(turn, session["when"])
                said_before[text], last = last, text

    def embedding_text(title: str, chunk: Chunk) -> str:
        if chunk.text not in said_before:  # not a turn: as the product embeds it
            return passages.embedding_text(title, chunk)
        if args.variant == "bare":
            return chunk.text
        context = said_before[chunk.text]
        return chunk.text if context is None else f"{context}\n{chunk.text}"

    service.embedding_text = embedding_text  # this process only: the experiment
    core = Astralyx(Settings.load(args.home, sync_on_start=False)).start()
    actor = Actor.local_owner("default")
    try:
        for conv in convs:
            name, done = f"locomo-{conv['index']}-turns", args.home / f"turns-{args.variant}-{conv['index']}"
            if done.exists():
                continue
            if core.bases.find("default", name) is not None:
                core.bases.delete(actor, name)
            request = {"metadata": {"name": name}, "spec": {"kind": "documents", "sources": []}}
            core.bases.create(actor, parse_request(request), default_embedding=True)
            started = time.perf_counter()
            for session in conv["sessions"]:
                for turn in session["turns"]:
                    path = turn["dia_id"].replace(":", "-") + ".md"
                    core.notes.write(actor, name, "notes", path, locomo.turn_text(turn, session["when"]))
            done.touch()
            print(f"conversation {conv['index']}: turns embedded in {time.perf_counter() - started:.0f} s", flush=True)
        results = locomo.evaluate(core, convs, ("turns",))
        for half in ("all", "test", "dev"):
            print(f"\n{half}:")
            print("\n".join(locomo.table(results, half, ("turns",))))
    finally:
        core.close()


if __name__ == "__main__":
    main()
