"""Notes: markdown files with YAML front matter in a base's folder. The files are the truth.

A note is addressed by a path inside one of the base's note areas (`notes/` for notes people
write, `saved/` for notes models save). Paths are confined to the area: `..`, absolute paths,
links out of the folder and odd names are refused. Every note has a version (the SHA-256 of
its file) so a writer can say "only if unchanged since" (If-Match).
"""

from __future__ import annotations

import builtins
import re
import unicodedata
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import frontmatter
import yaml
from pydantic import Field

from ..answers import Answer
from ..auth.actor import Actor
from ..auth.roles import WRITE_CONTENT
from ..errors import BadRequest, Conflict, NotFound, TooLarge
from ..locks import Locks
from ..util import sha256
from .bases import KnowledgeBase, KnowledgeBases
from .parsing import MAX_TEXT_CHARS
from .writer import FACTS_DIR, Writer, holds_facts

AREAS = {"notes": "notes", "saved": "saved"}
_ODD = re.compile(r'[\x00-\x1f\x7f\\:*?"<>|]')
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]")
_INVISIBLE = {"Cc", "Cf", "Cs", "Zl", "Zp"}  # Unicode categories a name never needs
MAX_SEGMENT = 200
MAX_PATH = 1024


class NoteSummary(Answer):
    """A note in a listing."""

    path: str
    title: str
    version: str = Field(description="SHA-256 of the file, also the ETag")
    updated_at: str


class NoteView(Answer):
    """A note: its front matter (metadata) and markdown (content)."""

    path: str
    area: Literal["notes", "saved"]
    title: str
    metadata: dict[str, Any] = Field(description="The front matter (title, tags, …)")
    content: str = Field(description="The note's markdown")
    version: str = Field(description="SHA-256 of the file, also the ETag")
    updated_at: str


class NoteList(Answer):
    notes: list[NoteSummary]


@dataclass
class Note:
    base: str
    area: str
    path: str
    metadata: dict[str, Any]
    content: str
    version: str
    updated_at: str

    @property
    def relpath(self) -> str:
        """The note's path inside the base's folder (e.g. notes/plans/offsite.md)."""
        return f"{AREAS[self.area]}/{self.path}"

    @property
    def title(self) -> str:
        return note_title(self.metadata, self.content, self.path)

    def view(self) -> NoteView:
        return NoteView.model_construct(path=self.path, area=self.area, title=self.title, metadata=self.metadata,
                                        content=self.content, version=self.version, updated_at=self.updated_at)

    def summary(self) -> NoteSummary:
        return NoteSummary.model_construct(path=self.path, title=self.title, version=self.version, updated_at=self.updated_at)


def note_title(metadata: dict[str, Any], content: str, path: str) -> str:
    if metadata.get("title"):
        return str(metadata["title"])
    for line in content.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return PurePosixPath(path).stem


def check_path(path: str) -> str:
    """A clean relative note path, or BadRequest saying why not."""
    def bad(why: str) -> BadRequest:
        return BadRequest(f"Note path {path!r} refused: {why}", code="BAD_PATH")

    if not path or len(path) > MAX_PATH:
        raise bad(f"give a relative path of at most {MAX_PATH} characters")
    if any(unicodedata.category(c) in _INVISIBLE for c in path):
        raise bad("control, format (zero-width, right-to-left override) and line-separator characters are not allowed")
    # The rules hold for the path as Unicode compares it too: full-width `．．`, `‥` and `／` are
    # `..` and `/` to NFKC (and to some tools), so `．．／x.md` is refused like `../x.md`.
    compat = unicodedata.normalize("NFKC", path)
    if compat.startswith("/") or re.match(r"^[A-Za-z]:", compat):
        raise bad("absolute paths are not allowed; give a path inside the base, like plans/offsite.md")
    for part in compat.split("/"):
        if part in ("", ".", ".."):
            raise bad("empty, '.' and '..' segments are not allowed (full-width and other look-alike dots included)")
        if part.startswith("."):
            raise bad("names starting with '.' are reserved")
        if _ODD.search(part) or part != part.strip():
            raise bad("control characters, \\ : * ? \" < > | and leading or trailing spaces are not allowed")
    parts = path.split("/")
    for part in parts:
        if len(part.encode()) > MAX_SEGMENT:
            raise bad(f"a name is longer than {MAX_SEGMENT} bytes")
    if not parts[-1].endswith(".md") or parts[-1] == ".md":
        raise bad("a note is a markdown file: its name ends in .md")
    return path


