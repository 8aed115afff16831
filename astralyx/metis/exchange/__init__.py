"""Export and import a base: its spec, its files and the records that belong to it, as one .tar.gz (archive.py);
a memory's facts as markdown too (markdown.py).

Export (knowledge-bases:read) takes a snapshot under the base's folder lock, hard links of its files (a
write after it is a new file, so the snapshot keeps what was there), then streams it unlocked. Import
(knowledge-bases:manage: it creates a base) reads the whole archive into a folder no one sees, every member
checked, before anything is created; then creates the base, moves the files in, adds its records, and starts
the reindex job that builds its index from them. A failure after the base was created deletes it: no half base.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import Field, ValidationError

from ...answers import Answer, absent
from ...auth.actor import Actor
from ...auth.roles import MANAGE_BASES, READ
from ...engines import Database
from ...errors import Conflict, Forbidden, Invalid, describe
from ...locks import Locks
from ...util import check_name, fsync_dir, new_id
from ..bases import KnowledgeBase, KnowledgeBaseRequest, KnowledgeBases, KnowledgeBaseSpec, KnowledgeBaseView, Metadata
from ..documents import Documents
from ..jobs import IdleSync, SyncStatus
from ..memory import Memory
from ..sources import walk
from ..writer import FACTS_DIR
from . import markdown
from .archive import (
    AREAS,
    MANIFEST,
    MAX_JSON,
    MAX_MEMBERS,
    MAX_UNPACKED,
    MEDIA_TYPE,
    MODEL_SAVES,
    PREFIX,
    Entry,
    Manifest,
    ManifestBase,
    invalid,
    member_path,
    members,
    path_problem,
    stream,
)
from .records import SaveRecord, add_saves, read_saves, saves_of

log = logging.getLogger("astralyx.metis")

FORMATS = ("archive", "markdown")
STALE = 24 * 3600  # a snapshot or an import's folder left this long (a crash) is removed by the next one


class Imported(Answer):
    """A base imported: what was imported, what was changed or left out, and the reindex job that builds its index."""

    knowledge_base: KnowledgeBaseView
    imported: dict[str, Any] = Field(description="How many files, notes, saved notes, bytes and model saves (a memory: "
                                                 "its facts too)")
    from_: dict[str, Any] = Field(alias="from", description="The archive's manifest: the base it was, when, by which "
                                                            "version")
    warnings: list[str] = Field(description="What of the spec could not be kept here, and why")
    index: SyncStatus | IdleSync = Field(description="The reindex job (?wait=true: as it ended)")
    skipped: list[dict[str, Any]] | None = absent("Files left out, and why")

@dataclass
class Export:
    """An export ready to stream: its file name, media type and chunks (the snapshot goes once they are read)."""

    filename: str
    media_type: str
    snapshot: Path
    entries: list[Entry]
    left_out: list[dict[str, str]] = field(default_factory=list)

    def chunks(self) -> Iterator[bytes]:
        try:
            yield from stream(self.entries)
        finally:
            shutil.rmtree(self.snapshot, ignore_errors=True)

    def discard(self) -> None:
        shutil.rmtree(self.snapshot, ignore_errors=True)


@dataclass
class _Staged:
    manifest: Manifest
    folder: Path
    files: dict[str, int] = field(default_factory=lambda: dict.fromkeys(AREAS, 0))
    size: int = 0
    saves: list[SaveRecord] = field(default_factory=list)
    facts: list[Any] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)


class Exchange:
    def __init__(self, db: Database, bases: KnowledgeBases, memory: Memory, documents: Documents, *, locks: Locks) -> None:
        self.db = db
        self.locks = locks
        self.bases = bases
        self.memory = memory
        self.documents = documents
        self.max_unpacked = MAX_UNPACKED
        self.max_members = MAX_MEMBERS

    @property
    def work(self) -> Path:
        """Where snapshots and imports are built: beside the bases (one filesystem: links and renames work)."""
        return self.bases.root / ".exchange"

    def _clear_stale(self) -> None:
        if not self.work.is_dir():
            return
        cutoff = time.time() - STALE
        for entry in self.work.iterdir():
            try:
                if entry.stat().st_mtime < cutoff:
                    shutil.rmtree(entry, ignore_errors=True)
            except FileNotFoundError:
                continue

    # -- export ----------------------------------------------------------------------------------------------
    def export(self, actor: Actor, name: str, fmt: str = "archive") -> Export:
        """The base as an archive to stream (or, `markdown`, a memory's facts as a folder of pages, packed)."""
        actor.require(READ)
        base = self.bases.get(actor, name)
        if fmt not in FORMATS:
            raise Invalid(f"format {fmt!r}: an export is an `archive` (the whole base) or `markdown` (a memory's facts)",
                          code="INVALID")
        if fmt == "markdown":
            self.memory.check_memory(base)
        self._clear_stale()
        snapshot = self.work / new_id("export")
        snapshot.mkdir(parents=True)
        try:
            with self.locks.folder(base.folder):
                if base.kind == "memory":
                    self.memory.store(base)  # a change a crash interrupted is finished first
                stored, left_out = _snapshot(base, snapshot, facts_only=fmt == "markdown")
                saves = saves_of(self.db, base)
            manifest = Manifest(contents="facts" if fmt == "markdown" else "base", knowledge_base=ManifestBase(
                name=base.name, workspace=base.workspace, created_at=base.created_at,
                spec=base.spec.model_dump(mode="json")), left_out=left_out)
            if fmt == "markdown":
                facts = markdown.settle_facts([f for f in (markdown.read_fact(rel, file.read_bytes())[0]
                                                           for rel, file in stored) if f is not None])
                entries = list(markdown.markdown_entries(facts, manifest, stored))
                return Export(f"{base.name}-facts.tar.gz", MEDIA_TYPE, snapshot, entries, left_out)
            entries = [Entry.of_bytes(MANIFEST, manifest.to_bytes()),
                       Entry.of_bytes(MODEL_SAVES, _json(saves))]
            entries += [Entry.of_file(PREFIX + rel, file) for rel, file in stored]
            return Export(f"{base.name}.tar.gz", MEDIA_TYPE, snapshot, entries, left_out)
        except BaseException:
            shutil.rmtree(snapshot, ignore_errors=True)
            raise

    # -- import ----------------------------------------------------------------------------------------------
    def import_archive(self, actor: Actor, raw: BinaryIO, name: str | None = None) -> Imported:
        """A new base from an archive (`name`: another name than the manifest's). Answers the base, what was
        imported, what was changed or left out and why, and the reindex job that builds its index."""
        actor.require(MANAGE_BASES)
        if name is not None:
            check_name(name, "Knowledge base")
            self._check_free(actor, name)
        self._clear_stale()
        folder = self.work / new_id("import")
        folder.mkdir(parents=True)
        try:
            staged = self._stage(actor, raw, folder, name)
            name = name or staged.manifest.knowledge_base.name
            assert name is not None  # _stage checked it
            request, warnings = self._request(actor, name, staged.manifest)
            base = self.bases.create(actor, request, default_embedding=True)
            try:
                self._move_in(base, staged)
                add_saves(self.db, base, staged.saves)
                if base.kind == "memory":
                    self.memory.repair(base)  # an archive we wrote is settled already; files set by hand are put right
            except BaseException:
                log.exception("import of %s/%s failed after it was created: deleting it", base.workspace, base.name)
                self.bases.delete(actor, base.name)
                raise
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        job, _ = self.documents.start_for(base, "reindex")
        imported: dict[str, Any] = {"files": staged.files["files"], "notes": staged.files["notes"],
                                    "saved": staged.files["saved"], "bytes": staged.size, "model_saves": len(staged.saves)}
        if base.kind == "memory":
            imported.update(markdown.summary(self.memory.facts_in(base)))
        origin = ({k: v for k, v in staged.manifest.model_dump().items() if k not in ("knowledge_base", "left_out")}
                  | {"name": staged.manifest.knowledge_base.name, "workspace": staged.manifest.knowledge_base.workspace})
        skipped = [{**f, "why": f"left out at export: {f.get('why')}"} for f in staged.manifest.left_out] + staged.skipped
        return Imported.model_construct(knowledge_base=base.view(), imported=imported, from_=origin, warnings=warnings,
                                        index=job.status(), skipped=skipped or None)

    def _check_free(self, actor: Actor, name: str) -> None:
        if self.bases.find(actor.workspace, name) is not None:
            raise Conflict(f"A knowledge base named {name!r} exists already in this workspace: import it under another "
                           "name (--as NAME, ?name=NAME)", code="BASE_EXISTS")

    def _stage(self, actor: Actor, raw: BinaryIO, folder: Path, name: str | None) -> _Staged:
        """Read and check the whole archive into `folder` (the base's files as they will be)."""
        staged: _Staged | None = None
        seen: set[str] = set()
        for member in members(raw, limit=self.max_unpacked, max_members=self.max_members):
            if staged is None:
                if member.name.removeprefix("./") != MANIFEST or member.kind != "file":
                    raise invalid(f"its first member is {member.name!r}, not {MANIFEST}")
                staged = _Staged(Manifest.read(member.read_all(MAX_JSON)), folder)
                wanted = name or staged.manifest.knowledge_base.name
                if not wanted:
                    raise Invalid("The archive names no base: give it a name (--as NAME, ?name=NAME)", code="INVALID_NAME")
                check_name(wanted, "Knowledge base")
                self._check_free(actor, wanted)
                continue
            relpath = member_path(member.name, member.kind)
            key = member.name.removeprefix("./").rstrip("/")
            if key in seen:
                raise invalid(f"{member.name!r} is in it twice")
            seen.add(key)
            if relpath is None:
                if key == MODEL_SAVES and member.kind == "file":
                    staged.saves = read_saves(member.read_all(MAX_JSON))
                continue
            if member.kind == "folder":
                continue
            if staged.manifest.contents == "facts":
                data = member.read_all(markdown.MAX_FACT_FILE) if member.size <= markdown.MAX_FACT_FILE else b""
                self._stage_fact(staged, relpath, data, member.size)
                continue
            if relpath.startswith(FACTS_DIR + "/") and member.size <= markdown.MAX_FACT_FILE:
                # A memory's fact is checked for secrets as a kept one is (an archive may be made by hand, or by an
                # older detector): one that looks like a secret is left out, and the memory's repair (after the
                # move) settles its timeline without it.
                data = member.read_all(markdown.MAX_FACT_FILE)
                if markdown.secret_in(relpath.removeprefix(FACTS_DIR + "/"), data):
                    staged.skipped.append({"file": relpath, "why": markdown.SECRET})
                    continue
                _write(folder / relpath, iter([data]), member.mtime)
                staged.files["notes"] += 1
                staged.size += member.size
                continue
            _write(folder / relpath, member.chunks(), member.mtime)
            staged.files[relpath.split("/", 1)[0]] += 1
            staged.size += member.size
        if staged is None:  # pragma: no cover - members() refuses an empty archive
            raise invalid("it is empty")
        if staged.manifest.contents == "facts":
            if not staged.facts:
                why = f" ({len(staged.skipped)} file(s) were not: {staged.skipped[0]['why']}…)" if staged.skipped else ""
                raise invalid(f"it holds no facts' notes{why}; a folder of facts is a memory's {FACTS_DIR}/, each note "
                              "with front matter: subject, attribute, said_at, and the fact")
            for path, data in markdown.fact_files(markdown.settle_facts(staged.facts)):
                _write(folder / path, iter([data]), time.time())
                staged.files["notes"] += 1
                staged.size += len(data)
        _fsync_tree(folder)
        return staged

    @staticmethod
    def _stage_fact(staged: _Staged, relpath: str, data: bytes, size: int) -> None:
        if not relpath.startswith(FACTS_DIR + "/"):
            staged.skipped.append({"file": relpath, "why": f"not in {FACTS_DIR}/: an archive of facts holds facts only"})
            return
        if size > markdown.MAX_FACT_FILE:
            staged.skipped.append({"file": relpath, "why": f"larger than {markdown.MAX_FACT_FILE:,} bytes: not a fact's note"})
            return
        fact, why = markdown.read_fact(relpath.removeprefix(FACTS_DIR + "/"), data)
        if fact is None:
            staged.skipped.append({"file": relpath, "why": why or "not a fact"})
        else:
            staged.facts.append(fact)

    def _request(self, actor: Actor, name: str, manifest: Manifest) -> tuple[KnowledgeBaseRequest, list[str]]:
        """The new base's create request from the manifest's spec, less what cannot be here (said in warnings): a
        deployment this workspace lacks (the workspace's embedding is used instead), a folder it may not read."""
        spec = dict(manifest.knowledge_base.spec)
        if manifest.contents == "facts":
            spec["kind"] = "memory"
        warnings: list[str] = []
        for role, kind in (("embedding", "embedding"), ("extractor", "chat")):
            ref = spec.get(role)
            deployment = ref.get("deployment") if isinstance(ref, dict) else None
            if deployment is None:
                continue
            found = self.bases.deployments.find(actor.workspace, str(deployment))
            if found is None or found.spec.kind != kind:
                del spec[role]
                instead = "the workspace's embedding deployment, if it has one ready" if role == "embedding" else "none"
                warnings.append(f"spec.{role}: this workspace has no {kind} deployment {deployment!r}: {instead} "
                                f"(set one with `astra metis update {name} --{role} DEPLOYMENT`)")
        sources = spec.get("sources")
        if isinstance(sources, list):
            kept = []
            for source in sources:
                folder = source.get("folder") if isinstance(source, dict) else None
                try:
                    if isinstance(folder, str):
                        self.bases.source_roots.check(folder, free=actor.key_id is None)
                except Forbidden as e:
                    warnings.append(f"spec.sources: {folder} left out: {e.message}")
                    continue
                if isinstance(folder, str) and not Path(folder).expanduser().is_dir():
                    warnings.append(f"spec.sources: {folder} does not exist on this machine: its files are not in the "
                                    "archive; put them there (or change the base's sources) and sync")
                kept.append(source)
            spec["sources"] = kept
        try:
            return KnowledgeBaseRequest(metadata=Metadata(name=name), spec=KnowledgeBaseSpec.model_validate(spec)), warnings
        except ValidationError as e:
            raise invalid(f"the base's spec in the manifest is not valid ({describe(e)})") from None

    def _move_in(self, base: KnowledgeBase, staged: _Staged) -> None:
        """The staged areas into the new base's folder (a rename each: same filesystem)."""
        with self.locks.folder(base.folder):
            for area in AREAS:
                source = staged.folder / area
                if not source.is_dir():
                    continue
                target = base.folder / area
                if target.exists():
                    raise Conflict(f"{base.name}/{area} was written while the base was being imported: import it again",
                                   code="CONFLICT")
                os.rename(source, target)
            fsync_dir(base.folder)


# -- files -------------------------------------------------------------------------------------------------------
def _snapshot(base: KnowledgeBase, into: Path, *, facts_only: bool) -> tuple[list[tuple[str, Path]], list[dict[str, str]]]:
    """Hard links (copies where links cannot be made) of the base's files, as (path in the base, file): the base's
    areas as the index reads them (hidden names and links left out); those an import would refuse, left out, said."""
    stored: list[tuple[str, Path]] = []
    left_out: list[dict[str, str]] = []
    areas = ("notes",) if facts_only else AREAS
    for area in areas:
        root = base.folder / area
        for file in walk(root):
            relpath = f"{area}/{file.relative_to(root).as_posix()}"
            if facts_only and not relpath.startswith(FACTS_DIR + "/"):
                continue
            problem = path_problem(relpath)
            if problem is not None:
                left_out.append({"file": relpath, "why": problem})
                continue
            copy = into / relpath
            copy.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(file, copy)
            except OSError:
                shutil.copy2(file, copy)
            stored.append((relpath, copy))
    return stored, left_out


def _write(target: Path, chunks: Iterator[bytes], mtime: float) -> None:
    """A staged file: created (never over another: a name twice is refused before), written, dated (synced with the
    others, _fsync_tree)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except (FileExistsError, NotADirectoryError, IsADirectoryError):  # a.md, then a.md/b.md: one is a folder
        raise invalid(f"{target.name!r} is both a file and a folder in it") from None
    with os.fdopen(fd, "wb") as f:
        for chunk in chunks:
            f.write(chunk)
    os.utime(target, (mtime, mtime))


def _fsync_tree(folder: Path) -> None:
    """Every staged file and folder on disk before they are moved in: one sync of the system's writes (a fsync per
    file made an import of 5,000 notes take 23 s here, one sync about 5 s, mostly the rest of the work)."""
    os.sync()
    for root, _dirs, _files in os.walk(folder):
        fsync_dir(Path(root))


def _json(data: Any) -> bytes:
    import json

    return json.dumps(data, ensure_ascii=False, indent=1).encode() + b"\n"


__all__ = ["FORMATS", "MEDIA_TYPE", "Exchange", "Export"]
