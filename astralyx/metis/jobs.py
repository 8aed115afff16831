"""Syncs as background jobs: one job at a time per base, with a status anyone who may read the base sees.

    job, started = jobs.start(base, "sync", work)   # or the job already queued/running for the base
    jobs.get(base)                                  # the base's latest job (None: none since start)
    jobs.join(job, timeout)                         # wait for it to end

A job runs `work(job)` in a thread of its own; `work` reports through the job's methods
(`reading`, `planned`, `indexed`, `failed`, `large_file`), which is what the API, the CLI's bar and the
console show: files and passages done/total, passages/s, an ETA, errors per file, the report at the end.
At most `running` jobs index at once (the embedder is the bottleneck: more would only share the
cores); the others wait as `queued`.

With a `JobStore` (the core gives one over the records database), a job's status is also a row of
`sync_jobs`, published every HEARTBEAT seconds while it runs: every process and replica sharing
the database sees it (GET …/sync answers the same on each), a sync asked of another replica joins
the one running instead of starting a second, and deleting the base on any replica stops it. A job
whose row has not moved for STALE seconds (by the database's clock, one for every replica), or whose
process has ended on this machine (the row names it: host, pid, start time), is taken as stopped: it is
shown so, and the next start takes its place.

A job stops at its next step once asked (`cancel`): its methods above check, and so does `checkpoint()`,
which long steps of its thread call as they go (the walk of a source folder).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from ..answers import Answer, absent
from ..engines import Database
from ..errors import AstralyxError
from ..util import iso

log = logging.getLogger("astralyx.metis")

RATE_WINDOW = 30.0  # seconds of progress the passages/s (and so the ETA) is measured over
ACTIVE = ("queued", "running")
# A job's thread gives way to searches and requests: the OS runs it when they leave a core free
# (embedding takes every core it gets). Its own thread only, which ends with the job.
NICE = 5
HEARTBEAT = 1.0  # seconds between two publications of a running job's status (with a JobStore)
STALE = 30.0  # a job whose status has not moved for this long: its process or replica stopped
SLOT_WAIT = 0.2  # seconds a queued job waits for the indexing slot before it looks whether it was stopped


class Cancelled(AstralyxError):
    status, code = 503, "SYNC_CANCELLED"


_running = threading.local()  # the job this thread runs (set in a job's own thread)


# -- a job's status, as every process and replica sees it ---------------------------------------------
class FileCounts(Answer):
    done: int = Field(description="Indexed, unchanged, or failed")
    read: int = Field(description="Read and hashed (the first phase)")
    total: int | None = Field(description="null until the files are listed")


class PassageCounts(Answer):
    done: int = Field(description="Embedded and written: searchable now")
    total: int | None = Field(description="null until every file is read")


class FileError(Answer):
    document: str
    error: str


class JobWarning(Answer):
    document: str
    passages: int
    code: str = Field(examples=["LARGE_FILE"])
    message: str


class JobError(Answer):
    code: str
    message: str


class IndexStatus(Answer):
    """A base's index now."""

    documents: int
    chunks: int = Field(description="Its passages")
    embedding: str | None = Field(description="What its vectors were made with (null: keywords only, or none yet)")
    dimensions: int | None


class FailedDocument(Answer):
    document: str
    error: str


class SyncResult(Answer):
    """What a sync (or reindex) did, as it ended, and the base's index then (a job's `report`)."""

    knowledge_base: str
    added: int
    changed: int
    unchanged: int
    removed: int
    failed: list[FailedDocument] = Field(description="The files that could not be indexed, and why")
    documents: int
    chunks: int = Field(description="Its passages")
    embedding: str | None = Field(description="What its vectors were made with (null: keywords only, or none yet)")
    dimensions: int | None


