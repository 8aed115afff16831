"""Helpers of the index, search and sync tests: a real Embedder of concepts, bases, folders, waits."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from astralyx.auth.actor import Actor
from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.eos.deployments import DeploymentSpec
from astralyx.eos.runtimes.base import Embedder
from astralyx.metis.bases import parse_request
from astralyx.metis.search import SearchResult

# Words that mean the same thing land on the same dimension: what a real model does for synonyms.
CONCEPTS = {"automobile": "car", "cars": "car", "vehicle": "car", "holiday": "vacation", "holidays": "vacation"}


class ConceptEmbedder(Embedder):
    """A real Embedder: bag of concepts hashed into a small space, unit length."""

    def __init__(self, dimensions: int = 64, name: str = "concepts") -> None:
        self.dimensions = dimensions
        self.name = name
        self.calls = 0

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dimensions, dtype=np.float32)
        for word in re.findall(r"\w+", text.lower()):
            word = CONCEPTS.get(word, word)
            v[sum(map(ord, word)) * 7919 % self.dimensions] += 1.0
        n = np.linalg.norm(v)
        return v / n if n else v

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dimensions), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)


def owner(workspace: str = "default") -> Actor:
    return Actor.local_owner(workspace)


def make_base(core, name: str, *, embedder: Embedder | None = None, sources=(), kind: str = "documents"):
    """A base; with an embedder, its spec names an embedding deployment and the index uses that embedder."""
    spec: dict = {"kind": kind, "sources": [{"folder": str(s)} for s in sources]}
    if embedder is not None:
        if core.deployments.find("default", "e5") is None:
            core.deployments.put(None, "default", "e5", DeploymentSpec(model="multilingual-e5-small", kind="embedding"))
        spec["embedding"] = {"deployment": "e5"}
        core.index.embedder_for = lambda base: embedder if base.spec.embedding else None
    return core.bases.create(owner(), parse_request({"metadata": {"name": name}, "spec": spec}))


def labels(answer: SearchResult | dict) -> list[str]:
    """The documents a search answered, in order: the domain's answer, or the API's JSON."""
    if isinstance(answer, dict):
        return [r["document"] for r in answer["results"]]
    return [r.document for r in answer.results]


class GatedEmbedder(ConceptEmbedder):
    """Holds the first batch of passages until the test lets it go: a sync caught in the middle."""

    def __init__(self) -> None:
        import threading

        super().__init__()
        self.entered = threading.Event()
        self.release = threading.Event()

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if not self.entered.is_set():  # the first call only: others (a note indexed meanwhile) go through
            self.entered.set()
            self.release.wait(30)
        return super().embed_passages(texts)


@contextmanager
def sync_held(core, tmp_path, name: str = "busy") -> Iterator[list[str]]:
    """A base `name` (a source folder with a.md) whose sync is held in its first embedding: the body runs
    mid-sync; on leaving, the sync goes on and finishes. Yields the order of events ("synced" last)."""
    import threading

    src = tmp_path / "docs"
    src.mkdir()
    (src / "a.md").write_text("# A\n\nalpha text\n")
    gated = GatedEmbedder()
    make_base(core, name, embedder=gated, sources=[src])
    order: list[str] = []
    sync = threading.Thread(target=lambda: (core.documents.sync(owner(), name), order.append("synced")))
    sync.start()
    assert gated.entered.wait(30)
    try:
        yield order
    finally:
        gated.release.set()
        sync.join(30)


def write(folder, name: str, text: str) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


class PacedEmbedder(ConceptEmbedder):
    """Embeds `free` passages, then holds each call until the test allows more: a sync caught between
    two of its batches (a sync writes 64 passages at a time)."""

    def __init__(self, free: int = 64, solo: bool = False) -> None:
        super().__init__()
        self.solo = solo
        self.allowed = free
        self.embedded = 0
        self.waiting = threading.Event()
        self._cond = threading.Condition()

    def embed_passages(self, texts: list[str]) -> np.ndarray:
        if len(texts) == 1 and self.solo:  # one passage: a note or an upload indexed on its own, not the sync
            return super().embed_passages(texts)
        with self._cond:
            while self.embedded + len(texts) > self.allowed:
                self.waiting.set()
                if not self._cond.wait(30):
                    break
            self.waiting.clear()
            self.embedded += len(texts)
        return super().embed_passages(texts)

    def step(self, passages: int = 64) -> None:
        with self._cond:
            self.allowed += passages
            self._cond.notify_all()

    def finish(self) -> None:
        self.step(10**9)


def wait_for(predicate, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def folder(tmp_path, files: int, passages_each: int = 1):
    src = tmp_path / "handbook"
    for i in range(files):
        body = "\n\n".join(f"## Part {j}\n\nTopic{i} paragraph {j} about item{i}x{j}." for j in range(passages_each))
        write(src, f"doc{i:03}.md", f"# Doc {i}\n\n{body}\n")
    return src


def make_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A small real PDF: one Helvetica text line per string, a page per list."""
    objects: list[bytes] = []
    kids = []
    n_pages = len(pages)
    # 1 catalog, 2 pages, 3 font, then (page, content) pairs, then info
    for i, lines in enumerate(pages):
        page_id, content_id = 4 + 2 * i, 5 + 2 * i
        kids.append(f"{page_id} 0 R")
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({escaped}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(
            f"{page_id} 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {content_id} 0 R >>\nendobj\n".encode()
        )
        objects.append(
            f"{content_id} 0 obj\n<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream\nendobj\n"
        )
    info_id = 4 + 2 * n_pages
    head = [
        b"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n",
        f"2 0 obj\n<< /Type /Pages /Kids [{' '.join(kids)}] /Count {n_pages} >>\nendobj\n".encode(),
        b"3 0 obj\n<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>\nendobj\n",
    ]
    info = f"{info_id} 0 obj\n<< /Title ({title or ''}) >>\nendobj\n".encode()
    body = head + objects + [info]
    out = b"%PDF-1.4\n"
    offsets = []
    for obj in body:
        offsets.append(len(out))
        out += obj
    xref = len(out)
    out += f"xref\n0 {len(body) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    info_ref = f" /Info {info_id} 0 R" if title else ""
    out += f"trailer\n<< /Size {len(body) + 1} /Root 1 0 R{info_ref} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def deep_folder(tmp_path: Path) -> Path:
    """A 40-level folder with a file every 10 levels, and names the patterns leave out beside them."""
    src = folder = tmp_path / "deep"
    for level in range(40):
        folder = folder / f"d{level}"
        if level % 10 == 9:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"page{level}.md").write_text(f"# Page {level}\n\nLevel {level} of the deep folder, word{level}.\n")
            (folder / f"q{level % 20}").mkdir()  # a folder named like a pattern: left out with what it holds
            (folder / f"q{level % 20}" / "left.md").write_text("# Left\n\nleft out\n")
    return src


