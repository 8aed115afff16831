"""Documents of a base: uploads into its `files/` folder, sync with its source folders,
reindex from the files, and the list of what is indexed.

Only bases of kind `documents` take sources and uploads; a memory keeps facts.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from ..answers import Answer
from ..auth.actor import Actor
from ..auth.roles import READ, WRITE_CONTENT
from ..errors import BadRequest, Conflict, NotFound
from ..locks import Locks
from ..util import iso, sha256
from .bases import KnowledgeBase, KnowledgeBases
from .document_ids import document_id
from .index import Index
from .jobs import IdleSync, IndexStatus, RemoteJob, SyncJob, SyncJobs, SyncStatus
from .parsing import check_supported, parse_file
from .writer import UPLOADS, Writer

if TYPE_CHECKING:
    from datetime import datetime

log = logging.getLogger("astralyx.metis")

MAX_NAME = 200
RETRIES = 3  # times the start-up sync runs a base's sync again after following one that was stopped
_UNSAFE = re.compile(r"[^\w.\- ()+,@]+", re.UNICODE)


def safe_name(name: str) -> str:
    """An upload's file name, made safe: no folders, no control or odd characters, no leading dot."""
    name = unicodedata.normalize("NFC", (name or "").replace("\\", "/").split("/")[-1]).strip()
    name = _UNSAFE.sub("-", name).strip(" .-")
    if not name:
        raise BadRequest("An uploaded file needs a name, like leave.md", code="BAD_FILE_NAME")
    if len(name.encode()) > MAX_NAME:
        stem, dot, ext = name.rpartition(".")
        keep = MAX_NAME - len(ext.encode()) - 1
        name = stem.encode()[:keep].decode(errors="ignore") + dot + ext
    return name


class Uploaded(Answer):
    """A file uploaded to a base's files/ and indexed."""

    name: str
    document: str
    title: str
    chunks: int = Field(description="Its passages in the index")
    size: int = Field(description="Bytes")
    sha256: str
    replaced: bool = Field(description="It replaced an upload of the same name")


class IndexedDocument(Answer):
    document: str
    title: str
    kind: str
    origin: str = Field(description="Where it comes from: a source folder, files (an upload), notes, saved")
    chunks: int = Field(description="Its passages")
    size: int = Field(description="Bytes")
    indexed_at: str


class DocumentList(Answer):
    knowledge_base: str
    documents: list[IndexedDocument]
    index: IndexStatus


class UploadedFile(Answer):
    name: str
    document: str
    size: int = Field(description="Bytes")
    updated_at: str