class SyncStatus(Answer):
    """A sync (or reindex) job: its state and progress, the report once it finished, the error once it failed."""

    id: str
    knowledge_base: str
    kind: str = Field(description="sync | reindex")
    state: str = Field(description="queued | running | finished | failed")
    phase: str = Field(description="waiting | reading | indexing | finishing | done")
    files: FileCounts
    passages: PassageCounts
    passages_per_second: float | None = Field(description="Over the last 30 seconds of indexing")
    eta_seconds: int | None
    document: str = Field(description="The document being read or indexed")
    queued_at: str
    started_at: str | None
    finished_at: str | None
    errors: list[FileError] = Field(description="The files that could not be read")
    warnings: list[JobWarning]
    report: SyncResult | None = Field(description="Once finished: what the sync added, changed, removed, and the "
                                               "index's status")
    error: JobError | None
    # Said beside the job by who answers it: the base's index now (GET …/sync), whether it was started (202).
    index: IndexStatus | None = absent("The base's index now")
    started: bool | None = absent("Whether this request started it (else it joined the one running)")


class IdleSync(Answer):
    """No sync of the base since the server started."""

    knowledge_base: str
    state: str = Field(description="idle", examples=["idle"])
    index: IndexStatus = Field(description="The base's index now")


def checkpoint() -> None:
    """Raise Cancelled when the job this thread runs was stopped (a long step, like walking a source
    folder, calls it as it goes, so a delete or a stop ends the job at once); elsewhere nothing."""
    job: SyncJob | None = getattr(_running, "job", None)
    if job is not None:
        job._check()


@dataclass
class SyncJob:
    workspace: str
    base: str
    kind: str  # sync | reindex
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    state: str = "queued"  # queued | running | finished | failed
    phase: str = "waiting"  # waiting | reading | indexing | finishing | done
    queued_at: str = field(default_factory=iso)
    started_at: str | None = None
    finished_at: str | None = None
    files_done: int = 0  # indexed, unchanged, or failed
    files_read: int = 0  # read and hashed (phase 1)
    files_total: int | None = None
    passages_done: int = 0
    passages_total: int | None = None
    current: str = ""  # the document being read or indexed
    errors: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] | None = None
    error: dict[str, str] | None = None
    exception: AstralyxError | None = field(default=None, repr=False)  # what a caller waiting for it raises
    cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    done: threading.Event = field(default_factory=threading.Event, repr=False)
    _samples: deque[tuple[float, int]] = field(default_factory=lambda: deque(maxlen=256), repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    # -- what the indexing reports (called from the job's thread) ------------------------------
    def reading(self, done: int, total: int, document: str) -> None:
        """Files read and hashed so far (phase 1: what changed, how many passages it makes)."""
        self._check()
        with self._lock:
            self.phase, self.files_total, self.current = "reading", total, document
            self.files_read = max(self.files_read, done)

    def planned(self, files_total: int, passages_total: int) -> None:
        """What is to be indexed, once every file has been read."""
        with self._lock:
            self.phase, self.files_total, self.passages_total = "indexing", files_total, passages_total
            self.files_read = files_total
            self._samples.append((time.monotonic(), self.passages_done))

    def indexed(self, passages: int, document: str, files: int = 0) -> None:
        """More passages embedded and written (searchable now); `files` whole files finished with them."""
        self._check()
        with self._lock:
            self.passages_done += passages
            self.files_done += files
            self.current = document
            self._samples.append((time.monotonic(), self.passages_done))

    def replanned(self, passages: int) -> None:
        """A file read again yields `passages` more (or fewer) than when it was planned."""
        with self._lock:
            self.passages_total = (self.passages_total or 0) + passages

    def file_done(self, files: int = 1) -> None:
        with self._lock:
            self.files_done += files

    def failed(self, document: str, error: str) -> None:
        with self._lock:
            self.errors.append({"document": document, "error": error})

    def large_file(self, document: str, passages: int, limit: int) -> None:
        with self._lock:
            self.warnings.append({
                "document": document, "passages": passages, "code": "LARGE_FILE",
                "message": f"{document} yields {passages:,} passages (more than {limit:,} from one file): "
                           "if it repeats other files (a print or all-in-one page), exclude it from the source",
            })

    def _check(self) -> None:
        if self.cancel.is_set():
            raise Cancelled("The sync was stopped (the server is stopping, or the base was deleted)")

    # -- reading it -------------------------------------------------------------------------------
    def rate(self) -> float | None:
        """Passages per second over the last RATE_WINDOW seconds of indexing."""
        with self._lock:
            samples = list(self._samples)
        if len(samples) < 2:
            return None
        now = samples[-1][0] if not self.active else time.monotonic()
        recent = [s for s in samples if s[0] >= now - RATE_WINDOW] or samples[-2:]
        first, last = (recent[0] if len(recent) > 1 else samples[-2]), samples[-1]
        seconds = max(now, last[0]) - first[0]
        return (last[1] - first[1]) / seconds if seconds > 0 else None

    def status(self) -> SyncStatus:
        rate = self.rate()
        with self._lock:
            remaining = (self.passages_total - self.passages_done) if self.passages_total is not None else None
            eta = round(remaining / rate) if rate and remaining is not None and self.state == "running" else None
            return SyncStatus.model_construct(
                id=self.id,
                knowledge_base=self.base,
                kind=self.kind,
                state=self.state,
                phase=self.phase,
                files=FileCounts.model_construct(done=self.files_done, read=self.files_read, total=self.files_total),
                passages=PassageCounts.model_construct(done=self.passages_done, total=self.passages_total),
                passages_per_second=round(rate, 1) if rate is not None else None,
                eta_seconds=eta,
                document=self.current,
                queued_at=self.queued_at,
                started_at=self.started_at,
                finished_at=self.finished_at,
                errors=[FileError.model_construct(document=e["document"], error=e["error"]) for e in self.errors],
                warnings=[JobWarning.model_construct(document=w["document"], passages=w["passages"], code=w["code"],
                                                     message=w["message"]) for w in self.warnings],
                report=_result(self.id, self.report),
                error=_job_error(self.error),
                index=None,
                started=None,
            )

    def to_dict(self) -> dict[str, Any]:
        """The status as JSON data (a job's row, an error's details)."""
        return self.status().model_dump()


def _job_error(error: dict[str, str] | None) -> JobError | None:
    return None if error is None else JobError.model_construct(code=error.get("code", ""), message=error.get("message", ""))


def duration(seconds: float | None) -> str:
    """An ETA as people read it: 45s, 3m07s, 1h05m."""
    if seconds is None:
        return "?"
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02}m"
    return f"{seconds // 60}m{seconds % 60:02}s" if seconds >= 60 else f"{seconds}s"


