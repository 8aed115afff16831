"""Import a chat archive: the job's own cost per conversation, with a fast scripted extractor.

A ChatGPT export of `--conversations` conversations (10 messages each, ~2,500 characters) is uploaded to a memory
(`core.imports.create`: read, checked, listed), every conversation chosen, and the job followed as the CLI
follows it (a look a second) until it ends; then the review of every proposal is computed. The extractor is a
scripted OpenAI-compatible server on 127.0.0.1 (tests/scripted_openai.py) answering at once with two facts per
conversation, so what is measured is the job: the wall time per conversation minus the extractor's own time
(its HTTP round trip included, as the job measures it: `model_seconds`), and the process's peak RSS growth.

    flock /tmp/astralyx-bench.lock .venv/bin/python bench/import_archive.py [--conversations 200] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from astralyx.auth.actor import Actor  # noqa: E402
from astralyx.config import Settings  # noqa: E402
from astralyx.core import Astralyx  # noqa: E402
from astralyx.eos.deployments import parse_spec  # noqa: E402
from astralyx.metis.bases import parse_request  # noqa: E402
from tests.metis.extract.archives_kit import chatgpt_conversation, zipped  # noqa: E402
from tests.scripted_openai import ScriptedOpenAI  # noqa: E402

DOC = ROOT / "docs" / "benchmarks.md"
START, END = "<!-- import_archive: start -->", "<!-- import_archive: end -->"


def answer(request: dict) -> str:
    text = request["messages"][-1]["content"]
    n = text.split("person ", 1)[1].split(" ", 1)[0] if "person " in text else "0"
    return json.dumps({"facts": [
        {"subject": f"Person {n}", "attribute": "city", "fact": f"Person {n} lives in City {n}.", "message": 1},
        {"subject": "Ana", "attribute": "project", "fact": f"Ana works on project {n}.", "message": 1}]})


def _read_count(folder: Path) -> int:
    try:
        return (folder / "proposals.jsonl").read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run(count: int) -> dict[str, float]:
    home = Path(tempfile.mkdtemp()) / "home"
    os.environ["ASTRALYX_HOME"] = str(home)
    os.environ.setdefault("ASTRALYX_TOKEN", "bench")
    owner = Actor.local_owner("default")
    with ScriptedOpenAI() as server:
        server.reply(answer, always=True)
        core = Astralyx(Settings.load(home)).start()
        try:
            spec = {"model": "scripted", "kind": "chat", "runtime": {"type": "upstream", "url": server.url}}
            core.deployments.put(None, "default", "extractor", parse_spec(spec))
            core.bases.create(owner, parse_request({"metadata": {"name": "team"}, "spec": {
                "kind": "memory", "sources": [], "extractor": {"deployment": "extractor"}}}))
            turns = [("user", "Hello, person {i} moved to a new city. " + "Some words about it. " * 10),
                     ("assistant", "Noted. " * 20)] * 5
            data = zipped([chatgpt_conversation(f"c{i}", f"chat {i}", f"2026-01-{1 + i % 28:02d} 10:00",
                                                [(r, t.replace("{i}", str(i))) for r, t in turns]) for i in range(count)])
            base_rss = rss_mb()
            t0 = time.perf_counter()
            job, _ = core.imports.create(owner, "team", data, "export.zip")
            t1 = time.perf_counter()
            core.imports.start(owner, "team", job.id, everything=True)
            folder = core.bases.find("default", "team").folder / ".imports" / job.id
            looked = time.perf_counter()
            # Followed once a second (as the CLI does); its end seen within 20 ms (the last conversation's line).
            while _read_count(folder) < count:
                if time.perf_counter() - looked >= 1.0:
                    core.imports.get(owner, "team", job.id)
                    looked = time.perf_counter()
                time.sleep(0.02)
            t2 = time.perf_counter()
            while core.imports.get(owner, "team", job.id).state == "running":
                time.sleep(0.02)
            lines = [json.loads(line) for line in (folder / "proposals.jsonl").read_text().splitlines()]
            model = sum(line.get("model_seconds", 0.0) for line in lines)
            t3 = time.perf_counter()
            done = core.imports.get(owner, "team", job.id)
            t4 = time.perf_counter()
            assert done.state == "finished" and done.progress.done == count and done.review is not None, done.state
            return {"conversations": count, "zip_kb": len(data) / 1024, "upload_s": t1 - t0, "read_s": t2 - t1,
                    "model_s": model, "overhead_ms": (t2 - t1 - model) / count * 1000, "proposals": done.review.count,
                    "review_s": t4 - t3, "rss_growth_mb": rss_mb() - base_rss}
        finally:
            core.close()


def report(r: dict[str, float]) -> str:
    return "\n".join([
        "## Import a chat archive: the job's own cost (`bench/import_archive.py`)",
        "",
        f"`.venv/bin/python bench/import_archive.py --conversations {r['conversations']:.0f}` "
        f"({time.strftime('%Y-%m-%d')}, 2 CPU cores shared with other work), a ChatGPT export of "
        f"{r['conversations']:.0f} conversations ({r['zip_kb']:.0f} KB zipped), every one chosen, a scripted extractor "
        "answering at once (two facts each), the job followed once a second:",
        "",
        "| upload + list | read (wall) | extractor (its calls) | job's own time per conversation | review of proposals "
        "| peak RSS growth |",
        "|---|---|---|---|---|---|",
        f"| {r['upload_s']:.2f} s | {r['read_s']:.1f} s | {r['model_s']:.1f} s | **{r['overhead_ms']:.0f} ms** | "
        f"{r['proposals']:.0f} in {r['review_s']:.2f} s | {r['rss_growth_mb']:.0f} MB |",
        "",
        "The job's own time is the wall time less the extractor's calls: reading the conversation from the job's file, "
        "the prompt, the proposals appended to proposals.jsonl (one line per conversation, on disk before the next), "
        "progress written at most once a second. A real extractor on a CPU takes seconds to minutes per conversation: "
        "the job's part is lost in it.",
        "",
    ])


def write(section: str) -> None:
    text = DOC.read_text() if DOC.exists() else "# Benchmarks\n"
    block = f"{START}\n{section}{END}"
    if START in text and END in text:
        text = text[: text.index(START)] + block + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + block + "\n"
    DOC.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--write", action="store_true", help="Write the results into docs/benchmarks.md")
    args = parser.parse_args()
    section = report(run(args.conversations))
    print(section)
    if args.write:
        write(section)


if __name__ == "__main__":
    main()
