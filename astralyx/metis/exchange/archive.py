"""A base as a .tar.gz: written as a stream, read back with every check before anything is kept.

The archive holds, in this order:
- `manifest.json`: the format and its version, the Astralyx that wrote it, when, what it holds
  (`contents`: a whole base, or only a memory's facts) and the base's name, workspace and spec;
- `model-saves.json`: the base's model saves (the notes a model saved on its own or from a draft, with undo);
- `base/<area>/<path>`: the base's own files (areas files/, notes/, saved/; a memory's facts are notes/memory/),
  never its derived index, never the files of its source folders (their spec is in the manifest).

Writing: tar headers and file blocks go through one zlib compressor as they are read, so a base of any size
streams in constant memory. Reading: our own small tar reader over our own inflater, so every byte the archive
holds is counted (headers too: a 4 GB PAX header is refused, not read) and every member is checked: only
regular files and folders, paths relative and inside the base's areas, no `..`, no links or devices, no
name twice, within the limits. A bad archive is EXPORT_INVALID (422), a newer format EXPORT_VERSION (422),
one too large EXPORT_TOO_LARGE (413).
"""

from __future__ import annotations

import json
import tarfile
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ... import __version__
from ...errors import AstralyxError, Invalid, TooLarge, describe
from ...util import iso
from ..documents import safe_name
from ..notes import check_path

FORMAT = "astralyx-base"
FORMAT_VERSION = 1  # the newest this Astralyx writes and reads
MANIFEST = "manifest.json"
MODEL_SAVES = "model-saves.json"
PREFIX = "base/"  # the base's own files, by their path in its folder
AREAS = ("files", "notes", "saved")  # what the index reads of a base's folder (metis/index): what moves with it
MEDIA_TYPE = "application/gzip"

BLOCK = 1 << 20  # bytes read (and compressed) at a time
MAX_HEADER = 64 << 10  # a PAX or GNU long-name header: a path and a few numbers
MAX_JSON = 64 << 20  # manifest.json, model-saves.json
MAX_UNPACKED = 8 << 30  # what an archive may unpack to, headers included (a gzip bomb stops here)
MAX_MEMBERS = 1_000_000


def invalid(why: str) -> Invalid:
    return Invalid(f"The archive cannot be imported: {why}. Import a .tar.gz written by `astra metis export` "
                   "(GET …/knowledge-bases/<base>/export)", code="EXPORT_INVALID")


# -- the manifest --------------------------------------------------------------------------------------------
class ManifestBase(BaseModel):
    model_config = ConfigDict(extra="ignore")
    name: str | None = None
    workspace: str | None = None
    created_at: str | None = None
    spec: dict[str, Any] = Field(default_factory=dict)


class Manifest(BaseModel):
    """What manifest.json says (fields a later version adds are ignored)."""

    model_config = ConfigDict(extra="ignore")
    format: Literal["astralyx-base"] = "astralyx-base"
    format_version: int = FORMAT_VERSION
    astralyx_version: str = __version__
    exported_at: str = Field(default_factory=iso)
    contents: Literal["base", "facts"] = "base"  # a whole base, or a memory's facts to settle again
    knowledge_base: ManifestBase = Field(default_factory=ManifestBase)
    left_out: list[dict[str, str]] = Field(default_factory=list)  # files of the base an archive cannot hold, and why

    def to_bytes(self) -> bytes:
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, indent=2).encode() + b"\n"

    @classmethod
    def read(cls, data: bytes) -> Manifest:
        try:
            raw = json.loads(data)
        except ValueError:
            raise invalid(f"{MANIFEST} is not JSON") from None
        if not isinstance(raw, dict) or raw.get("format") != FORMAT:
            raise invalid(f"{MANIFEST} does not say \"format\": \"{FORMAT}\"")
        version = raw.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise invalid(f"{MANIFEST} has no format_version")
        if version > FORMAT_VERSION:
            raise Invalid(
                f"The archive is of format version {version}, written by Astralyx {raw.get('astralyx_version', '?')}; "
                f"this Astralyx ({__version__}) reads versions up to {FORMAT_VERSION}: upgrade it, then import again",
                code="EXPORT_VERSION", details={"format_version": version, "reads": FORMAT_VERSION},
            )
        try:
            return cls.model_validate(raw)
        except ValidationError as e:
            raise invalid(f"{MANIFEST} is not valid ({describe(e)})") from None


# -- the rule of a member's path (export leaves out what import would refuse) ---------------------------------
def path_problem(relpath: str) -> str | None:
    """Why a path of a base's folder cannot travel in an archive (None: it can): inside an area, and named as
    that area names things (a note's path rules, an upload's name rule)."""
    compat = unicodedata.normalize("NFKC", relpath)
    if compat.startswith("/") or "\\" in compat or (len(compat) > 1 and compat[1] == ":"):
        return "an absolute path"
    if any(part in ("..", ".") for part in compat.split("/")):
        return "a path with '..' or '.'"
    area, _, rest = relpath.partition("/")
    if area not in AREAS or not rest:
        return f"not in one of the base's areas ({', '.join(a + '/' for a in AREAS)})"
    try:
        if area == "files":
            if any(not part or part != safe_name(part) for part in rest.split("/")):
                return "a name an upload cannot have"
        else:
            check_path(rest)
    except AstralyxError as e:
        return e.message
    return None