Work = Callable[[SyncJob], dict[str, Any]]


class SyncJobs:
    """The sync jobs of this process: start (or join) one per base, read them, wait for them."""

    def __init__(self, store: JobStore | None = None, running: int = 1, nice: int = NICE) -> None:
        self.store = store  # the jobs' status shared with other processes and replicas (None: this process's only)
        self.nice = nice  # the jobs' threads run at this lower OS priority (Linux: per thread)
        self._jobs: dict[tuple[str, str], SyncJob] = {}
        self._guard = threading.Lock()
        self._slots = threading.Semaphore(running)

    def get(self, workspace: str, base: str) -> SyncJob | None:
        """The base's latest job: this process's, or another process's or replica's when that one is newer."""
        with self._guard:
            local = self._jobs.get((workspace, base))
        if self.store is None or (local is not None and local.active):
            return local
        row = self.store.read(workspace, base)
        if row is None or (local is not None and row["id"] == local.id):
            return local
        return RemoteJob.of(row, self.store)

    def start(self, workspace: str, base: str, kind: str, work: Work) -> tuple[SyncJob, bool]:
        """A new job running `work`, or (False) the base's job already queued or running, here or (with a
        store) in another process or replica."""
        with self._guard:
            current = self._jobs.get((workspace, base))
            if current is not None and current.active:
                return current, False
            job = SyncJob(workspace=workspace, base=base, kind=kind)
            if self.store is not None:
                running = self.store.claim(job)
                if running is not None:  # another process or replica runs the base's sync: follow that one
                    return RemoteJob.of(running, self.store), False
            self._jobs[(workspace, base)] = job
        threading.Thread(target=self._run, args=(job, work), name=f"sync:{workspace}/{base}", daemon=True).start()
        return job, True

    def abandoned(self, workspace: str, base: str) -> str | None:
        """The kind of the base's job (sync or reindex) when the process running it went away before it ended."""
        return self.store.abandoned(workspace, base) if self.store is not None else None

    @staticmethod
    def join(job: SyncJob, timeout: float | None = None) -> bool:
        """Wait for the job to end; True when it has."""
        return job.done.wait(timeout)

    def _run(self, job: SyncJob, work: Work) -> None:
        _lower_priority(self.nice)
        _running.job = job
        if self.store is not None:
            threading.Thread(target=self._beat, args=(job, self.store), name=f"{job.id}:status", daemon=True).start()
        try:
            while not self._slots.acquire(timeout=SLOT_WAIT):  # queued: a stop ends it without waiting its turn
                if job.cancel.is_set():
                    raise Cancelled("The sync was stopped before it started")
            try:
                if job.cancel.is_set():
                    raise Cancelled("The sync was stopped before it started")
                job.state, job.phase, job.started_at = "running", "reading", iso()
                report = work(job)
            finally:
                self._slots.release()
            job.report, job.state = report, "finished"
        except AstralyxError as e:
            job.exception, job.error, job.state = e, {"code": e.code, "message": e.message}, "failed"
        except Exception as e:  # the job's status says so; the server goes on
            log.exception("sync of %s/%s failed", job.workspace, job.base)
            failure = AstralyxError(f"The sync stopped on an error ({e}); the server's log says more",
                                    code="SYNC_FAILED")
            job.exception, job.error, job.state = failure, {"code": failure.code, "message": failure.message}, "failed"
        finally:
            _running.job = None
            job.phase, job.finished_at = "done", iso()
            if self.store is not None:  # before anyone waiting here hears of it: the row says the end first
                self.store.publish(job)
            job.done.set()

    @staticmethod
    def _beat(job: SyncJob, store: JobStore) -> None:
        """While the job runs: its status for the other processes, and a stop asked by one of them."""
        while not job.done.wait(HEARTBEAT):
            if store.publish(job):
                job.cancel.set()

    def cancel(self, workspace: str, base: str, wait: float = 5.0) -> None:
        """Stop the base's job at its next step, wherever it runs, and forget it (the base is being deleted)."""
        with self._guard:
            local = self._jobs.get((workspace, base))
        if local is not None and local.active:
            local.cancel.set()
            local.done.wait(wait)
        if self.store is not None:
            remote = self.get(workspace, base)
            if remote is not None and remote is not local and remote.active:
                self.store.ask_to_stop(workspace, base)
                remote.done.wait(wait)
            self.store.forget(workspace, base)

    def stop(self, wait: float = 10.0) -> None:
        """Stop every job at its next step (the server is stopping)."""
        with self._guard:
            jobs = [j for j in self._jobs.values() if j.active]
        for job in jobs:
            job.cancel.set()
        deadline = time.monotonic() + wait
        for job in jobs:
            job.done.wait(max(0.0, deadline - time.monotonic()))