class Documents:
    def __init__(self, bases: KnowledgeBases, index: Index, writer: Writer, jobs: SyncJobs | None = None, *,
                 locks: Locks) -> None:
        self.bases = bases
        self.locks = locks
        self.index = index
        self.writer = writer  # uploads are written through it (the index hears of them there)
        self.jobs = jobs or SyncJobs()  # the core's share their status through the records database
        # A base deleted mid-sync: its job stops first (before its index closes).
        bases.on_delete.insert(0, lambda base: self.jobs.cancel(base.workspace, base.name))

    def _documents_base(self, actor: Actor, base_name: str, permission: str) -> KnowledgeBase:
        actor.require(permission)
        base = self.bases.get(actor, base_name)
        if base.kind != "documents":
            raise Conflict(
                f"{base.name!r} is a memory: it keeps facts, not documents or uploads "
                "(use a base of kind documents, or `astra metis remember`)",
                code="NOT_A_DOCUMENTS_BASE",
            )
        return base

    # -- sync and reindex: background jobs of the base ----------------------------------------
    def check_write(self, actor: Actor, base_name: str) -> KnowledgeBase:
        """What sync and reindex check first (so a job starts only when it may run)."""
        actor.require(WRITE_CONTENT)
        base = self.bases.get(actor, base_name)
        self._check_sources(base)
        return base

    def start(self, actor: Actor, base_name: str, kind: str = "sync") -> tuple[SyncJob, bool]:
        """Start a sync (or a reindex) of the base as a background job: (the job, True), or (the job
        already queued or running, False) to follow instead. A reindex asked while a sync runs is
        refused (409 SYNC_RUNNING, with the job): it would start over what that sync is writing."""
        base = self.check_write(actor, base_name)
        return self.start_for(base, kind)

    def start_for(self, base: KnowledgeBase, kind: str = "sync") -> tuple[SyncJob, bool]:
        if kind not in ("sync", "reindex"):
            raise BadRequest(f"A job is a sync or a reindex, not {kind!r}", code="BAD_REQUEST")

        def work(job: SyncJob) -> dict[str, Any]:
            # Its folders as they resolve now (metis/roots.py): one it may no longer read (a link swapped, roots
            # narrowed) is synced as gone, so what it gave the index goes too, and the job fails saying why.
            readable, refused = self.bases.refused_sources(base)
            report = (self.index.reindex if kind == "reindex" else self.index.sync)(readable, job)
            if refused is not None:
                raise refused
            return {"knowledge_base": base.name, **report.to_dict(), **self.index.status(base).model_dump()}

        job, started = self.jobs.start(base.workspace, base.name, kind, work)
        if not started and kind == "reindex" and job.kind != "reindex":
            raise Conflict(
                f"A sync of {base.name} is {job.state} ({_so_far(job)}): wait for it to finish "
                f"(`astra metis sync {base.name}` follows it), then reindex",
                code="SYNC_RUNNING", details={"job": job.to_dict()},
            )
        return job, started

    def status(self, actor: Actor, base_name: str) -> SyncStatus | IdleSync:
        """The base's latest sync job (state `idle`: none since the server started) and its index now."""
        actor.require(READ)
        base = self.bases.get(actor, base_name)
        job = self.jobs.get(base.workspace, base.name)
        if job is None:
            return IdleSync.model_construct(knowledge_base=base.name, state="idle", index=self.index.status(base))
        status = job.status()
        status.index = self.index.status(base)
        return status

    def wait(self, job: SyncJob, timeout: float | None = None) -> dict[str, Any] | None:
        """The job's report once it has ended (None: still going after `timeout`); a failed job raises its error."""
        if not self.jobs.join(job, timeout):
            return None
        if job.exception is not None:
            raise job.exception
        return job.report

    def sync(self, actor: Actor, base_name: str) -> dict[str, Any]:
        """Index new and changed files of the base (its folder and its sources); drop removed ones.
        Starts the base's sync job, or joins the one running, and waits for its report."""
        job, _ = self.start(actor, base_name, "sync")
        return self.wait(job) or {}

    def reindex(self, actor: Actor, base_name: str) -> dict[str, Any]:
        """Build the base's index again from its files (after a change of embedding, or a damaged index)."""
        job, _ = self.start(actor, base_name, "reindex")
        return self.wait(job) or {}

    def _check_sources(self, base: KnowledgeBase) -> None:
        for source in base.spec.sources:
            folder = Path(source.folder).expanduser()
            if not folder.is_dir():
                raise NotFound(
                    f"The source folder {source.folder} does not exist on the server's machine (or is not a folder): "
                    "fix spec.sources of the base",
                    code="SOURCE_NOT_FOUND",
                )

    def sync_all(self) -> dict[str, Any]:
        """Every base, as at server start: each a job (queued, then run one after another), so its
        status shows; failures are logged and reported, never raised. A job whose process went away
        (killed mid-sync or mid-reindex) is taken over, as the kind it was; a job of another process
        followed here that ends stopped (SYNC_CANCELLED: its process went away) is run again, up to
        RETRIES times."""
        jobs = [(base, self._start_at_start(base, None)) for base in self.bases.all()]
        return {f"{base.workspace}/{base.name}": self._end_at_start(base, job) for base, job in jobs}

    def _end_at_start(self, base: KnowledgeBase, job: SyncJob) -> dict[str, Any] | None:
        """The start-up sync's report of a base (its error, logged, when it failed)."""
        name = f"{base.workspace}/{base.name}"
        for attempt in range(RETRIES + 1):
            try:
                if attempt:
                    job = self._start_at_start(base, job.kind)
                return self.wait(job)
            except Exception as e:
                if attempt < RETRIES and self._run_again(base, job, e):
                    log.info("the %s of %s followed here was stopped (%s): running it again", job.kind, name, e)
                    continue
                log.warning("sync of %s failed: %s", name, e)
                return {"error": str(e)}
        return None  # not reached: the last attempt returns

    def _start_at_start(self, base: KnowledgeBase, kind: str | None) -> SyncJob:
        """The start-up sync of a base: a job its process left unfinished resumes as what it was (a reindex)."""
        kind = kind or self.jobs.abandoned(base.workspace, base.name) or "sync"
        try:
            job, started = self.start_for(base, kind)
        except Conflict:  # a reindex, while another process started a sync meanwhile: follow that one
            job, started = self.start_for(base, "sync")
        if not started:
            log.info("the %s of %s/%s runs in another process (job %s): following it", job.kind, base.workspace,
                     base.name, job.id)
        return job

    def _run_again(self, base: KnowledgeBase, job: SyncJob, error: Exception) -> bool:
        """Was the job another process's, stopped because that process went away, its base still here?
        (A job of this process is stopped only when the server stops or the base is deleted.)"""
        return (isinstance(job, RemoteJob) and getattr(error, "code", None) == "SYNC_CANCELLED"
                and self.bases.find(base.workspace, base.name) is not None)

    # -- uploads ------------------------------------------------------------------------------
    def upload(self, actor: Actor, base_name: str, filename: str, data: bytes) -> Uploaded:
        """Keep an uploaded file in the base's files/ folder and index it."""
        base = self._documents_base(actor, base_name, WRITE_CONTENT)
        name = safe_name(filename)
        check_supported(name)
        parse_file(document_id(base.name, name), name, data)  # an unreadable file is refused, not kept
        target = base.folder / UPLOADS / name
        with self.locks.folder(base.folder):
            replaced = target.exists()
            change = self.writer.write(base, f"{UPLOADS}/{name}", data, emit=False)
        self.writer.emit([change])  # indexed now, or right after a sync that is running
        doc = self.index.store(base).document(f"{UPLOADS}/{name}")
        return Uploaded.model_construct(
            name=name, document=document_id(base.name, name), title=doc.title if doc else name,
            chunks=doc.chunks if doc else 0, size=len(data), sha256=sha256(data), replaced=replaced,
        )

    def files(self, actor: Actor, base_name: str) -> list[UploadedFile]:
        actor.require(READ)
        base = self.bases.get(actor, base_name)
        root = base.folder / UPLOADS
        if not root.is_dir():
            return []
        out = []
        for file in sorted(root.iterdir()):
            if file.name.startswith(".") or not file.is_file() or file.is_symlink():
                continue
            stat = file.stat()
            out.append(UploadedFile.model_construct(name=file.name, document=document_id(base.name, file.name),
                                                    size=stat.st_size, updated_at=iso(_mtime(stat.st_mtime))))
        return out

    def delete_file(self, actor: Actor, base_name: str, name: str) -> None:
        base = self._documents_base(actor, base_name, WRITE_CONTENT)
        if name != safe_name(name):
            raise NotFound(f"No uploaded file {name!r} in {base.name}", code="FILE_NOT_FOUND")
        target = base.folder / UPLOADS / name
        with self.locks.folder(base.folder):
            if not target.is_file() or target.is_symlink():
                raise NotFound(f"No uploaded file {name!r} in {base.name}: `astra metis files` lists them", code="FILE_NOT_FOUND")
            gone = self.writer.remove(base, f"{UPLOADS}/{name}", emit=False)
        if gone is not None:
            self.writer.emit([gone])

    def documents(self, actor: Actor, base_name: str) -> DocumentList:
        actor.require(READ)
        base = self.bases.get(actor, base_name)
        documents = [IndexedDocument.model_construct(document=d["document"], title=d["title"], kind=d["kind"], origin=d["origin"],
                                                     chunks=d["chunks"], size=d["size"], indexed_at=d["indexed_at"])
                     for d in self.index.documents(base)]
        return DocumentList.model_construct(knowledge_base=base.name, documents=documents,
                                            index=self.index.status(base))


def _so_far(job: SyncJob) -> str:
    status = job.status()
    passages, files = status.passages, status.files
    if passages.total is not None:
        return f"{passages.done:,} of {passages.total:,} passages"
    if files.total is not None:
        return f"reading files, {files.done:,} of {files.total:,}"
    return "waiting for another base's sync"


def _mtime(ts: float) -> datetime:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).replace(microsecond=0)