# -- writing -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """One member to write: its name in the archive, and its bytes (given, or a file read as it is written)."""

    name: str
    size: int
    mtime: int
    data: bytes | None = None
    file: Path | None = None

    @classmethod
    def of_bytes(cls, name: str, data: bytes, mtime: int | None = None) -> Entry:
        return cls(name, len(data), int(mtime if mtime is not None else _now()), data=data)

    @classmethod
    def of_file(cls, name: str, file: Path) -> Entry:
        st = file.stat()
        return cls(name, st.st_size, int(st.st_mtime), file=file)

    def chunks(self) -> Iterator[bytes]:
        if self.data is not None:
            yield self.data
            return
        assert self.file is not None
        left = self.size
        with open(self.file, "rb") as f:
            while left > 0:
                chunk = f.read(min(BLOCK, left))
                if not chunk:
                    raise RuntimeError(f"{self.file} got shorter while it was exported")
                left -= len(chunk)
                yield chunk


def _now() -> float:
    import time

    return time.time()


def stream(entries: Iterable[Entry], level: int = 6) -> Iterator[bytes]:
    """The entries as a .tar.gz, chunk by chunk: one file's block in memory at a time."""
    z = zlib.compressobj(level, zlib.DEFLATED, 31)  # 31: the gzip wrapper (header, CRC-32, length)
    for entry in entries:
        info = tarfile.TarInfo(entry.name)
        info.size, info.mtime, info.mode, info.type = entry.size, entry.mtime, 0o644, tarfile.REGTYPE
        out = z.compress(info.tobuf(tarfile.PAX_FORMAT, "utf-8", "strict"))
        if out:
            yield out
        for chunk in entry.chunks():
            out = z.compress(chunk)
            if out:
                yield out
        out = z.compress(b"\0" * (-entry.size % tarfile.BLOCKSIZE))
        if out:
            yield out
    yield z.compress(b"\0" * (2 * tarfile.BLOCKSIZE)) + z.flush()  # the end of the archive: two empty blocks


# -- reading -------------------------------------------------------------------------------------------------
class _Inflate:
    """The decompressed bytes of a gzip stream, read exactly, counted against the limit."""

    def __init__(self, raw: BinaryIO, limit: int) -> None:
        self.raw = raw
        self.limit = limit
        self.total = 0
        self._z = zlib.decompressobj(31)
        self._buf = bytearray()
        self._pending = b""  # input not yet given to the decompressor
        self._ended = False  # the raw stream ended

    def _fill(self, want: int) -> None:
        while len(self._buf) < want:
            data = self._z.unconsumed_tail or self._pending
            self._pending = b""
            if not data:
                if self._z.eof:  # a gzip member ended: another may follow (concatenated .gz)
                    rest = self._z.unused_data
                    if not rest:
                        rest = self.raw.read(1 << 16)
                    if not rest:
                        return
                    self._z = zlib.decompressobj(31)
                    data = rest
                else:
                    data = self.raw.read(1 << 16)
                    if not data:
                        self._ended = True
                        return
            try:
                out = self._z.decompress(data, BLOCK)
            except zlib.error:
                raise invalid("it is not a gzip file, or its data is damaged") from None
            self.total += len(out)
            if self.total > self.limit:
                raise TooLarge(f"The archive unpacks to more than {self.limit:,} bytes, the most an import takes",
                               code="EXPORT_TOO_LARGE", details={"limit": self.limit})
            self._buf += out

    def read(self, n: int) -> bytes:
        self._fill(n)
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def exact(self, n: int, what: str) -> bytes:
        out = self.read(n)
        if len(out) != n:
            raise invalid(f"it ends in the middle of {what} (cut short?)")
        return out

    def drain(self) -> None:
        """Read to the end, so the gzip trailer's CRC is checked (zlib raises when it does not match)."""
        while self.read(BLOCK):
            pass
        if not self._z.eof:
            raise invalid("it is cut short (the gzip stream does not end)")


def _exact(src: _Inflate, n: int, *, what: str) -> bytes:
    return src.exact(n, what)


@dataclass
class Member:
    name: str
    kind: Literal["file", "folder"]
    size: int
    mtime: float
    _read: Callable[[int], bytes]
    left: int = 0

    def chunks(self) -> Iterator[bytes]:
        while self.left > 0:
            chunk = self._read(min(BLOCK, self.left))
            self.left -= len(chunk)
            yield chunk

    def read_all(self, limit: int) -> bytes:
        if self.size > limit:
            raise invalid(f"{self.name} is {self.size:,} bytes, more than {limit:,}")
        return b"".join(self.chunks())