class JobStore:
    """The sync jobs' status in the records database (`sync_jobs`: one row per base, its latest job)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        # Heartbeats by the database's clock, one for every replica (theirs may disagree): seconds since
        # the epoch. A row read comes with `silent`, the seconds since its last heartbeat.
        self._now = ("EXTRACT(EPOCH FROM clock_timestamp())" if db.engine == "postgres"
                     else "((julianday('now') - 2440587.5) * 86400.0)")
        self._select = f"SELECT *, {self._now} - heartbeat AS silent FROM sync_jobs WHERE workspace=? AND base=?"

    def claim(self, job: SyncJob) -> Any | None:
        """Record `job` as the base's job (this process's); or, when another process's job is active, its row.
        A job whose process is gone (stale, or dead on this machine) is not active: `job` takes its place."""
        host, pid, process = this_process()
        with self.db.transaction() as conn:  # one writer at a time: two replicas never both claim
            row = conn.execute(self._select, (job.workspace, job.base)).fetchone()
            if row is not None and _alive(row):
                return row
            previous = None if row is None else json.dumps(_shown(row))  # for those who followed it
            conn.execute(
                "INSERT INTO sync_jobs(workspace, base, id, state, status, stop_asked, heartbeat, previous, host, pid, "
                f"process) VALUES (?,?,?,?,?,0,{self._now},?,?,?,?) ON CONFLICT (workspace, base) DO UPDATE SET "
                "id=excluded.id, state=excluded.state, status=excluded.status, stop_asked=0, heartbeat=excluded.heartbeat, "
                "previous=excluded.previous, host=excluded.host, pid=excluded.pid, process=excluded.process",
                (job.workspace, job.base, job.id, job.state, json.dumps(job.to_dict()), previous, host, pid, process),
            )
        return None

    def abandoned(self, workspace: str, base: str) -> str | None:
        """The kind of the base's job (sync or reindex) when its process went away before it ended."""
        row = self.read(workspace, base)
        if row is None or row["state"] not in ACTIVE or _alive(row):
            return None
        kind: str = json.loads(row["status"]).get("kind", "sync")
        return kind

    def publish(self, job: SyncJob) -> bool:
        """The job's status now; True when another process asked it to stop. Never raises: a sync
        goes on when its status cannot be written (the database is briefly away)."""
        try:
            with self.db.transaction() as conn:
                row = conn.execute(
                    f"UPDATE sync_jobs SET state=?, status=?, heartbeat={self._now} WHERE workspace=? AND base=? "
                    "AND id=? RETURNING stop_asked",
                    (job.state, json.dumps(job.to_dict()), job.workspace, job.base, job.id),
                ).fetchone()
            return bool(row is not None and row["stop_asked"])
        except Exception:
            log.warning("the status of sync %s of %s/%s could not be written", job.id, job.workspace, job.base,
                        exc_info=True)
            return False

    def read(self, workspace: str, base: str) -> Any | None:
        return self.db.one(self._select, (workspace, base))

    def ask_to_stop(self, workspace: str, base: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("UPDATE sync_jobs SET stop_asked=1 WHERE workspace=? AND base=?", (workspace, base))

    def forget(self, workspace: str, base: str) -> None:
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM sync_jobs WHERE workspace=? AND base=?", (workspace, base))


def _stale(row: Any) -> bool:
    return float(row["silent"]) > STALE


def _alive(row: Any) -> bool:
    """Is the row's job running or queued in a process still there?"""
    return row["state"] in ACTIVE and not _stale(row) and not _gone(row)


def _shown(row: Any) -> dict[str, Any]:
    """The status a job's row shows: as published, or, for an active job whose process is gone, stopped."""
    status: dict[str, Any] = json.loads(row["status"])
    if row["state"] in ACTIVE and not _alive(row):
        why = (f"the process running it (pid {row['pid']} on {row['host']}) has ended" if _gone(row)
               else f"the process running it stopped giving news ({STALE:.0f} s)")
        status = {**status, "state": "failed", "phase": "done", "error": {
            "code": "SYNC_CANCELLED",
            "message": f"The sync was stopped: {why}. Start it again (a server's start-up sync takes it over)",
        }}
    return status


# -- which process runs a job ----------------------------------------------------------------------
# A job's row names its process: host name, pid, and "<boot id>/<pid namespace>/<start time>". Another
# process on the same machine (same host, kernel boot and pid namespace) tells at once whether it still
# runs; elsewhere only the heartbeat tells (STALE).


def this_process() -> tuple[str, int, str]:
    """(host, pid, process) of the running process, as a job's row records them."""
    pid = os.getpid()
    return socket.gethostname(), pid, f"{_machine()}/{_started(pid) or ''}"


@functools.cache
def _machine() -> str:
    """This kernel's boot and pid namespace ("" where /proc does not say: the host name alone then)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return ""


def _started(pid: int) -> str | None:
    """When the process `pid` started (clock ticks since boot; "" where /proc does not say), or None when
    it is a zombie: it has ended."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = stat[stat.rfind(")") + 2:].split()  # after the command's name, which may hold spaces
    return None if fields[0] in ("Z", "X") else fields[19]


