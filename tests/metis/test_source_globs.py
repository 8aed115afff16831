"""A source's include/exclude globs are matched in time linear in the path: nested `**` patterns cannot hold a
sync (and the one indexing slot) for minutes; what they match is what they matched before."""

from __future__ import annotations

import threading
from fnmatch import fnmatchcase
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from astralyx.metis.bases import parse_request
from astralyx.metis.sources import Pattern, Rule, walk

from .kit import DEEP, ConceptEmbedder, deep_folder, owner

# -- the semantics as they were (a recursive search over `**`): the reference the matcher agrees with ---------


def reference_matches(text: str, parts: tuple[str, ...], folder: bool) -> bool:
    body = text.strip()
    folders_only = body.endswith("/")
    anchored = body.startswith("/") or "/" in body.strip("/")
    segments = tuple(s for s in body.strip("/").split("/") if s)
    segments = segments if anchored else ("**", *segments)

    def match(pattern: tuple[str, ...], names: tuple[str, ...]) -> bool:
        if not pattern:
            return not names
        head, rest = pattern[0], pattern[1:]
        if head == "**":
            return any(match(rest, names[i:]) for i in range(len(names) + 1))
        return bool(names) and fnmatchcase(names[0], head) and match(rest, names[1:])

    for end in range(1, len(parts) + 1):
        is_folder = folder or end < len(parts)
        if (is_folder or not folders_only) and match(segments, parts[:end]):
            return True
    return False


def reference_kept(include: list[str], exclude: list[str], parts: tuple[str, ...]) -> bool:
    """The file at `parts` indexed, by the reference matcher (default excludes as Rule has them)."""
    rule = Rule(include, exclude)
    for end in range(1, len(parts)):  # each folder on the way entered
        if rule._default_out(parts[end - 1], True) or any(reference_matches(p, parts[:end], True) for p in exclude):
            return False
    if rule._default_out(parts[-1], False):
        return False
    if include and not any(reference_matches(p, parts, False) for p in include):
        return False
    return not any(reference_matches(p, parts, False) for p in exclude)


NAMES = st.sampled_from(["a", "b", "ab", "ba", "aa", "x.md", "a.md", ".h", "build", "q1"])
SEGMENTS = st.sampled_from(["a", "b", "*", "**", "?", "a*", "*b", "*a*", "[ab]", "[!a]*", "x.md", "*.md", "build", ".h"])
PATTERNS = st.builds(
    lambda lead, segments, trail: lead + "/".join(segments) + trail,
    st.sampled_from(["", "/"]), st.lists(SEGMENTS, min_size=1, max_size=5), st.sampled_from(["", "/"]),
)
PATHS = st.lists(NAMES, min_size=1, max_size=6).map(tuple)


@settings(max_examples=600, deadline=None)
@given(PATTERNS, PATHS, st.booleans())
def test_a_pattern_matches_what_it_matched_before(text, parts, folder):
    assert Pattern(text).matches(parts, folder) == reference_matches(text, parts, folder)


@settings(max_examples=40, deadline=None)
@given(st.lists(PATTERNS, max_size=3), st.lists(PATTERNS, max_size=3), st.lists(PATHS, min_size=1, max_size=8))
def test_a_walk_keeps_what_it_kept_before(tmp_path_factory, include, exclude, paths):
    root = tmp_path_factory.mktemp("tree")
    files = set()
    for parts in paths:  # a name is a file or a folder, not both
        if any(parts[:i] in files for i in range(1, len(parts))) or any(f[:len(parts)] == parts for f in files):
            continue
        (root.joinpath(*parts[:-1])).mkdir(parents=True, exist_ok=True)
        root.joinpath(*parts).write_text("x")
        files.add(parts)
    walked = {f.relative_to(root).parts for f in walk(root, Rule(include, exclude))}
    assert walked == {parts for parts in files if reference_kept(include, exclude, parts)}


# -- the patterns: 20 of "**/" * 160 + "qN" (within the limits: 482 characters each) ---------------






def test_deep_double_star_patterns_match_in_a_walk_of_linear_time(tmp_path):
    assert all(len(p) <= 500 for p in DEEP)
    src = deep_folder(tmp_path)
    found: list[list[Path]] = []
    walker = threading.Thread(target=lambda: found.append(walk(src, Rule(None, DEEP))), daemon=True)
    walker.start()
    walker.join(120)  # before: 323 s on this folder
    assert found, "the walk did not end"
    assert sorted(f.name for f in found[0]) == ["page19.md", "page29.md", "page39.md", "page9.md"]


def test_a_sync_with_deep_double_star_excludes_indexes_its_folder(core, tmp_path):
    src = deep_folder(tmp_path)
    core.index.embedder_for = lambda base: ConceptEmbedder() if base.spec.embedding else None
    core.bases.create(owner(), parse_request({"metadata": {"name": "deep"}, "spec": {
        "sources": [{"folder": str(src), "exclude": DEEP}]}}))
    answer: list[dict] = []
    syncing = threading.Thread(target=lambda: answer.append(core.documents.sync(owner(), "deep")), daemon=True)
    syncing.start()
    syncing.join(120)
    assert answer, "the sync did not end"
    assert answer[0]["added"] == 4 and answer[0]["failed"] == []
    documents = [d.document for d in core.documents.documents(owner(), "deep").documents]
    assert len(documents) == 4 and all("/q" not in d for d in documents)
