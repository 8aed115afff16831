"""Import a chat archive into a memory: the person chooses conversations, the extractor reads them, the
person chooses facts.

    imports.create(actor, "team", data, "chatgpt-export.zip")   # the archive's conversations (titles, dates)
    imports.start(actor, "team", job_id, ids=[…] | since/until/title | everything=True)
    imports.get(actor, "team", job_id)                           # progress; the review once finished
    imports.cancel(actor, "team", job_id)

A job is a folder of the memory, `.imports/<id>/` (never indexed, never a note):

    job.json            its state, the archive's name and digest, what was chosen, its progress
    conversations.json  the chosen conversations' messages (before: all of them), while the job lasts
    proposals.jsonl     one line per conversation read: the facts proposed (secrets already left out
                        and only counted), or why it could not be read

The raw archive is never written by us: it is read in memory when uploaded. A job is written aside
(`.imports/.<id>.new/`) and renamed into place; what a crash leaves in `.imports/` without a job.json is removed
by purge once ORPHAN old. A job's files are written only into its existing folder (_put): a memory deleted
meanwhile is not brought back. A conversation's title that holds a secret is kept as SECRET_TITLE (it is also
the proposals' source), and an extractor's error that quotes one is kept without its message. The
conversations' text goes when the job ends (finished, cancelled), and for a job older than a day (EXPIRE): at
start, every SWEEP while the server runs, and before the job is looked at or started; what stays are the
proposals, until the job is deleted (or after KEEP_DONE). A job's thread holds the job's lock
(Locks.job) while it runs, so one process or replica reads it at a time; it writes each
conversation's proposals as it finishes it, so a job stopped by a restart continues where it was
when it is next followed (get) or started. Nothing is kept in the memory by a job: the review says
what each proposal would become, and the person keeps the ones they choose with POST …/memory.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import Field

from ...answers import Answer, absent
from ...auth.actor import Actor
from ...auth.roles import WRITE_CONTENT
from ...errors import AstralyxError, Conflict, Invalid, NotFound
from ...locks import Locks
from ...util import atomic_write, fsync_dir, iso, new_id, sha256
from ..bases import KnowledgeBase, KnowledgeBases
from ..jobs import JobError
from .archives import Conversation, choose, conversations_json, parse_json
from .archives import one_line as _line
from .extract import Call
from .facts import Fact, FactIn, moment
from .secrets import find_secret, find_secret_in_fact
from .service import FactBrief, Memory
from .timeline import CONFIRMS, KNOWN, OLDER, REPLACES, key_of, norm_name, norm_wording, place, settle

if TYPE_CHECKING:
    from .extract import Extractor

log = logging.getLogger("astralyx.metis")

FOLDER = ".imports"
EXPIRE = timedelta(days=1)  # a job's conversations are not kept longer than this
KEEP_DONE = timedelta(days=7)  # an ended job (its proposals) is removed after this
ORPHAN = timedelta(minutes=10)  # a folder of .imports/ without job.json this old is what a crash left
SECRET_TITLE = "(title left out: it holds a secret)"
RETRY_RESUME = 5.0  # seconds between two tries of this process to take over a job no one runs
SWEEP = 3600.0  # seconds between two purges of every memory's imports while the server runs
PROGRESS_EVERY = 1.0  # seconds between two writes of a running job's progress (what is done is on disk at once)
ENDED = ("finished", "cancelled", "expired")
# Errors that stop the whole job (it can be started again); others skip one conversation.
STOPPING = ("EXTRACTOR_UNAVAILABLE", "NO_EXTRACTOR", "NOT_A_MEMORY", "BASE_NOT_FOUND", "DATABASE_BUSY")
VENDORS = {"chatgpt": "ChatGPT", "claude": "Claude"}


def _stamp(dt: datetime) -> str:
    return dt.isoformat(timespec="microseconds").replace("+00:00", "Z")


# -- what an import answers (built from its job.json and proposals.jsonl: what the job keeps for itself stays there) --
class ArchiveInfo(Answer):
    name: str = Field(description="The archive's file name, as uploaded")
    format: str = Field(description="chatgpt | claude")
    conversations: int = Field(description="How many conversations it holds")


class ConversationSummary(Answer):
    """A conversation to choose: never its text."""

    id: str
    title: str
    created_at: str | None
    messages: int = Field(description="How many messages it holds")


class ImportProgress(Answer):
    done: int = Field(description="Conversations read")
    total: int = Field(description="Conversations chosen (0 until chosen)")
    rate_per_minute: float | None = absent("Conversations read a minute, once one is")
    eta_seconds: int | None = absent("Seconds left, once a conversation is read (0 once finished)")
    current: str | None = Field(description="The title of the conversation being read now")


class ConversationError(Answer):
    """A conversation that could not be read (the others were)."""

    conversation: str
    title: str
    code: str
    message: str


class ConversationRef(Answer):
    id: str
    title: str


class Period(Answer):
    """The period a fact would hold."""

    status: str = Field(description="current | history")
    from_: str = Field(alias="from")
    until: str | None
    label: str = Field(examples=["history 2026-03-01 – 2026-06-15"])


class ImportProposal(Answer):
    """A fact the extractor proposed, and what it would become against the memory as it is now."""

    id: str = Field(examples=["p1"])
    subject: str = Field(description="As the memory spells it, when it knows the subject and attribute")
    attribute: str
    fact: str
    source: str
    said_at: str
    conversation: ConversationRef
    status: str = Field(description="new, replaces, older, known or confirms")
    known: bool = Field(description="The memory knows it already")
    ticked: bool = Field(description="Proposed for keeping (not when known)")
    replaces: FactBrief | None = absent("The fact it would replace")
    current: FactBrief | None = absent("Older than what holds: the fact that holds")
    same_as: FactBrief | None = absent("Known: the fact the memory holds")
    period: Period | None = Field(description="The period it would hold if every ticked proposal were kept")


class AttributeReview(Answer):
    attribute: str
    conflict: bool = Field(description="Two conversations say different things: shown side by side")
    holds_now: FactBrief | None = Field(description="What the memory holds now")
    proposals: list[ImportProposal] = Field(description="In the order they were said")


class SubjectReview(Answer):
    subject: str
    attributes: list[AttributeReview]


class ImportReview(Answer):
    """Every proposal of a finished job, grouped by subject and attribute."""

    subjects: list[SubjectReview]
    count: int
    ticked: int
    conflicts: int
    left_out_secrets: int


class ImportJob(Answer):
    """An import: its state and progress, the archive's conversations; once finished, the review."""

    id: str
    knowledge_base: str
    state: str = Field(description="ready | running | failed | finished | cancelled | expired")
    created_at: str
    started_at: str | None
    finished_at: str | None
    archive: ArchiveInfo
    chosen: list[str] | None = Field(description="The ids of the conversations chosen (null until started)")
    progress: ImportProgress
    error: JobError | None = Field(description="Why it stopped (failed): start it again to continue")
    errors: list[ConversationError]
    left_out_secrets: int = Field(description="Proposals left out because they held a secret")
    proposed: int
    conversations: list[ConversationSummary] | None = absent("The conversations to choose from, or chosen (not listed)")
    review: ImportReview | None = absent("Once finished: every proposal")