def _gone(row: Any) -> bool:
    """Has the row's process ended? Known only on its own machine: elsewhere False (its heartbeat tells)."""
    host, pid, process = row["host"], row["pid"], row["process"]
    if not host or pid is None or process is None:  # a row from before processes were recorded
        return False
    machine, _, started = str(process).rpartition("/")
    if host != socket.gethostname() or machine != _machine():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # there is one, another user's
        pass
    now = _started(int(pid))
    return now is None or bool(now and started and now != started)  # ended, or its pid is another process's now


class RemoteJob(SyncJob):
    """A job another process or replica runs, as its row in the JobStore says (read again when looked at)."""

    store: JobStore | None = None
    _status: dict[str, Any] | None = None

    @classmethod
    def of(cls, row: Any, store: JobStore) -> RemoteJob:
        job = cls(workspace=row["workspace"], base=row["base"], kind=json.loads(row["status"]).get("kind", "sync"),
                  id=row["id"])
        job.store = store
        job.done = _Polled(job)
        job._update(row)
        return job

    def refresh(self) -> None:
        assert self.store is not None
        self._update(self.store.read(self.workspace, self.base))

    def _update(self, row: Any | None) -> None:
        previous = json.loads(row["previous"]) if row is not None and row["id"] != self.id and row["previous"] else {}
        if row is not None and row["id"] == self.id:
            status = _shown(row)
        elif previous.get("id") == self.id:  # a newer job took its row once it ended
            status = previous
        else:  # its row is gone (the base was deleted), or two newer jobs took it since it was read
            why = "its base was deleted" if row is None else "newer syncs have run since; see the base's status"
            status = {**(self._status or {}), "state": "failed", "phase": "done", "error": {
                "code": "SYNC_CANCELLED", "message": f"The sync was stopped ({why})",
            }}
        self._status = status
        self.state, self.phase, self.report = status.get("state", "failed"), status.get("phase", "done"), status.get("report")
        self.error = status.get("error")
        if self.error is not None and not self.active:
            self.exception = AstralyxError(self.error.get("message", "The sync failed"), code=self.error.get("code"))
        if not self.active:
            self.done.set()

    def status(self) -> SyncStatus:
        """As its row says (validated once: another process wrote it), what this job knows of itself beneath."""
        if self.active:
            self.refresh()
        mine = super().status()
        try:
            return SyncStatus.model_validate({**mine.model_dump(), **(self._status or {})})
        except ValidationError:  # a row of another version: what it says of the job's end, on what this one knows
            log.warning("the status of sync job %s does not read as this version writes it", self.id)
            update = {"state": self.state, "phase": self.phase, "report": _result(self.id, self.report),
                      "error": _job_error(self.error)}
            return mine.model_copy(update=update)


def _result(job_id: str, report: dict[str, Any] | None) -> SyncResult | None:
    """A job's report as answered (kept as JSON: a job's row, for every process); one another version wrote that
    does not read as this one's is left out of the status, said in the log."""
    if report is None:
        return None
    try:
        return SyncResult.model_validate(report)
    except ValidationError:
        log.warning("the report of sync job %s does not read as this version writes it", job_id)
        return None


class _Polled(threading.Event):
    """A remote job's end: waiting reads its row again every POLL seconds."""

    POLL = 0.5

    def __init__(self, job: RemoteJob) -> None:
        super().__init__()
        self.job = job

    def wait(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            super().wait(self.POLL if left is None else min(self.POLL, left))
            if not self.is_set():
                self.job.refresh()
        return True


def _lower_priority(nice: int) -> None:
    if nice <= 0 or not sys.platform.startswith("linux"):  # elsewhere it would name a process, not this thread
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)  # Linux: this thread alone
    except OSError:  # pragma: no cover - not allowed here: the job runs at normal priority
        pass
