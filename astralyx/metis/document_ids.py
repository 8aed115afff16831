"""What a document of a base is cited as: its id, `docs:<base>/<path>`.

An upload's path is its name (`docs:handbook/leave.md`), and so is a file's path in the folder of a
base with one source. A base with several sources puts the source's name first
(`docs:handbook/git/README.md`, `docs:handbook/guide/README.md`): each folder may hold a README.md.
A source's name is its folder's own name; folders of the same name are told apart by a number in
the order the spec lists them (docs, docs-2).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath


def document_id(base: str, path: str, source: str | None = None) -> str:
    """The id of the document at `path` (in its source folder when `source` is named, else the base's)."""
    return f"docs:{base}/{source}/{path}" if source else f"docs:{base}/{path}"


def source_names(folders: Sequence[str]) -> list[str | None]:
    """The name each source folder gives its documents' ids: none for a base's only source."""
    if len(folders) < 2:
        return [None] * len(folders)
    names: list[str | None] = []
    taken: set[str] = set()
    for i, folder in enumerate(folders, start=1):
        own = PurePosixPath(folder.replace("\\", "/").rstrip("/")).name.lstrip("~") or f"source-{i}"
        name, n = own, 1
        while name in taken:
            n += 1
            name = f"{own}-{n}"
        taken.add(name)
        names.append(name)
    return names
