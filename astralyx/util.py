"""Small helpers shared across the domain: time, ids, names, atomic files."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import stat
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import quote

from .errors import Invalid

NAME_RE = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def iso(dt: datetime | None = None) -> str:
    return (dt or now()).isoformat().replace("+00:00", "Z")


def new_id(prefix: str, nbytes: int = 8) -> str:
    return f"{prefix}_{secrets.token_hex(nbytes)}"


def sha256(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode()
    return hashlib.sha256(data).hexdigest()


def check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise Invalid(
            f"{what} name {name!r} is not valid: use lowercase letters, digits and '-' "
            "(at most 64, starting and ending with a letter or digit)",
            code="INVALID_NAME",
        )
    return name


def quoted(value: str, *, slashes: bool = False) -> str:
    """A person's value as a segment of a URL path, percent-encoded so the server gets it as typed.

    Every CLI command and console link that puts a name, id or path into a URL goes through here.
    Unencoded, `/`, `?`, `#` and `%` would be URL syntax, and a client resolves `.` and `..`
    segments: `astra metis note BASE .. --delete` would address `…/knowledge-bases/BASE` and delete
    the base. `slashes=True` keeps the `/` between segments (a note's path); each is encoded alone.
    """
    return "/".join(_segment(part) for part in (value.split("/") if slashes else [value]))


def _segment(part: str) -> str:
    text = quote(part, safe="")
    # quote() leaves dots as they are; a segment of only dots is the one clients collapse.
    return text.replace(".", "%2E") if text and not text.strip(".") else text


# atomic_write's temp files: `.<name>.<8 of mkstemp's random characters>.tmp`, hidden beside the target.
TEMP_RE = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
# A temp file younger than this may be a write under way in another process: left alone.
TEMP_GRACE_SECONDS = 600


def atomic_write(path: Path, data: bytes | str, *, mode: int = 0o644) -> None:
    """Write a file so that a crash leaves either the old file or the new, never half.

    Temp file in the same folder, fsync, rename over the target, fsync the folder. A crash
    between the first and the last step leaves the temp file: remove_orphan_temps clears it.
    """
    if isinstance(data, str):
        data = data.encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def remove_orphan_temps(folder: Path, *, grace: float = TEMP_GRACE_SECONDS) -> list[Path]:
    """Remove the temp files interrupted atomic writes left under folder (at start). Answers them.

    Only regular files named as atomic_write names them and untouched for `grace` seconds; links
    are neither followed nor removed.
    """
    removed: list[Path] = []
    cutoff = time.time() - grace
    for root, _dirs, files in os.walk(folder):
        for name in files:
            if not TEMP_RE.match(name):
                continue
            file = Path(root) / name
            try:
                st = file.lstat()
                if stat.S_ISREG(st.st_mode) and st.st_mtime < cutoff:
                    file.unlink()
                    removed.append(file)
            except FileNotFoundError:  # renamed or removed meanwhile: its writer finished
                continue
    return removed


def fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