def check_text(content: str) -> None:
    """A note is text: tab and line breaks, but no other control character (NUL, escape, …);
    and no longer than a document may be."""
    if len(content) > MAX_TEXT_CHARS:
        raise TooLarge(
            f"The note has more than {MAX_TEXT_CHARS:,} characters, the most one document may hold: split it",
            code="NOTE_TOO_LARGE",
        )
    found = _CONTROL.search(content)
    if found:
        line = content.count("\n", 0, found.start()) + 1
        raise BadRequest(
            f"The note holds the control character U+{ord(found.group()):04X} (line {line}): a note is text; "
            "tabs and line breaks are the only control characters it may have",
            code="INVALID_NOTE",
        )


def render(metadata: dict[str, Any], content: str) -> str:
    if not metadata:
        return content
    return frontmatter.dumps(frontmatter.Post(content, **metadata), sort_keys=False) + "\n"


def parse(text: str) -> tuple[dict[str, Any], str]:
    if not text.startswith("---"):
        return {}, text
    try:
        post = frontmatter.loads(text)
    except yaml.YAMLError:
        return {}, text
    return dict(post.metadata), post.content


class Notes:
    def __init__(self, bases: KnowledgeBases, writer: Writer, *, locks: Locks) -> None:
        self.bases = bases
        self.locks = locks
        self.writer = writer  # every note is written through it (the index hears of it there)

    # -- paths -------------------------------------------------------------
    def _area_root(self, base: KnowledgeBase, area: str) -> Path:
        if area not in AREAS:
            raise NotFound(f"No note area {area!r}: use one of {', '.join(AREAS)}")
        return base.folder / AREAS[area]

    def resolve(self, base: KnowledgeBase, area: str, path: str) -> Path:
        """The file of a note, refusing anything that would land outside the area."""
        path = check_path(path)
        root = self._area_root(base, area)
        target = root / path
        # Refuse links anywhere on the way: a link could point out of the base.
        probe = base.folder
        for part in (AREAS[area], *path.split("/")):
            probe = probe / part
            if probe.is_symlink():
                raise BadRequest(f"Note path {path!r} refused: it goes through a link", code="BAD_PATH")
        if not target.resolve().is_relative_to(root.resolve()):  # pragma: no cover - caught above
            raise BadRequest(f"Note path {path!r} refused: it leaves the base's folder", code="BAD_PATH")
        return target

    def _check_writable(self, base: KnowledgeBase, area: str, path: str) -> None:
        if holds_facts(base, f"{AREAS.get(area, area)}/{path}"):
            raise BadRequest(
                f"{FACTS_DIR}/ holds the memory's facts: change them through the memory "
                "(astra metis edit / forget, or …/memory/<id>)",
                code="NOTE_RESERVED",
            )

    # -- reading -----------------------------------------------------------
    def read(self, actor: Actor, base_name: str, area: str, path: str) -> Note:
        base = self.bases.get(actor, base_name)
        return self.read_in(base, area, path)

    def read_in(self, base: KnowledgeBase, area: str, path: str) -> Note:
        file = self.resolve(base, area, path)
        try:
            data = file.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            raise NotFound(f"No note {path!r} in {base.name}/{AREAS[area]}", code="NOTE_NOT_FOUND") from None
        return self._note(base, area, path, data, file)

    def list(self, actor: Actor, base_name: str, area: str = "notes") -> builtins.list[Note]:
        base = self.bases.get(actor, base_name)
        return self.list_in(base, area)

    def list_in(self, base: KnowledgeBase, area: str) -> builtins.list[Note]:
        root = self._area_root(base, area)
        if not root.exists():
            return []
        notes = []
        for file in sorted(root.rglob("*.md")):
            rel = file.relative_to(root).as_posix()
            if any(p.startswith(".") for p in rel.split("/")) or file.is_symlink() or not file.is_file():
                continue
            notes.append(self._note(base, area, rel, file.read_bytes(), file))
        return notes

    def _note(self, base: KnowledgeBase, area: str, path: str, data: bytes, file: Path) -> Note:
        metadata, content = parse(data.decode("utf-8", errors="replace"))
        mtime = datetime.fromtimestamp(file.stat().st_mtime, UTC).replace(microsecond=0)
        return Note(base.name, area, path, metadata, content, sha256(data), mtime.isoformat().replace("+00:00", "Z"))

    # -- writing -----------------------------------------------------------
    def write(
        self,
        actor: Actor,
        base_name: str,
        area: str,
        path: str,
        content: str,
        metadata: dict[str, Any] | None = None,
        *,
        if_match: str | None = None,
        create_only: bool = False,
    ) -> tuple[Note, bool]:
        """Create or replace a note atomically. Returns the note and whether it was created."""
        actor.require(WRITE_CONTENT)
        base = self.bases.get(actor, base_name)
        return self.write_in(base, area, path, content, metadata, if_match=if_match, create_only=create_only)

    def write_in(
        self,
        base: KnowledgeBase,
        area: str,
        path: str,
        content: str,
        metadata: dict[str, Any] | None = None,
        *,
        if_match: str | None = None,
        create_only: bool = False,
    ) -> tuple[Note, bool]:
        path = check_path(path)
        self._check_writable(base, area, path)
        check_text(content)
        file = self.resolve(base, area, path)
        with self.locks.folder(base.folder):
            exists = file.exists()
            if exists and create_only:
                raise Conflict(f"A note {path!r} exists already: choose another path or replace it", code="NOTE_EXISTS")
            _check_version(file, path, if_match)
            data = render(metadata or {}, content).encode()
            change = self.writer.write(base, f"{AREAS[area]}/{path}", data, emit=False)
            note = self._note(base, area, path, data, file)
        self.writer.emit([change])  # the lock is not held while the index reads the note
        return note, not exists

    def delete(self, actor: Actor, base_name: str, area: str, path: str, *, if_match: str | None = None) -> None:
        actor.require(WRITE_CONTENT)
        base = self.bases.get(actor, base_name)
        self.delete_in(base, area, path, if_match=if_match)

    def delete_in(self, base: KnowledgeBase, area: str, path: str, *, if_match: str | None = None) -> None:
        path = check_path(path)
        self._check_writable(base, area, path)
        file = self.resolve(base, area, path)
        with self.locks.folder(base.folder):
            if not file.exists():
                raise NotFound(f"No note {path!r} in {base.name}/{AREAS[area]}", code="NOTE_NOT_FOUND")
            _check_version(file, path, if_match)
            gone = self.writer.remove(base, f"{AREAS[area]}/{path}", prune=True, emit=False)
        if gone is not None:
            self.writer.emit([gone])


def _check_version(file: Path, path: str, if_match: str | None) -> None:
    """If-Match: the note must still be at the version the writer read (NOTE_CHANGED otherwise)."""
    if if_match is None:
        return
    expected = if_match.strip('"')
    current = sha256(file.read_bytes()) if file.exists() else None
    if current != expected:
        raise Conflict(
            f"Note {path!r} changed since version {expected[:12]}…: read it again and reapply your change",
            code="NOTE_CHANGED",
            details={"version": current},
        )

