"""Documents of a base: uploads into its `files/` folder, sync with its source folders,
reindex from the files, and the list of what is indexed.

Only bases of kind `documents` take sources and uploads; a memory keeps facts.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from pathlib import Path
from typing import Any

from ..auth.actor import Actor
from ..auth.roles import READ, WRITE_CONTENT
from ..errors import BadRequest, Conflict, NotFound
from ..locks import folder_lock
from ..util import iso, sha256
from .bases import KnowledgeBase, KnowledgeBases
from .documents import check_supported, parse_file
from .index import Index
from .index.service import Progress
from .writer import UPLOADS, Writer

log = logging.getLogger("astralyx.metis")

MAX_NAME = 200
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


class Documents:
    def __init__(self, bases: KnowledgeBases, index: Index, writer: Writer) -> None:
        self.bases = bases
        self.index = index
        self.writer = writer  # uploads are written through it (the index hears of them there)

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

    # -- sync and reindex ---------------------------------------------------------------------
    def check_write(self, actor: Actor, base_name: str) -> KnowledgeBase:
        """What sync and reindex check first (so a streamed answer starts only when they may run)."""
        actor.require(WRITE_CONTENT)
        base = self.bases.get(actor, base_name)
        self._check_sources(base)
        return base

    def sync(self, actor: Actor, base_name: str, progress: Progress | None = None) -> dict[str, Any]:
        """Index new and changed files of the base (its folder and its sources); drop removed ones."""
        base = self.check_write(actor, base_name)
        report = self.index.sync(base, progress)
        return {"knowledge_base": base.name, **report.to_dict(), **self.index.status(base)}

    def reindex(self, actor: Actor, base_name: str, progress: Progress | None = None) -> dict[str, Any]:
        """Build the base's index again from its files (after a change of embedding, or a damaged index)."""
        base = self.check_write(actor, base_name)
        report = self.index.reindex(base, progress)
        return {"knowledge_base": base.name, **report.to_dict(), **self.index.status(base)}

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
        """Every base, as at server start: failures are logged and reported, never raised."""
        done: dict[str, Any] = {}
        for base in self.bases.all():
            name = f"{base.workspace}/{base.name}"
            try:
                report = self.index.sync(base)
                done[name] = report.to_dict()
            except Exception as e:
                log.warning("sync of %s failed: %s", name, e)
                done[name] = {"error": str(e)}
        return done

    # -- uploads ------------------------------------------------------------------------------
    def upload(self, actor: Actor, base_name: str, filename: str, data: bytes) -> dict[str, Any]:
        """Keep an uploaded file in the base's files/ folder and index it."""
        base = self._documents_base(actor, base_name, WRITE_CONTENT)
        name = safe_name(filename)
        check_supported(name)
        parse_file(f"docs:{base.name}/{name}", name, data)  # an unreadable file is refused, not kept
        target = base.folder / UPLOADS / name
        with folder_lock(base.folder):
            replaced = target.exists()
            change = self.writer.write(base, f"{UPLOADS}/{name}", data, emit=False)
        self.writer.emit([change])  # indexed now, or right after a sync that is running
        doc = self.index.store(base).document(f"{UPLOADS}/{name}")
        return {
            "name": name,
            "document": f"docs:{base.name}/{name}",
            "title": doc.title if doc else name,
            "chunks": doc.chunks if doc else 0,
            "size": len(data),
            "sha256": sha256(data),
            "replaced": replaced,
        }

    def files(self, actor: Actor, base_name: str) -> list[dict[str, Any]]:
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
            out.append(
                {
                    "name": file.name,
                    "document": f"docs:{base.name}/{file.name}",
                    "size": stat.st_size,
                    "updated_at": iso(_mtime(stat.st_mtime)),
                }
            )
        return out

    def delete_file(self, actor: Actor, base_name: str, name: str) -> None:
        base = self._documents_base(actor, base_name, WRITE_CONTENT)
        if name != safe_name(name):
            raise NotFound(f"No uploaded file {name!r} in {base.name}", code="FILE_NOT_FOUND")
        target = base.folder / UPLOADS / name
        with folder_lock(base.folder):
            if not target.is_file() or target.is_symlink():
                raise NotFound(f"No uploaded file {name!r} in {base.name}: `astra metis files` lists them", code="FILE_NOT_FOUND")
            gone = self.writer.remove(base, f"{UPLOADS}/{name}", emit=False)
        if gone is not None:
            self.writer.emit([gone])

    def documents(self, actor: Actor, base_name: str) -> dict[str, Any]:
        actor.require(READ)
        base = self.bases.get(actor, base_name)
        return {"knowledge_base": base.name, "documents": self.index.documents(base), "index": self.index.status(base)}


def _mtime(ts: float):
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ts, UTC).replace(microsecond=0)
