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

import fnmatch
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .jobs import checkpoint

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
    """One glob on a relative path (see the module's docstring), compiled once.

    Matching runs the glob as a small automaton over the path's names: its state is the set of
    segments matched so far (`**` collapsed: `**/**` is `**`), one step per name, so the time is linear
    in the path (times the pattern's segments), never the backtracking a nested `**` search could take."""

    def __init__(self, text: str) -> None:
        self.text = text
        body = text.strip()
        self.folders_only = body.endswith("/")
        anchored = body.startswith("/") or "/" in body.strip("/")
        segments = tuple(s for s in body.strip("/").split("/") if s)
        steps: list[str] = []
        for segment in segments if anchored else ("**", *segments):
            if not (segment == "**" and steps and steps[-1] == "**"):
                steps.append(segment)
        # each segment: None for `**` (any number of names), else the name's test (fnmatchcase's own)
        self._steps = tuple(None if s == "**" else re.compile(fnmatch.translate(s)).match for s in steps)
        self.start = self._closure({0})
        # the names it spells out (no wildcard): what a default exclude gives way to
        self.literals = frozenset(s.casefold() for s in segments if not any(c in s for c in "*?["))

    def _closure(self, states: set[int]) -> frozenset[int]:
        """With each `**`, the state past it too (it may match no name)."""
        out = set(states)
        for state in sorted(states):
            while state < len(self._steps) and self._steps[state] is None:
                state += 1
                out.add(state)
        return frozenset(out)

    def step(self, states: frozenset[int], name: str) -> frozenset[int]:
        """The states after one more name of the path."""
        if not states:
            return states
        after = set()
        for state in states:
            if state < len(self._steps):
                test = self._steps[state]
                if test is None:
                    after.add(state)  # `**` takes the name and may take more
                elif test(name):
                    after.add(state + 1)
        return self._closure(after)

    def accepts(self, states: frozenset[int], folder: bool) -> bool:
        """Does the path read so far match (a folder, or a file: `name/` matches folders only)?"""
        return len(self._steps) in states and (folder or not self.folders_only)

    def matches(self, parts: tuple[str, ...], folder: bool) -> bool:
        """Does it match this path, or a folder the path is in?"""
        states = self.start
        for end, name in enumerate(parts, start=1):
            states = self.step(states, name)
            if not states:
                return False
            if self.accepts(states, folder or end < len(parts)):
                return True
        return False


@dataclass(frozen=True)
class Place:
    """Where a walk is, for a rule: each pattern's states on the path so far, and what they decided."""

    exclude: tuple[frozenset[int], ...]
    include: tuple[frozenset[int], ...]
    excluded: bool  # an exclude matched the path or a folder it is in
    included: bool  # no include, or one matched the path or a folder it is in


class Rule:
    """What a source indexes: include (None or empty: everything), exclude, and the default excludes."""

    def __init__(self, include: Iterable[str] | None = None, exclude: Iterable[str] | None = None) -> None:
        self.include = [Pattern(p) for p in include or ()]
        self.exclude = [Pattern(p) for p in exclude or ()]
        self.named = frozenset().union(*(p.literals for p in self.include))
        self.root = Place(tuple(p.start for p in self.exclude), tuple(p.start for p in self.include),
                          excluded=False, included=not self.include)

    def _default_out(self, name: str, folder: bool) -> bool:
        low = name.casefold()
        if low in VCS:
            return True
        if low in self.named:
            return False  # an include pattern asks for it by name
        if name.startswith("."):
            return True
        return low in JUNK_FOLDERS if folder else bool(_JUNK_FILE.match(name))

    def step(self, place: Place, name: str, folder: bool) -> Place:
        """The place one name further down (a folder, or a file: a pattern ending in / takes folders only)."""
        exclude = tuple(p.step(s, name) for p, s in zip(self.exclude, place.exclude, strict=True))
        include = tuple(p.step(s, name) for p, s in zip(self.include, place.include, strict=True))
        return Place(
            exclude, include,
            excluded=place.excluded or any(p.accepts(s, folder) for p, s in zip(self.exclude, exclude, strict=True)),
            included=place.included or any(p.accepts(s, folder) for p, s in zip(self.include, include, strict=True)),
        )

    def enter(self, place: Place, name: str) -> Place | None:
        """The folder `name` in `place`, or None when nothing under it may be indexed (it is not walked into)."""
        if self._default_out(name, True):
            return None
        inside = self.step(place, name, True)
        return None if inside.excluded else inside

    def keeps_file(self, place: Place, name: str) -> bool:
        """Is the file `name` in `place` (a folder entered) indexed, whatever its type?"""
        if self._default_out(name, False):
            return False
        at = self.step(place, name, False)
        return at.included and not at.excluded

    def _at(self, folders: tuple[str, ...]) -> Place:
        place = self.root
        for name in folders:
            place = self.step(place, name, True)
        return place

    def enters(self, parts: tuple[str, ...]) -> bool:
        """May anything under this folder be indexed? (Its folders were entered.)"""
        return self.enter(self._at(parts[:-1]), parts[-1]) is not None

    def keeps(self, parts: tuple[str, ...]) -> bool:
        """Is this file (its path's parts; its folders were entered) indexed, whatever its type?"""
        return self.keeps_file(self._at(parts[:-1]), parts[-1])


def walk(root: Path, rule: Rule | None = None) -> list[Path]:
    """Files under root in path order, links never followed. Without a rule (the base's own files/,
    notes/, saved/): all but hidden names; with one, only the files it keeps (folders it leaves out
    are not walked into). Run by a sync job, it stops at once when the job is stopped (checkpoint():
    between two folders and two files)."""
    if not root.is_dir():
        return []
    found: list[tuple[tuple[str, ...], Path]] = []
    places: dict[str, Place] = {str(root): rule.root} if rule else {}
    for folder, dirs, files in os.walk(root, followlinks=False):
        checkpoint()
        here = Path(folder)
        base = here.relative_to(root).parts
        place = places.pop(folder) if rule else None  # set when its parent entered it
        entered = []
        for d in dirs:
            if (here / d).is_symlink():
                continue
            if rule is None or place is None:
                if not d.startswith("."):
                    entered.append(d)
            elif (inside := rule.enter(place, d)) is not None:
                places[os.path.join(folder, d)] = inside
                entered.append(d)
        dirs[:] = entered
        for name in files:
            checkpoint()
            if not (rule.keeps_file(place, name) if rule and place else not name.startswith(".")):
                continue
            file = here / name
            if file.is_symlink() or not file.is_file():
                continue
            found.append(((*base, name), file))
    found.sort(key=lambda item: item[0])
    return [file for _, file in found]
