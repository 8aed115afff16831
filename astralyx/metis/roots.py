"""Which folders of the server's machine a base may take as sources.

A folder source is read by the server with its own rights, so where it may point is the operator's
choice, not a workspace's:

- never inside the data directory (every workspace's bases, keys and records are there), nor a folder
  that holds it: checked on the resolved path, links followed, at create, at update and at every sync
  (a link swapped after the base was made is refused then);
- with `source_roots` set (config.toml, or ASTRALYX_SOURCE_ROOTS: folders separated by the OS's path
  separator, `:` on Linux), under one of those folders, whoever names it;
- without it, only the data directory's owner at the local CLI (no ASTRALYX_API) names folders, anywhere
  else on the machine; an API key (REST, console, MCP) gets 403 SOURCE_NOT_ALLOWED, which names the setting.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ..errors import Forbidden

SETTING = "source_roots"
HOW = (f"the operator lists the folders sources may lie under in {SETTING} (config.toml) or ASTRALYX_SOURCE_ROOTS "
       f"(separated by {os.pathsep!r})")


def parse_roots(value: object) -> list[str]:
    """The setting as folders: a string split on os.pathsep (the environment), or a list (config.toml)."""
    if value is None:
        return []
    items: Iterable[object] = value.split(os.pathsep) if isinstance(value, str) else value  # type: ignore[assignment]
    return [str(item).strip() for item in items if str(item).strip()]


def resolved(folder: str | Path) -> Path:
    """The folder as the server would read it: ~ expanded, made absolute, every link followed."""
    return Path(os.path.realpath(Path(folder).expanduser()))


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


class SourceRoots:
    """The rule above for one data directory and the operator's roots."""

    def __init__(self, home: Path, roots: Iterable[str | Path] = ()) -> None:
        self.home = resolved(home)
        self.roots = [resolved(r) for r in roots]

    def check(self, folder: str, *, free: bool) -> None:
        """Refuse (403 SOURCE_NOT_ALLOWED) a folder the base may not read. `free`: when no roots are set, the folder
        may lie anywhere outside the data directory (the local owner named it)."""
        path = resolved(folder)
        details = {"folder": folder, "setting": SETTING}
        if _within(path, self.home) or _within(self.home, path):
            where = "is inside" if _within(path, self.home) else "holds"
            raise Forbidden(
                f"The source folder {folder} {where} the data directory ({self.home}), where every workspace's bases "
                "and records are: a base never reads it as a source. Choose a folder outside it",
                code="SOURCE_NOT_ALLOWED", details=details,
            )
        if self.roots:
            if not any(_within(path, root) for root in self.roots):
                roots = ", ".join(str(r) for r in self.roots)
                raise Forbidden(
                    f"The source folder {folder} (resolved: {path}) is not under a folder this server allows ({roots}): "
                    f"choose a folder under one of them, or {HOW}",
                    code="SOURCE_NOT_ALLOWED", details=details,
                )
        elif not free:
            raise Forbidden(
                f"This server takes no folder sources from API keys: {HOW}; meanwhile upload the files "
                "(POST …/files), or name the folder with the `astra` CLI on the server's own data directory",
                code="SOURCE_NOT_ALLOWED", details=details,
            )

    def check_sync(self, folders: Iterable[str]) -> None:
        """At each sync: the base's folders as they resolve now (a link may have changed since they were named).
        Without roots set, only the data directory is refused: the folders were named by the local owner then."""
        for folder in folders:
            self.check(folder, free=True)
