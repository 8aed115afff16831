"""A label stays with what it introduces: `* CVE-2026-0001:` and its description are one passage."""

from __future__ import annotations

from astralyx.metis.chunking import MAX_CHARS, Block, pack, split_text, text_blocks
from astralyx.metis.parsing import read_markdown, read_text

from .kit import make_base, owner

# Shaped like git's release notes (RelNotes/2.30.7.txt): an intro, then list items whose first line
# is only the advisory's id, its description indented below after a blank line.
NOTES = """Frobnicator v2.3.7 Release Notes
================================

This release addresses the security issues CVE-2026-0001 and
CVE-2026-0002.

Fixes since v2.3.6
------------------

 * CVE-2026-0001:

   frob log can display records in an arbitrary format with its
   --format specifiers. The same is exposed to frob archive through
   the export-subst attribute of a file.

   When the padding operators are read, an integer overflow can
   happen in format_and_pad() where a size is stored as an int and
   then added as an offset to a later copy of the buffer.

   This overflow can be triggered by a user running a command that
   formats records (e.g., frob log --format=...). It may also be
   triggered through frob archive, which expands format specifiers
   inside of files in the repository during a frob archive.

   This integer overflow can result in arbitrary heap writes, which
   may result in remote code execution.

 * CVE-2026-0002:

   Attribute files map file patterns to attributes. These attributes
   are defined by adding an attribute file to the repository, which
   holds a set of file patterns and the attributes that should be
   set for paths matching each pattern. When they are parsed, several
   integer overflows can happen with a huge number of patterns or
   attributes, or with huge attribute names.

   A crafted attribute file in the history can trigger them.
"""


def passage_with(chunks, words: str):
    return next(c for c in chunks if words in c.text)


def test_a_list_items_label_line_and_its_description_are_one_passage():
    _, chunks = read_text(NOTES, "2.3.7")
    assert all(len(c.text) <= MAX_CHARS for c in chunks)
    label = passage_with(chunks, "CVE-2026-0002:")
    assert "Attribute files map file patterns" in label.text  # not left at the end of the passage before
    first = passage_with(chunks, "CVE-2026-0001:")
    assert "frob log can display records" in first.text
    lines = NOTES.splitlines()
    for chunk in chunks:  # each passage still starts at its line in the file
        assert lines[chunk.line - 1].strip() == chunk.text.splitlines()[0].strip()
    assert "".join(c.text for c in chunks).split() == NOTES.split()  # nothing lost or repeated


def test_a_short_line_ending_in_a_colon_joins_the_next_paragraph():
    filler = "\n\n".join(f"Paragraph {i} says something about the setup of the tool here." for i in range(11))
    text = f"{filler}\n\nThe options are:\n\n--fast skips the checks, --slow runs every one of them twice.\n"
    chunks = pack(text_blocks(text))
    options = passage_with(chunks, "The options are:")
    assert "--fast skips the checks" in options.text
    assert options.text.startswith("The options are:")
    assert options.line == text.splitlines().index("The options are:") + 1


def test_a_list_items_first_line_alone_joins_its_indented_text():
    filler = "\n\n".join(f"Paragraph {i} says something about the setup of the tool here." for i in range(11))
    text = f"{filler}\n\n * Faster start\n\n   The tool starts in half the time it took.\n"
    chunks = pack(text_blocks(text))
    assert "The tool starts in half the time" in passage_with(chunks, "* Faster start").text
    # a loose list's items (each one line, none indented below another) are not joined to each other
    loose = text_blocks(" * one\n\n * two\n\n * three\n")
    assert [b.text for b in loose] == [" * one", " * two", " * three"]
    assert [c.text for c in pack(loose, max_chars=14)] == [" * one\n\n * two", " * three"]


def test_a_label_is_not_joined_across_a_heading_or_far_below():
    _, chunks = read_markdown("# Guide\n\nSee below:\n\n## Next\n\nOther text.\n", "guide")
    assert [(c.headings, c.text) for c in chunks] == [(["Guide"], "See below:"), (["Guide", "Next"], "Other text.")]
    far = pack([Block("Notes:", line=1), Block("Much later.", line=9)], max_chars=12)
    assert [c.text for c in far] == ["Notes:", "Much later."]


def test_a_long_paragraph_is_never_cut_right_after_a_label():
    lines = [f"attr: fix number {i} of the overflows in the attribute parser" for i in range(30)]
    lines[8] = "pretty:"
    text = "\n".join(lines)
    pieces = split_text(text, 450)
    assert all(len(p) <= 450 for p, _ in pieces)
    assert not any(p.rstrip().endswith(":") for p, _ in pieces[:-1])
    assert all(p.startswith("attr:") or p.startswith("pretty:") for p, _ in pieces)  # whole lines
    one_line = " ".join(["word"] * 80 + ["Note:"] + ["word"] * 80)
    assert not any(p.endswith(":") for p, _ in split_text(one_line, 410)[:-1])


def test_a_search_for_the_advisory_finds_its_description(core, tmp_path):
    src = tmp_path / "relnotes"
    src.mkdir()
    (src / "2.3.7.txt").write_text(NOTES)
    make_base(core, "frob", sources=[src])
    core.documents.sync(owner(), "frob")
    results = core.search.search(owner(), "frob", "CVE-2026-0002").results
    found = [r for r in results if "CVE-2026-0002:" in r.text]
    assert found and "Attribute files map file patterns" in found[0].text, results
