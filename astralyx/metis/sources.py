"""Which files of a folder source are indexed: the source's `include`/`exclude` globs and the default excludes.

Patterns are globs on the path relative to the source folder, with `/` between folders:
`*` and `?` stay within a name, `**` spans any number of folders, `[abc]` is a class. A pattern without
a `/` matches a name at any depth (`*.txt`, `print.html`, `drafts`); one with a `/` is anchored at the
folder (`old/**`, `guide/*.md`, a leading `/` allowed); a trailing `/` matches folders only. A pattern that
matches a folder takes in everything under it.

A file is indexed when it is a type that is read (documents.supported), matches an `include` pattern
(no include: every file), matches no `exclude` pattern, and no default exclude leaves it out:
- hidden names (`.anything`, a file or a folder) and version control (.git, .hg, .svn, .bzr, CVS, _darcs);
- folders of code, packages and build output (node_modules, __pycache__, venv, site-packages, vendor,
  bower_components, build, dist, target, _build, htmlcov) and of fonts (fonts: their licence texts);
- licence and notice files as projects name them (LICENSE, LICENCE-MIT.txt, COPYING, NOTICE, OFL.txt,
  OPEN-SANS-LICENSE.txt; license.md, but not license-policy.md) and editor backups and temporaries (*~, #*#,
  *.bak, *.orig, *.rej, *.swp, *.tmp, ~$*).
A default exclude gives way to an include pattern that names it literally (`build/**` indexes a folder
named build, `.github/**` a hidden one); version control folders never are indexed. Links are never
followed (a link could lead out of the folder).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from fnmatch import fnmatchcase
from functools import lru_cache
from pathlib import Path

MAX_PATTERNS = 100
MAX_PATTERN = 500

VCS = frozenset({".git", ".hg", ".svn", ".bzr", "cvs", "_darcs"})
JUNK_FOLDERS = frozenset({
    "node_modules", "__pycache__", "venv", "site-packages", "vendor", "bower_components",
    "build", "dist", "target", "_build", "htmlcov", "fonts", "font", "__macosx",
})
_JUNK_FILE = re.compile(
    # licences and notices as projects name them (LICENSE, LICENSE-MIT.txt, COPYING.md, OFL.txt), but not a
    # handbook's license-policy.md or notice-period.md
    r"^(?:LICEN[CS]E|COPYING|NOTICE|OFL)(?:[-_.][\w.-]*)?$|^(?i:licen[cs]e|copying|notice)(?i:\.(?:txt|md))?$"
    r"|^[\w.-]+[-_]LICEN[CS]E(?:\.\w+)?$"  # a font's licence beside a book: OPEN-SANS-LICENSE.txt
    r"|^.*~$|^#.*#$|^~\$.*|^(?i:.*\.(?:bak|orig|rej|swp|tmp))$"  # editors' backups, locks and temporaries
)


def check_patterns(patterns: list[str] | None, field: str) -> list[str] | None:
    """Patterns as given, checked: each a glob of 1 to 500 characters on a relative path, at most 100."""
    if patterns is None:
        return None
    if len(patterns) > MAX_PATTERNS:
        raise ValueError(f"{field}: at most {MAX_PATTERNS} patterns")
    out = []
    for raw in patterns:
        pattern = raw.strip()
        if not pattern or len(pattern) > MAX_PATTERN:
            raise ValueError(f"{field}: a pattern is 1 to {MAX_PATTERN} characters, like *.md or drafts/**")
        if any(ord(c) < 32 for c in pattern) or "\\" in pattern:
            raise ValueError(f"{field}: {pattern!r} holds a control character or a backslash: write folders with /")
        if ".." in pattern.strip("/").split("/"):
            raise ValueError(f"{field}: {pattern!r} points out of the folder (..): patterns are relative to it")
        out.append(pattern)
    return out


class Pattern:
    """One glob on a relative path (see the module's docstring)."""

    def __init__(self, text: str) -> None:
        self.text = text
        body = text.strip()
        self.folders_only = body.endswith("/")
        anchored = body.startswith("/") or "/" in body.strip("/")
        segments = tuple(s for s in body.strip("/").split("/") if s)
        self.segments = segments if anchored else ("**", *segments)
        # the names it spells out (no wildcard): what a default exclude gives way to
        self.literals = frozenset(s.casefold() for s in segments if not any(c in s for c in "*?["))

    def matches(self, parts: tuple[str, ...], folder: bool) -> bool:
        """Does it match this path, or a folder the path is in?"""
        for end in range(1, len(parts) + 1):
            is_folder = folder or end < len(parts)
            if (is_folder or not self.folders_only) and _match(self.segments, parts[:end]):
                return True
        return False


@lru_cache(maxsize=4096)
def _match(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    if not pattern:
        return not parts
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(_match(rest, parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], head) and _match(rest, parts[1:])


class Rule:
    """What a source indexes: include (None or empty: everything), exclude, and the default excludes."""

    def __init__(self, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None) -> None:
        self.include = [Pattern(p) for p in include or ()]
        self.exclude = [Pattern(p) for p in exclude or ()]
        self.named = frozenset().union(*(p.literals for p in self.include))

    def _default_out(self, name: str, folder: bool) -> bool:
        low = name.casefold()
        if low in VCS:
            return True
        if low in self.named:
            return False  # an include pattern asks for it by name
        if name.startswith("."):
            return True
        return low in JUNK_FOLDERS if folder else bool(_JUNK_FILE.match(name))

    def enters(self, parts: tuple[str, ...]) -> bool:
        """May anything under this folder be indexed? (Folders left out are not walked into.)"""
        if self._default_out(parts[-1], True):
            return False
        return not any(p.matches(parts, True) for p in self.exclude)

    def keeps(self, parts: tuple[str, ...]) -> bool:
        """Is this file (its path's parts; its folders were entered) indexed, whatever its type?"""
        if self._default_out(parts[-1], False):
            return False
        if self.include and not any(p.matches(parts, False) for p in self.include):
            return False
        return not any(p.matches(parts, False) for p in self.exclude)


def walk(root: Path, rule: Rule | None = None) -> list[Path]:
    """Files under root in path order, links never followed. Without a rule (the base's own files/,
    notes/, saved/): all but hidden names; with one, only the files it keeps (folders it leaves out
    are not walked into)."""
    if not root.is_dir():
        return []
    found: list[tuple[tuple[str, ...], Path]] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        base = here.relative_to(root).parts
        dirs[:] = [
            d for d in dirs
            if (rule.enters((*base, d)) if rule else not d.startswith(".")) and not (here / d).is_symlink()
        ]
        for name in files:
            parts, file = (*base, name), here / name
            if not (rule.keeps(parts) if rule else not name.startswith(".")):
                continue
            if file.is_symlink() or not file.is_file():
                continue
            found.append((parts, file))
    found.sort(key=lambda item: item[0])
    return [file for _, file in found]

