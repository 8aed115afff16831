"""Markdown as the exchange format of a memory's facts.

Leaving: a memory as a folder people read without Astralyx, one file per subject (its current facts, then
the history, each with the period it held, its sayings, source and corrections), a README that lists them,
and the facts' own notes (notes/memory/, the memory's layout), which `astra metis import DIR` makes a
memory of again.

Arriving: a folder of facts notes (a memory's notes/memory/, ours or written by hand in its form) is packed
into an archive of `contents: facts`; the import reads each note as a fact, leaves out what is not one
(said why) and any secret (never kept), and settles every subject+attribute's timeline again from the
sayings (timeline.py), so the history is what the rule makes of them, whatever folder each note was in.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ...errors import AstralyxError
from ...util import new_id
from ..memory.facts import HISTORY_DIR, ID_RE, MAX_FACT, MAX_NAME, MAX_SOURCE, Fact, parse, render
from ..memory.service import refuse_secret
from ..memory.timeline import arrange, key_of, norm_name
from ..writer import FACTS_DIR
from .archive import PREFIX, Entry, Manifest, ManifestBase, invalid, members, stream

README = "README.md"
MAX_FACT_FILE = 1 << 20  # a fact's note is a few hundred bytes; a megabyte is not one


# -- leaving: a file per subject --------------------------------------------------------------------------
def when(stamp: str | None) -> str:
    """A said_at / until as people read it: the date, and the time when one was said (UTC)."""
    if not stamp:
        return ""
    return stamp if len(stamp) == 10 else f"{stamp[:10]} {stamp[11:16]} UTC"


def _fact_lines(fact: Fact, facts: dict[str, Fact]) -> list[str]:
    lines = [f"- **{fact.attribute}**: {fact.fact}"]
    held = f"since {when(fact.said_at)}" if fact.until is None else f"{when(fact.said_at)} – {when(fact.until)}"
    about = [f"held {held}"]
    if fact.said_again:
        about.append("said again " + ", ".join(when(s) for s in fact.said_again))
    about.append(f"source: {fact.source}")
    lines.append("  " + " · ".join(about))
    if fact.replaced_by:
        newer = facts.get(fact.replaced_by)
        lines.append(f"  replaced by: {newer.fact if newer else fact.replaced_by}")
    for c in fact.corrected:
        was = [f"wording \"{c.fact}\"" if c.fact else "", f"said {when(c.said_at)}" if c.said_at else "",
               f"source {c.source}" if c.source else ""]
        lines.append(f"  corrected {c.on}; before: " + ", ".join(w for w in was if w) if any(was) else
                     f"  corrected {c.on}")
    return lines


def subject_page(subject: str, facts: list[Fact], all_facts: dict[str, Fact], *, memory: str, exported: str) -> str:
    """One subject's page: its current facts, then its history (newest first), each with when it held."""
    current = sorted((f for f in facts if f.status == "current"), key=lambda f: norm_name(f.attribute))
    history = sorted((f for f in facts if f.status != "current"),
                     key=lambda f: (norm_name(f.attribute), f.until or ""), reverse=False)
    by_attribute: dict[str, list[Fact]] = {}
    for fact in history:
        by_attribute.setdefault(norm_name(fact.attribute), []).append(fact)
    lines = [f"# {subject}", "", f"From the memory {memory}, exported {exported[:10]}: what holds now, then what it "
             "replaced, with the period each held.", "", "## Current", ""]
    for fact in current:
        lines += _fact_lines(fact, all_facts)
    if not current:
        lines.append("Nothing holds now.")
    if history:
        lines += ["", "## History", ""]
        for attribute in sorted(by_attribute):
            for fact in reversed(by_attribute[attribute]):  # newest first
                lines += _fact_lines(fact, all_facts)
    return "\n".join(lines) + "\n"


def _slug(subject: str) -> str:
    text = unicodedata.normalize("NFKC", subject).casefold()
    slug = re.sub(r"[^\w]+", "-", text).strip("-_")[:80].strip("-_")
    return slug or "subject"


def pages(facts: list[Fact], *, memory: str, exported: str) -> list[tuple[str, str]]:
    """(file name, text) of every subject's page, then the README listing them."""
    groups: dict[str, list[Fact]] = {}
    for fact in facts:
        groups.setdefault(key_of(fact)[0], []).append(fact)
    by_id = {f.id: f for f in facts}
    taken = {README.casefold(), "manifest.json", "notes"}
    out: list[tuple[str, str]] = []
    listed: list[str] = []
    for key in sorted(groups):
        group = groups[key]
        shown = next((f.subject for f in group if f.status == "current"), group[-1].subject)
        slug, n = _slug(shown), 1
        name = f"{slug}.md"
        while name.casefold() in taken:
            n += 1
            name = f"{slug}-{n}.md"
        taken.add(name.casefold())
        out.append((name, subject_page(shown, group, by_id, memory=memory, exported=exported)))
        now = sum(1 for f in group if f.status == "current")
        listed.append(f"- [{shown}]({name}): {now} current, {len(group) - now} in the history")
    readme = [f"# {memory}", "", f"The facts of the memory {memory}, exported {exported[:10]}: a page per subject, "
              "its current facts first, then the history with the period each fact held.", "", *listed, "",
              f"The facts' own notes are in {FACTS_DIR}/ (the memory's layout). `astra metis import <this folder> "
              "--as NAME` makes a memory of them again.", ""]
    return [*out, (README, "\n".join(readme))]


