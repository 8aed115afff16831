"""Small helpers shared across the domain: time, ids, names, atomic files."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import tempfile
from datetime import UTC, datetime
from pathlib import Path

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


def atomic_write(path: Path, data: bytes | str, *, mode: int = 0o644) -> None:
    """Write a file so that a crash leaves either the old file or the new, never half.

    Temp file in the same folder, fsync, rename over the target, fsync the folder.
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


def fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
