"""Chunking keeps where a passage is: heading path and line, page, and never cuts a word."""

from __future__ import annotations

from astralyx.metis.chunking import MAX_CHARS, Block, markdown_blocks, pack, split_text, text_blocks
from astralyx.metis.parsing import read_markdown, read_text

LEAVE = """---
title: Leave policy
owner: people-team
---
# Leave policy

How leave works here.

## Vacation

Each person has 25 vacation days a year.
Unused days carry over until March.

### Booking

Book leave in the HR tool.

## Sick leave

Tell your lead on the first day.

```
# not a heading: inside a code fence
```
"""


def test_markdown_chunks_carry_heading_path_and_file_line():
    title, chunks = read_markdown(LEAVE, "leave")
    assert title == "Leave policy"
    by_text = {c.text.splitlines()[0]: c for c in chunks}
    vacation = by_text["Each person has 25 vacation days a year."]
    assert vacation.headings == ["Leave policy", "Vacation"]
    assert vacation.line == 11  # the line in the file, front matter included
    assert vacation.where == "Leave policy › Vacation › line 11"
    booking = by_text["Book leave in the HR tool."]
    assert booking.where == "Leave policy › Vacation › Booking › line 16"
    sick = by_text["Tell your lead on the first day."]
    assert sick.headings == ["Leave policy", "Sick leave"]  # a sibling heading replaces Vacation, not nests
    fence = next(c for c in chunks if "inside a code fence" in c.text)
    assert fence.headings == ["Leave policy", "Sick leave"]
    assert all(c.line is not None and c.page is None for c in chunks)


def test_each_line_number_points_at_the_passage_in_the_file():
    lines = LEAVE.splitlines()
    _, chunks = read_markdown(LEAVE, "leave")
    for chunk in chunks:
        assert lines[chunk.line - 1].strip() == chunk.text.splitlines()[0].strip()


def test_setext_headings_and_title_fallbacks():
    blocks = markdown_blocks("Guide\n=====\n\nIntro text.\n\nPart two\n--------\n\nMore.\n")
    assert [(b.text, b.level, b.line) for b in blocks] == [
        ("Guide", 1, 1), ("Intro text.", 0, 4), ("Part two", 2, 6), ("More.", 0, 9)
    ]
    title, chunks = read_markdown("no headings at all\n", "notes-2026")
    assert title == "notes-2026"
    assert chunks[0].where == "line 1"


def test_plain_text_by_paragraphs_with_lines():
    text = "First paragraph\nstill first.\n\n\nSecond one.\n\nThird.\n"
    title, chunks = read_text(text, "readme")
    assert title == "readme"
    assert [(c.line, c.where) for c in chunks] == [(1, "line 1")]  # small paragraphs share a chunk
    blocks = text_blocks(text)
    assert [(b.text, b.line) for b in blocks] == [("First paragraph\nstill first.", 1), ("Second one.", 5), ("Third.", 7)]


def test_small_paragraphs_are_packed_up_to_the_limit_and_keep_the_first_line():
    paragraphs = [f"Paragraph number {i} says something useful about the topic at hand." for i in range(40)]
    text = "\n\n".join(paragraphs)
    chunks = pack(text_blocks(text))
    assert len(chunks) > 1
    assert all(len(c.text) <= MAX_CHARS for c in chunks)
    assert "\n\n".join(c.text for c in chunks) == text  # nothing lost, nothing repeated
    line = 1
    for c in chunks:
        assert c.line == line
        line += (c.text.count("\n\n") + 1) * 2


def test_a_long_section_is_split_never_mid_word():
    words = [f"word{i}" for i in range(1000)]
    body = " ".join(words)
    chunks = pack([Block("Guide", line=1, level=1), Block(body, line=3)])
    assert len(chunks) >= 8
    assert all(len(c.text) <= MAX_CHARS for c in chunks)
    assert all(c.headings == ["Guide"] for c in chunks)
    pieces = [w for c in chunks for w in c.text.split()]
    assert pieces == words  # every word whole, in order


def test_split_prefers_sentence_ends_and_counts_lines():
    sentence = "This sentence is about fifty characters long, ok. "
    text = "\n".join(sentence * 2 for _ in range(20))
    pieces = split_text(text, 300)
    assert all(len(p) <= 300 for p, _ in pieces)
    assert all(p.endswith(".") for p, _ in pieces[:-1])
    chunks = pack([Block(text, line=10)], max_chars=300)
    for chunk, (_, offset) in zip(chunks, pieces, strict=True):
        assert chunk.line == 10 + text.count("\n", 0, offset)


def test_a_word_longer_than_a_chunk_is_the_only_thing_cut():
    long_word = "x" * 2000
    pieces = split_text(f"short {long_word} end", 700)
    assert all(len(p) <= 700 for p, _ in pieces)
    assert "".join(p for p, _ in pieces).replace(" ", "") == f"short{long_word}end"


def test_pages_are_kept_and_never_mixed_in_one_chunk():
    blocks = text_blocks("Page one text.", page=1) + text_blocks("Page two text.\n\nMore on two.", page=2)
    chunks = pack(blocks)
    assert [(c.page, c.where) for c in chunks] == [(1, "page 1"), (2, "page 2")]
    assert chunks[1].text == "Page two text.\n\nMore on two."