def markdown_entries(facts: list[Fact], manifest: Manifest, stored: list[tuple[str, Path]]) -> Iterator[Entry]:
    """The markdown export as archive members: the manifest, the pages, the facts' notes (from `stored`: each
    note's path in the base's folder and the file to read it from)."""
    yield Entry.of_bytes("manifest.json", manifest.to_bytes())
    name = manifest.knowledge_base.name or "memory"
    for page, text in pages(facts, memory=name, exported=manifest.exported_at):
        yield Entry.of_bytes(page, text.encode())
    for relpath, file in stored:
        yield Entry.of_file(relpath, file)


def unpack(raw: BinaryIO, folder: Path) -> list[str]:
    """A markdown export (as GET …/export?format=markdown sends it) written out as the folder people read: its files,
    each checked as an import checks a base's (relative, no `..`, no hidden name, files and folders only). Answers
    the files written."""
    written: list[str] = []
    for member in members(raw):
        name = member.name.removeprefix("./").rstrip("/")
        parts = name.split("/")
        if name.startswith("/") or "\\" in name or any(p in ("", ".", "..") or p.startswith(".") for p in parts):
            raise invalid(f"{member.name!r} is not a path inside the folder")
        target = folder / name
        if member.kind == "folder":
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "xb") as f:
            for chunk in member.chunks():
                f.write(chunk)
        written.append(name)
    return written


# -- arriving: a folder of facts notes --------------------------------------------------------------------
def facts_folder(folder: Path) -> tuple[Path, list[Path]]:
    """The facts notes of a folder: its notes/memory/ when it has one (a base's folder, a markdown export), else
    the folder itself (a memory's notes/memory/ copied, or notes written in its form): every .md below, but
    hidden ones and links."""
    root = folder / FACTS_DIR if (folder / FACTS_DIR).is_dir() else folder
    found = []
    for file in sorted(root.rglob("*.md")):
        rel = file.relative_to(root)
        if any(p.startswith(".") for p in rel.parts) or file.is_symlink() or not file.is_file():
            continue
        if root == folder and len(rel.parts) == 1 and file.name == README:
            continue
        found.append(file)
    return root, found


def pack_facts(folder: Path, name: str | None) -> Iterator[bytes]:
    """A folder of facts notes as an archive to import (`contents: facts`): the folder's manifest.json (a markdown
    export's) gives the memory's name and spec, else a memory with the workspace's embedding."""
    root, files = facts_folder(folder)
    manifest = Manifest(contents="facts", knowledge_base=ManifestBase(name=name, spec={"kind": "memory"}))
    given = folder / "manifest.json"
    if given.is_file():
        try:
            found = Manifest.read(given.read_bytes())
            spec = found.knowledge_base.spec if found.knowledge_base.spec.get("kind") == "memory" else {"kind": "memory"}
            manifest = manifest.model_copy(update={"knowledge_base": ManifestBase(
                name=name or found.knowledge_base.name, spec=spec)})
        except AstralyxError:
            pass  # not ours: the notes still are what they are
    entries = [Entry.of_bytes("manifest.json", manifest.to_bytes())]
    entries += [Entry.of_file(f"{PREFIX}{FACTS_DIR}/{f.relative_to(root).as_posix()}", f) for f in files]
    return stream(entries)


def read_fact(relpath: str, data: bytes) -> tuple[Fact | None, str | None]:
    """A fact from a note of notes/memory/ (or why it is left out). A note not named by a fact id gets one."""
    if len(data) > MAX_FACT_FILE:
        return None, f"larger than {MAX_FACT_FILE:,} bytes: not a fact's note"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8"
    stem = Path(relpath).stem
    status = "history" if relpath.startswith(HISTORY_DIR + "/") else "current"
    fact = parse(text, stem if ID_RE.match(stem) else new_id("f"), status)
    if fact is None:
        return None, "not a fact's note (front matter with subject, attribute, fact and said_at)"
    if len(fact.subject) > MAX_NAME or len(fact.attribute) > MAX_NAME or len(fact.fact) > MAX_FACT or \
            len(fact.source) > MAX_SOURCE:
        return None, "a field is longer than a fact's may be"
    if _secret(fact):
        return None, SECRET
    return fact, None


SECRET = "it looks like a secret (a password, a key, a card number…): secrets are never kept"


def _secret(fact: Fact) -> bool:
    try:
        refuse_secret(fact.subject, fact.attribute, fact.fact, fact.source, where="The fact")
    except AstralyxError:
        return True
    return False


def secret_in(relpath: str, data: bytes) -> bool:
    """A memory's fact note that says a secret; a note there that is no fact's is read as one text."""
    text = data.decode("utf-8", errors="replace")
    fact = parse(text, Path(relpath).stem, "current")
    if fact is not None:
        return _secret(fact)
    try:
        refuse_secret("", "", text, "", where="The note")
    except AstralyxError:
        return True
    return False


def settle_facts(facts: list[Fact]) -> list[Fact]:
    """Every subject+attribute's timeline made again from the facts' sayings (a fact found twice, in the current
    and the history folder, counts once: the history copy, as the memory's own repair reads it)."""
    by_id: dict[str, Fact] = {}
    for fact in facts:
        if fact.id not in by_id or fact.status == "history":
            by_id[fact.id] = fact
    groups: dict[tuple[str, str], list[Fact]] = {}
    for fact in by_id.values():
        groups.setdefault(key_of(fact), []).append(fact)
    return [f for key in sorted(groups) for f in arrange(groups[key])]


def fact_files(facts: list[Fact]) -> list[tuple[str, bytes]]:
    """Each settled fact's note: its path in the base's folder and its text."""
    return [(f.relpath, render(f).encode()) for f in facts]


def summary(facts: list[Fact]) -> dict[str, Any]:
    current = sum(1 for f in facts if f.status == "current")
    return {"facts": current, "history": len(facts) - current, "subjects": len({key_of(f)[0] for f in facts})}