class ImportRemoved(Answer):
    """An ended import, removed with its proposals."""

    id: str
    knowledge_base: str
    state: str
    removed: bool


class ImportListing(Answer):
    knowledge_base: str
    imports: list[ImportJob] = Field(description="Oldest first, without their conversations")


@dataclass
class _Runner:
    thread: threading.Thread
    started: float  # monotonic


class Imports:
    """Import jobs of memories (see the module's docstring)."""

    def __init__(self, bases: KnowledgeBases, memory: Memory, extractor: Extractor, *, locks: Locks) -> None:
        self.bases = bases
        self.locks = locks
        self.memory = memory
        self.extractor = extractor
        self._runners: dict[str, _Runner] = {}
        self._tried: dict[str, float] = {}
        self._guard = threading.Lock()
        self._closing = threading.Event()
        self._sweeper: threading.Thread | None = None

    # -- where jobs live ---------------------------------------------------------------
    def _base(self, actor: Actor, base_name: str, *, reading: bool = True) -> KnowledgeBase:
        """The memory, for someone who may extract from it (reading: it has an extractor, too)."""
        # Reading conversations for facts is the first step of keeping them: as for extraction.
        actor.require(WRITE_CONTENT)
        base = self.bases.get(actor, base_name)
        if reading:
            self.extractor.check(base)
        else:
            self.memory.check_memory(base)
        return base

    @staticmethod
    def _dir(base: KnowledgeBase, job_id: str | None = None) -> Path:
        root = base.folder / FOLDER
        return root / job_id if job_id else root

    def _job_dir(self, base: KnowledgeBase, job_id: str) -> Path:
        # An id as new_id writes it: ASCII letters and digits (no path, no name too long for the file system).
        if not (isinstance(job_id, str) and 4 < len(job_id) <= 64 and job_id.startswith("imp_") and job_id[4:].isascii()
                and job_id[4:].isalnum()):
            raise self._not_found(base, job_id)
        folder = self._dir(base, job_id)
        if not (folder / "job.json").is_file():
            raise self._not_found(base, job_id)
        return folder

    @staticmethod
    def _not_found(base: KnowledgeBase, job_id: str) -> NotFound:
        return NotFound(f"No import {job_id!r} in memory {base.name!r} (an ended one is removed after "
                        f"{KEEP_DONE.days} days): GET …/imports lists them", code="IMPORT_NOT_FOUND")

    @staticmethod
    def _read(folder: Path) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((folder / "job.json").read_text(encoding="utf-8"))
        return data

    @staticmethod
    def _write(folder: Path, job: dict[str, Any], *, durable: bool = True) -> None:
        # Progress only (what is done is proposals.jsonl's) is not synced: whole or not at all, no fsync per conversation.
        _put(folder / "job.json", json.dumps(job, ensure_ascii=False), durable=durable)

    @staticmethod
    def _conversations(folder: Path) -> list[Conversation]:
        file = folder / "conversations.json"
        if not file.exists():
            return []
        return [Conversation.from_dict(c) for c in json.loads(file.read_text(encoding="utf-8"))]

    @staticmethod
    def _drop_text(folder: Path) -> None:
        """The conversations' text goes (the job ended): only the proposals stay."""
        (folder / "conversations.json").unlink(missing_ok=True)

    # -- the person's steps ------------------------------------------------------------------
    def create(self, actor: Actor, base_name: str, data: bytes, filename: str = "archive") -> tuple[ImportJob, bool]:
        """A job over the archive's conversations, to choose from; True when new, False when the same archive has
        a job that has not ended (that one is answered: an upload again after a dropped connection continues it)."""
        base = self._base(actor, base_name)
        name = (_line(filename) or "archive")[-120:]
        raw = conversations_json(data, name)  # 4xx for anything that is not an export, before a byte is written
        del data
        digest = sha256(raw)  # of what is read: the same export zipped again is the same archive
        self.purge(base)
        earlier = self._same(base, digest)
        if earlier is not None:
            return self._answer(actor, base, earlier), False
        archive = parse_json(raw, name)
        del raw
        for conv in archive.conversations:  # a title that holds a secret is never kept, nor a proposal's source
            if find_secret(conv.title):
                conv.title = SECRET_TITLE
        job_id = new_id("imp")
        # Written aside and renamed into place: a crash midway leaves no job (purge removes what it left), and two
        # uploads of one archive at once make one job (the check and the rename under the memory's lock, held briefly).
        aside = self._dir(base) / f".{job_id}.new"
        aside.mkdir(parents=True)
        try:
            atomic_write(aside / "conversations.json",
                         json.dumps([c.to_dict() for c in archive.conversations], ensure_ascii=False), mode=0o600)
            job: dict[str, Any] = {
                "id": job_id, "knowledge_base": base.name, "state": "ready", "created_at": iso(), "started_at": None,
                "finished_at": None, "archive": {"name": name, "format": archive.format,
                                                 "conversations": len(archive.conversations)},
                "digest": digest, "conversations": [c.summary() for c in archive.conversations], "chosen": None,
                "progress": {"done": 0, "total": 0}, "error": None,
            }
            self._write(aside, job)
            with self.locks.folder(base.folder):
                earlier = self._same(base, digest)
                if earlier is not None:
                    return self._answer(actor, base, earlier), False
                os.rename(aside, self._dir(base, job_id))
        finally:
            shutil.rmtree(aside, ignore_errors=True)
        return self._answer(actor, base, job), True

    def _same(self, base: KnowledgeBase, digest: str) -> dict[str, Any] | None:
        """The job of the same archive that has not ended (an upload again after a dropped connection continues it)."""
        for earlier in self._jobs(base):
            if earlier.get("digest") == digest and earlier["state"] not in ("cancelled", "expired"):
                return earlier
        return None

    def start(
        self, actor: Actor, base_name: str, job_id: str, *, ids: list[str] | None = None, since: str | None = None,
        until: str | None = None, title: str | None = None, everything: bool = False,
    ) -> ImportJob:
        """Read the chosen conversations in the background. A job stopped (an unavailable extractor, a restart) is
        continued as it was chosen; one running already is answered as it is."""
        base = self._base(actor, base_name)
        folder = self._job_dir(base, job_id)
        self._purge_one(folder, datetime.now(UTC))
        folder = self._job_dir(base, job_id)
        with self.locks.folder(folder):
            job = self._read(folder)
            if job["state"] in ENDED:
                raise Conflict(f"The import {job_id} has {job['state']}: upload the archive again to import more",
                               code="IMPORT_ENDED")
            if job["state"] == "ready":
                filtered = any(v is not None and v != "" for v in (since, until, title))
                if ids is None and not filtered and not everything:
                    raise Invalid("Choose the conversations to read: their ids (conversations), or since/until/title, "
                                  "or all", code="NOTHING_CHOSEN")
                everyone = self._conversations(folder)
                if ids is not None:
                    unknown = sorted(set(ids) - {c.id for c in everyone})
                    if unknown:
                        raise Invalid(f"No conversation {unknown[0]!r} in this archive ({len(unknown)} unknown id(s)): "
                                      "the job's conversations list them", code="NOTHING_CHOSEN")
                chosen = choose(everyone, since=since, until=until, title=title, ids=ids)
                if not chosen:
                    raise Invalid("No conversation with messages matches that choice: nothing to read",
                                  code="NOTHING_CHOSEN")
                # Only the chosen conversations are kept for the job; the others' text goes now.
                _put(folder / "conversations.json", json.dumps([c.to_dict() for c in chosen], ensure_ascii=False))
                job.update(state="running", started_at=iso(), chosen=[c.id for c in chosen],
                           conversations=[c.summary() for c in chosen], progress={"done": 0, "total": len(chosen)})
            elif job["state"] == "failed":
                job.update(state="running", error=None)
            self._write(folder, job)
        self._resume(base, job_id, force=True)
        return self._answer(actor, base, job)

    def get(self, actor: Actor, base_name: str, job_id: str) -> ImportJob:
        base = self._base(actor, base_name, reading=False)
        folder = self._job_dir(base, job_id)
        self._purge_one(folder, datetime.now(UTC))
        folder = self._job_dir(base, job_id)  # removed when ended a week ago
        job = self._read(folder)
        if job["state"] == "running":
            self._resume(base, job_id)  # its process stopped (a restart): whoever follows it continues it
        return self._answer(actor, base, job, review=job["state"] == "finished")

    def listing(self, actor: Actor, base_name: str) -> ImportListing:
        base = self._base(actor, base_name, reading=False)
        self.purge(base)
        jobs = [self._answer(actor, base, j, conversations=False) for j in self._jobs(base)]
        return ImportListing.model_construct(knowledge_base=base.name, imports=jobs)

    def cancel(self, actor: Actor, base_name: str, job_id: str) -> ImportJob | ImportRemoved:
        """Stop a job and drop its conversations and proposals; an ended job is removed altogether."""
        base = self._base(actor, base_name, reading=False)
        folder = self._job_dir(base, job_id)
        with self.locks.folder(folder):
            job = self._read(folder)
            if job["state"] in ENDED:
                shutil.rmtree(folder, ignore_errors=True)
                return ImportRemoved.model_construct(id=job_id, knowledge_base=base.name, state=job["state"], removed=True)
            job.update(state="cancelled", finished_at=iso())
            self._write(folder, job)
            self._drop_text(folder)
            (folder / "proposals.jsonl").unlink(missing_ok=True)
        return self._answer(actor, base, job)

    # -- upkeep --------------------------------------------------------------------------
    def _jobs(self, base: KnowledgeBase) -> list[dict[str, Any]]:
        root = self._dir(base)
        jobs = []
        for folder in sorted(root.iterdir()) if root.is_dir() else []:
            if folder.name.startswith("."):  # one being written (create)
                continue
            try:
                jobs.append(self._read(folder))
            except (OSError, ValueError):
                continue
        return sorted(jobs, key=lambda j: j.get("created_at") or "")

    def purge(self, base: KnowledgeBase | None = None, *, now: datetime | None = None) -> int:
        """Jobs older than a day lose their conversations (one not finished: expired); ended ones older than a week
        go. At start for every memory and every SWEEP while the server runs, and before each upload or listing (and
        for its own job, before each look at a job or start of it). How many jobs changed."""
        now = now or datetime.now(UTC)
        changed = 0
        for b in [base] if base is not None else [b for b in self.bases.all() if b.kind == "memory"]:
            root = self._dir(b)
            for folder in sorted(root.iterdir()) if root.is_dir() else []:
                if folder.is_dir():
                    changed += self._purge_one(folder, now)
        return changed

    def _purge_one(self, folder: Path, now: datetime) -> int:
        if folder.name.startswith(".") or not (folder / "job.json").exists():
            # What a crash left: an upload cut short (its conversations' text, written aside), a job's folder made
            # again for a lock after it was removed. Not one being written now (younger than ORPHAN).
            try:
                if now.timestamp() - folder.stat().st_mtime > ORPHAN.total_seconds():
                    shutil.rmtree(folder, ignore_errors=True)
                    return 1
            except OSError:
                pass
            return 0
        try:
            with self.locks.folder(folder):
                job = self._read(folder)
                age = now - moment(job["created_at"])
                if job["state"] in ENDED and age > KEEP_DONE:
                    shutil.rmtree(folder, ignore_errors=True)
                    return 1
                if age > EXPIRE and (job["state"] not in ENDED or (folder / "conversations.json").exists()):
                    if self._running_here(job["id"]):
                        return 0
                    if job["state"] not in ENDED:
                        job.update(state="expired", finished_at=iso())
                        self._write(folder, job)
                    self._drop_text(folder)
                    return 1
        except (OSError, ValueError, KeyError):
            pass
        return 0

    def _sweep(self) -> None:
        """While the server runs: a job left alone (uploaded, never started nor looked at) loses its conversations
        after a day all the same, not at the next restart."""
        while not self._closing.wait(SWEEP):
            try:
                self.purge()
            except Exception:  # noqa: BLE001 - the next sweep tries again
                log.exception("the sweep of imports stopped on an error")

    def close(self) -> None:
        """The core stops: each job's thread ends after the conversation it is reading (its proposals kept); the next
        process continues it."""
        self._closing.set()
        with self._guard:
            runners = list(self._runners.values())
            sweeper, self._sweeper = self._sweeper, None
        for runner in runners:
            runner.thread.join(timeout=30)
        if sweeper is not None:
            sweeper.join(timeout=30)

    def reopen(self) -> None:
        self._closing.clear()
        with self._guard:
            if self._sweeper is None or not self._sweeper.is_alive():
                self._sweeper = threading.Thread(target=self._sweep, name="astralyx-imports-sweep", daemon=True)
                self._sweeper.start()

    @property
    def closing(self) -> bool:
        return self._closing.is_set()

    # -- the job's thread ------------------------------------------------------------------
    def _running_here(self, job_id: str) -> bool:
        with self._guard:
            runner = self._runners.get(job_id)
            return runner is not None and runner.thread.is_alive()

    def _resume(self, base: KnowledgeBase, job_id: str, *, force: bool = False) -> None:
        if self._closing.is_set():
            return
        with self._guard:
            runner = self._runners.get(job_id)
            if runner is not None and runner.thread.is_alive():
                return
            last = self._tried.get(job_id)
            if not force and last is not None and time.monotonic() - last < RETRY_RESUME:
                return
            self._tried[job_id] = time.monotonic()
            thread = threading.Thread(target=self._run, args=(base, job_id), name=f"astralyx-import-{job_id}", daemon=True)
            self._runners[job_id] = _Runner(thread, time.monotonic())
            thread.start()

    def _run(self, base: KnowledgeBase, job_id: str) -> None:
        folder = self._dir(base, job_id)
        if not (folder / "job.json").exists():  # removed meanwhile: its folder is not made again for a lock
            return self._ended(job_id)
        try:
            with self.locks.job("run", under=folder) as mine:
                if mine:  # else another process or replica reads it now
                    self._read_all(base, folder)
        except FileNotFoundError:
            pass  # cancelled and removed, or its memory deleted
        except Exception:  # noqa: BLE001 - a job's thread must not die silently
            log.exception("import %s of %s/%s stopped", job_id, base.workspace, base.name)
            self._update(folder, lambda j: j.update(state="failed", error={
                "code": "INTERNAL", "message": "The import stopped on an error the server did not foresee; its log says what: "
                "start it again to continue"}) if j["state"] == "running" else None)
        finally:
            self._ended(job_id)

    def _ended(self, job_id: str) -> None:
        with self._guard:
            self._runners.pop(job_id, None)

    def _update(self, folder: Path, change: Any, *, durable: bool = True) -> dict[str, Any] | None:
        """Change job.json under its lock (`change` returns False to leave it): None when the job is gone."""
        if not (folder / "job.json").exists():  # removed (cancelled when ended, its memory deleted): not made again
            return None
        try:
            with self.locks.folder(folder):
                job = self._read(folder)
                if change(job) is not False:
                    self._write(folder, job, durable=durable)
                return job
        except (FileNotFoundError, ValueError):
            return None

    def _read_all(self, base: KnowledgeBase, folder: Path) -> None:
        job = self._read(folder)
        if job["state"] != "running":
            return
        conversations = {c.id: c for c in self._conversations(folder)}
        done = _done(folder)
        todo = [cid for cid in job["chosen"] if cid not in done and cid in conversations]
        # The extractor is told the subjects it proposed in earlier conversations too: one spelling throughout.
        known = self.memory.known_subjects(base)
        for line in _lines(folder):
            for fact in line.get("facts") or []:
                attributes = known.setdefault(fact["subject"], [])
                if fact["attribute"] not in attributes:
                    attributes.append(fact["attribute"])
        vendor = VENDORS.get(job["archive"]["format"], "chat")
        started, count, written = time.monotonic(), 0, 0.0
        for cid in todo:
            if self._closing.is_set():
                return
            try:
                if self._read(folder)["state"] != "running":
                    return  # cancelled or expired meanwhile
            except (FileNotFoundError, ValueError):
                return  # removed (its memory deleted)
            conv = conversations[cid]
            fresh = self.bases.find(base.workspace, base.name)
            if fresh is None or fresh.created_at != base.created_at:
                return
            call = Call()
            record: dict[str, Any] = {"conversation": cid}
            try:
                proposals, windows = self.extractor.propose(fresh, conv.chat(), source=f"{vendor}: {conv.title}"[:200],
                                                            known=known, call=call)
                facts = [{**f, "conversation": cid} for f in proposals.facts]
                record.update(facts=facts, left_out_secrets=proposals.left_out_secrets, windows=windows,
                            model_seconds=round(call.model_seconds, 3))
                for fact in facts:
                    attributes = known.setdefault(fact["subject"], [])
                    if fact["attribute"] not in attributes:
                        attributes.append(fact["attribute"])
            except AstralyxError as e:
                if e.code in STOPPING:
                    stop = _error(e)
                    self._update(folder, lambda j, stop=stop: j.update(state="failed", error=stop)
                                 if j["state"] == "running" else False)
                    return
                record.update(facts=[], error=_error(e))
            count += 1
            if not self._append(folder, record):
                return
            done.add(cid)
            elapsed = time.monotonic() - started
            rate = count / elapsed * 60 if elapsed > 0 else None
            left = len(job["chosen"]) - len(done)

            def progress(j: dict[str, Any], rate: float | None = rate, left: int = left) -> Any:
                if j["state"] != "running":
                    return False
                j["progress"] = {"done": len(done), "total": len(j["chosen"]),
                                 "rate_per_minute": round(rate, 2) if rate else None,
                                 "eta_seconds": round(left / rate * 60) if rate else None}
                return None

            if time.monotonic() - written >= PROGRESS_EVERY or not left:
                self._update(folder, progress, durable=False)
                written = time.monotonic()

        def finish(j: dict[str, Any]) -> Any:
            if j["state"] != "running":
                return False
            j.update(state="finished", finished_at=iso())
            j["progress"].update(done=len(done), eta_seconds=0)
            return None

        job = self._update(folder, finish) or {}
        if job.get("state") == "finished":
            self._drop_text(folder)  # the conversations were read: only the proposals stay

    def _append(self, folder: Path, line: dict[str, Any]) -> bool:
        """One conversation's proposals, on disk before the next is read (a torn last line is read as not done)."""
        if not (folder / "job.json").exists():
            return False
        try:
            with self.locks.folder(folder):
                if self._read(folder)["state"] != "running":
                    return False
                fd = os.open(folder / "proposals.jsonl", os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
                with open(fd, "a+b") as f:
                    # A line a crash cut short (kill -9 mid-write) is ended first, else this one would be lost with it.
                    torn = f.seek(0, os.SEEK_END) > 0 and os.pread(fd, 1, f.tell() - 1) != b"\n"
                    f.write((("\n" if torn else "") + json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8"))
                    f.flush()
            return True
        except (FileNotFoundError, ValueError):
            return False

    # -- answers ---------------------------------------------------------------------------
    def _answer(self, actor: Actor, base: KnowledgeBase, job: dict[str, Any], *, review: bool = False,
                conversations: bool = True) -> ImportJob:
        """The job as answered: what job.json and proposals.jsonl say, in the answer's fields only (what the job keeps
        for its own use, e.g. the archive's digest, stays on disk)."""
        folder = self._dir(base, job["id"])
        lines = _lines(folder) if folder.exists() else []
        titles = {c["id"]: c["title"] for c in job.get("conversations") or []}
        progress: dict[str, Any] = job.get("progress") or {}
        done = progress.get("done", 0)
        if job.get("chosen"):  # what is done is on disk as each conversation is read (job.json's figures lag a second)
            done = len({line["conversation"] for line in lines} & set(job["chosen"]))
        archive, error = job["archive"], job.get("error")
        return ImportJob.model_construct(
            id=job["id"], knowledge_base=job["knowledge_base"], state=job["state"], created_at=job["created_at"],
            started_at=job.get("started_at"), finished_at=job.get("finished_at"),
            archive=ArchiveInfo.model_construct(name=archive["name"], format=archive["format"],
                                                conversations=archive["conversations"]),
            chosen=job.get("chosen"),
            progress=ImportProgress.model_construct(
                done=done, total=progress.get("total", 0), rate_per_minute=progress.get("rate_per_minute"),
                eta_seconds=progress.get("eta_seconds"), current=_current(job, lines, titles)),
            error=None if error is None else JobError.model_construct(code=error["code"], message=error["message"]),
            errors=[ConversationError.model_construct(conversation=line["conversation"],
                                                      title=titles.get(line["conversation"], ""),
                                                      code=line["error"]["code"], message=line["error"]["message"])
                    for line in lines if line.get("error")],
            left_out_secrets=sum(int(line.get("left_out_secrets") or 0) for line in lines),
            proposed=sum(len(line.get("facts") or []) for line in lines),
            conversations=[ConversationSummary.model_construct(id=c["id"], title=c["title"], created_at=c["created_at"],
                                                               messages=c["messages"])
                           for c in job.get("conversations") or []] if conversations else None,
            review=self.review(actor, base, lines, titles) if review else None,
        )

    def review(self, actor: Actor, base: KnowledgeBase, lines: list[dict[str, Any]], titles: dict[str, str]) -> ImportReview:
        """Every proposal of the job, grouped by subject and attribute, each with what it would become against the
        memory as it is now, and the period it would hold if every ticked proposal were kept."""
        proposals: list[tuple[FactIn, ConversationRef]] = []
        for line in lines:
            for raw in line.get("facts") or []:
                try:
                    fin = FactIn.model_validate({k: raw.get(k) for k in ("subject", "attribute", "fact", "source", "said_at")})
                except (ValueError, AstralyxError):
                    continue
                if find_secret_in_fact(fin.subject, fin.attribute, fin.fact, fin.source):
                    continue  # never shown, never kept (the extractor's rule, again here)
                proposals.append((fin, ConversationRef.model_construct(id=raw["conversation"],
                                                                       title=titles.get(raw["conversation"], ""))))
        base = self.memory.base(actor, base.name, WRITE_CONTENT)
        with self.locks.folder(base.folder):
            store = self.memory.store(base)
            existing = store.facts()
        timelines = store.timelines(existing)
        latest = max((moment(f.kept_at) for f in existing), default=datetime.min.replace(tzinfo=UTC))
        start = max(datetime.now(UTC), latest + timedelta(microseconds=1))
        items: list[ImportProposal] = []
        facts: list[Fact] = []
        for n, (fin, conversation) in enumerate(proposals):
            fact = Fact(id=new_id("f"), subject=fin.subject, attribute=fin.attribute, fact=fin.fact, source=fin.source,
                        said_at=fin.said_at or iso(), kept_at=_stamp(start + timedelta(microseconds=n)))
            timeline = timelines.get(key_of(fact), [])
            if timeline:  # one spelling per subject and attribute: the one the memory knows
                fact = fact.with_(subject=timeline[-1].subject, attribute=timeline[-1].attribute)
            placed = place(timeline, fact)
            known = placed.change in (KNOWN, CONFIRMS)
            replaces = current = same_as = None
            if placed.change == REPLACES and placed.current is not None:
                replaces = _brief(placed.current)
            elif placed.change == OLDER and placed.current is not None:
                current = _brief(placed.current)
            elif known and placed.known is not None:
                same_as = _brief(placed.known)
            items.append(ImportProposal.model_construct(
                id=f"p{n + 1}", subject=fact.subject, attribute=fact.attribute, fact=fact.fact, source=fact.source,
                said_at=fact.said_at, conversation=conversation, status=placed.change, known=known, ticked=not known,
                replaces=replaces, current=current, same_as=same_as, period=None))
            facts.append(fact)
        # The period each would hold if every ticked one were kept: the timeline rule over memory + ticked proposals.
        by_key: dict[tuple[str, str], list[int]] = {}
        for i, fact in enumerate(facts):
            by_key.setdefault(key_of(fact), []).append(i)
        groups: dict[str, SubjectReview] = {}
        for key, indexes in by_key.items():
            ticked = [facts[i] for i in indexes if items[i].ticked]
            arranged, where = settle(timelines.get(key, []), ticked)
            notes = {f.id: f for f in arranged}
            for i in indexes:
                item = items[i]
                home = notes.get(where.get(facts[i].id, "")) if item.ticked else None
                if home is None and item.known and item.same_as is not None:
                    home = notes.get(item.same_as.id)
                item.period = _period(home) if home is not None else None
            members = [items[i] for i in indexes]
            wordings = {norm_wording(m.fact) for m in members if not m.known}
            sources = {m.conversation.id for m in members if not m.known}
            members.sort(key=lambda m: (moment(m.said_at), m.id))
            current_facts = timelines.get(key, [])
            subject = groups.setdefault(key[0], SubjectReview.model_construct(subject=members[0].subject, attributes=[]))
            subject.attributes.append(AttributeReview.model_construct(
                attribute=members[0].attribute,
                # Two conversations say different things of the same subject and attribute: shown side by side.
                conflict=len(wordings) > 1 and len(sources) > 1,
                holds_now=_brief(current_facts[-1]) if current_facts else None,
                proposals=members,
            ))
        subjects = sorted(groups.values(), key=lambda g: norm_name(g.subject))
        for group in subjects:
            group.attributes.sort(key=lambda a: norm_name(a.attribute))
        return ImportReview.model_construct(
            subjects=subjects, count=len(items), ticked=sum(1 for i in items if i.ticked),
            conflicts=sum(1 for g in subjects for a in g.attributes if a.conflict),
            left_out_secrets=sum(int(line.get("left_out_secrets") or 0) for line in lines))


def _put(path: Path, text: str, *, durable: bool = True) -> None:
    """A job's file written whole (temp, rename), the owner's alone; never in a folder made again for it: a memory
    deleted meanwhile (its folder moved away) is not brought back by its job (FileNotFoundError instead)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # mode 0o600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def _error(e: AstralyxError) -> dict[str, str]:
    """An error as the job keeps it: an upstream's message may quote the conversation it was sent, secrets and all."""
    message = e.message
    found = find_secret(message)
    if found:
        message = f"The extractor answered {e.code}; its message is left out: it quotes {found}"
    return {"code": e.code, "message": message}


def _brief(fact: Fact) -> FactBrief:
    """As the review names a fact (without its later sayings)."""
    return FactBrief.model_construct(id=fact.id, fact=fact.fact, said_at=fact.said_at, source=fact.source, said_again=None)


def period_label(status: str, start: str, until: str | None) -> str:
    """"current from 2026-10-12" or "history 2026-03-01 – 2026-06-15": the period a fact holds, as people read it."""
    if status == "current" or until is None:
        return f"current from {start[:10]}"
    return f"history {start[:10]} – {until[:10]}"


def _period(fact: Fact) -> Period:
    return Period.model_construct(status=fact.status, from_=fact.said_at, until=fact.until,
                                  label=period_label(fact.status, fact.said_at, fact.until))


def _lines(folder: Path) -> list[dict[str, Any]]:
    """The conversations read so far; a line a crash cut short is not one (that conversation is read again)."""
    file = folder / "proposals.jsonl"
    out = []
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    for raw in text.splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and isinstance(line.get("conversation"), str):
            out.append(line)
    return out


def _done(folder: Path) -> set[str]:
    return {line["conversation"] for line in _lines(folder)}


def _current(job: dict[str, Any], lines: list[dict[str, Any]], titles: dict[str, str]) -> str | None:
    """The title of the conversation being read now (the first chosen one not read yet)."""
    if job["state"] != "running":
        return None
    done = {line["conversation"] for line in lines}
    return next((titles.get(c, "") for c in job.get("chosen") or [] if c not in done), None)