DEEP = ["**/" * 160 + f"q{n}" for n in range(20)]


ROOT = Path(__file__).resolve().parents[2]


FACTS = 300


# Another process on the same data directory: it starts a job of the base (argv: home, base, kind) with an
# embedder that embeds one batch and then holds every call, says "held", and waits to be killed.
CHILD = r"""
import sys, threading
from astralyx.config import Settings
from astralyx.core import Astralyx
from tests.metis.kit import ConceptEmbedder, owner

class Held(ConceptEmbedder):
    def embed_passages(self, texts):
        if self.calls:
            print("held", flush=True)
            threading.Event().wait()
        return super().embed_passages(texts)

core = Astralyx(Settings.load(sys.argv[1])).start()
held = Held()
core.index.embedder_for = lambda base: held
job, _ = core.documents.start(owner(), sys.argv[2], sys.argv[3])
print(job.id, flush=True)
threading.Event().wait()
"""


def a_memory_of_facts(home: Path) -> None:
    """A memory `team` of FACTS facts, indexed, in a core that is closed again (a server that stopped)."""
    core = Astralyx(Settings.load(home)).start()
    try:
        make_base(core, "team", embedder=ConceptEmbedder(), kind="memory")
        core.memory.keep(owner(), "team", [
            {"subject": f"Person {i}", "attribute": "project", "fact": f"Person {i} works on project zeta{i}.",
             "said_at": "2026-09-01", "source": "chat: takeover"}
            for i in range(FACTS)
        ])
    finally:
        core.close()


class Child:
    """The other process: `astra serve`'s core, mid-job, until it is killed."""

    started: list[Child] = []  # killed at the end of each test, whatever happened

    def __init__(self, home: Path, kind: str) -> None:
        Child.started.append(self)
        self.process = subprocess.Popen([sys.executable, "-c", CHILD, str(home), "team", kind], cwd=ROOT,
                                        env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
        self.job = self.line()
        assert self.line() == "held"  # its job is mid-way: one batch embedded, the next held

    def line(self) -> str:
        got: list[str] = []
        reader = threading.Thread(target=lambda: got.append(self.process.stdout.readline().strip()), daemon=True)
        reader.start()
        reader.join(120)
        assert got and got[0], self.process.stderr.read() if self.process.poll() is not None else "no answer"
        return got[0]

    def kill(self) -> None:
        self.process.kill()  # SIGKILL: no clean-up at all
        self.process.wait(30)


def restarted(home: Path) -> Astralyx:
    core = Astralyx(Settings.load(home)).start()
    core.index.embedder_for = lambda base: ConceptEmbedder() if base.spec.embedding else None
    return core


def searchable(core: Astralyx) -> int:
    found = 0
    for i in range(0, FACTS, FACTS // 50):  # 50 of them
        texts = [r.text for r in core.search.search(owner(), "team", f"zeta{i}").results]
        found += f"Person {i} works on project zeta{i}." in texts
    return found