_REFUSED = {tarfile.SYMTYPE: "a symbolic link", tarfile.LNKTYPE: "a hard link", tarfile.CHRTYPE: "a device",
            tarfile.BLKTYPE: "a device", tarfile.FIFOTYPE: "a named pipe", tarfile.CONTTYPE: "a contiguous file"}


def _pax(data: bytes) -> dict[str, str]:
    """The records of a PAX header: `<length> <key>=<value>\\n` each."""
    out: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        space = data.find(b" ", pos)
        if space < 0:
            break
        try:
            length = int(data[pos:space])
        except ValueError:
            raise invalid("a PAX header is damaged") from None
        record = data[space + 1: pos + length]
        if length <= 0 or pos + length > len(data) or not record.endswith(b"\n") or b"=" not in record:
            raise invalid("a PAX header is damaged")
        key, _, value = record[:-1].partition(b"=")
        try:
            out[key.decode()] = value.decode("utf-8")
        except UnicodeDecodeError:
            raise invalid("a PAX header is not UTF-8") from None
        pos += length
    return out


def members(raw: BinaryIO, *, limit: int = MAX_UNPACKED, max_members: int = MAX_MEMBERS) -> Iterator[Member]:
    """The members of a .tar.gz, checked as they come: each must be read (or not) before the next one is asked
    for. Ends only once the whole stream was read and its checksum holds."""
    src = _Inflate(raw, limit)
    pax: dict[str, str] = {}
    long_name: str | None = None
    count = 0
    while True:
        block = src.read(tarfile.BLOCKSIZE)
        if not block and count == 0:
            raise invalid("it is empty")
        if len(block) < tarfile.BLOCKSIZE:
            raise invalid("it ends in the middle of a header (cut short?)")
        if block == tarfile.NUL * tarfile.BLOCKSIZE:
            src.drain()
            return
        try:
            info = tarfile.TarInfo.frombuf(block, "utf-8", "strict")
        except (tarfile.HeaderError, UnicodeDecodeError):
            raise invalid("it is not a tar archive, or a header is damaged") from None
        padded = info.size + (-info.size % tarfile.BLOCKSIZE)
        if info.type in (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK):
            if info.size > MAX_HEADER:
                raise invalid(f"a header of {info.size:,} bytes (at most {MAX_HEADER:,})")
            data = src.exact(padded, "a header")[: info.size]
            if info.type == tarfile.XHDTYPE:
                pax = _pax(data)
            elif info.type == tarfile.GNUTYPE_LONGNAME:
                long_name = data.rstrip(b"\0").decode("utf-8", "strict")
            continue  # a global header or a long link name: nothing we use
        name = pax.get("path") or long_name or info.name
        try:
            size = int(pax.get("size", info.size))
            mtime = float(pax.get("mtime", info.mtime))
        except ValueError:
            raise invalid(f"{name}: a PAX size or mtime is not a number") from None
        pax, long_name = {}, None
        count += 1
        if count > max_members:
            raise TooLarge(f"The archive holds more than {max_members:,} members, the most an import takes",
                           code="EXPORT_TOO_LARGE", details={"members": max_members})
        if info.type in _REFUSED:
            raise invalid(f"{name} is {_REFUSED[info.type]}: an archive of a base holds files and folders only")
        if info.type not in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE):
            raise invalid(f"{name} is of tar type {info.type!r}: an archive of a base holds files and folders only")
        if size < 0 or (info.type == tarfile.DIRTYPE and size):
            raise invalid(f"{name}: a size of {size}")
        member = Member(name, "folder" if info.type == tarfile.DIRTYPE else "file", size, mtime,
                        partial(_exact, src, what=name), left=size)
        yield member
        for _ in member.chunks():  # what the reader left unread
            pass
        src.exact(-size % tarfile.BLOCKSIZE, "a file's padding")


def member_path(name: str, kind: str = "file") -> str | None:
    """A member's path in the base's folder (None: not one of the base's files, e.g. the manifest), or EXPORT_INVALID
    when it is not a path we may write: absolute, with `..`, outside the areas, or named as no base names things."""
    clean = name.removeprefix("./").rstrip("/") if kind == "folder" else name.removeprefix("./")
    if clean in (MANIFEST, MODEL_SAVES) or (kind == "folder" and clean == "base"):
        return None
    relpath = clean.removeprefix(PREFIX)
    if kind == "folder" and relpath in AREAS:  # an area's own folder entry
        return relpath
    # A folder is checked as the path of a file in it would be.
    problem = path_problem(relpath + ("/x.md" if kind == "folder" else ""))
    if problem is None and not clean.startswith(PREFIX):
        problem = "outside base/, where an archive holds the base's files"
    if problem is not None:
        raise invalid(f"{name!r} is {problem}" if problem.startswith(("an ", "a ")) else f"{name!r}: {problem}")
    return relpath
