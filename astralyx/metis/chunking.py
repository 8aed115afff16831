"""Chunking that keeps where a passage is: heading path, 1-based start line, or page.

Readers turn a document into `Block`s (headings and paragraphs, each with its line or page);
`pack` groups paragraphs of one section into chunks of at most `MAX_CHARS` characters, so
that 8 passages fit in the search budget (about 6,000 characters). A paragraph longer than
that is split at a sentence or word boundary, never in the middle of a word.

A label stays with what it introduces: a paragraph ending in ":" (`* CVE-2022-23521:`, "Options:")
or a list item's lone first line is joined to the paragraph after it, so no passage ends with a
label whose text is in the next one (a search for the label would miss the text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_CHARS = 700  # 8 × 700 = 5,600: eight passages fit in the ~6,000-character budget
# How passages are cut, as an index records it: when it changes, a sync reads every file again (index/service.py).
# 2: a label stays with what it introduces.
VERSION = "2"
SEPARATOR = " › "

_ATX = re.compile(r" {0,3}(#{1,6})(?=[ \t]|$)")  # the opening only: the rest is cut in atx_heading, linearly
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_SENTENCE_END = re.compile(r"[.!?;][\"')\]]*\s")  # not ':': a colon introduces what follows
_LIST_ITEM = re.compile(r"[ \t]*(?:[*+\-•]|\d{1,3}[.)])[ \t]+\S")
LABEL_GAP = 3  # a label joins a paragraph at most this many lines below its last line (two blank lines)


@dataclass
class Block:
    text: str
    line: int | None = None  # 1-based line of the block's first line in the file
    page: int | None = None  # 1-based page (PDF)
    level: int = 0  # heading level 1–6; 0 for a paragraph


@dataclass
class Chunk:
    text: str
    headings: list[str] = field(default_factory=list)
    line: int | None = None
    page: int | None = None

    @property
    def where(self) -> str:
        parts = list(self.headings)
        if self.page is not None:
            parts.append(f"page {self.page}")
        elif self.line is not None:
            parts.append(f"line {self.line}")
        return SEPARATOR.join(parts)


# -- readers: text → blocks -------------------------------------------------------------------

def markdown_blocks(text: str, first_line: int = 1) -> list[Block]:
    """Headings (ATX and setext) and paragraphs; fenced code stays whole and hides its '#' lines."""
    blocks: list[Block] = []
    lines = text.splitlines()
    para: list[str] = []
    start = 0
    fence: str | None = None

    def flush() -> None:
        nonlocal para
        body = "\n".join(para).strip("\n")
        if body.strip():
            blocks.append(Block(body, line=first_line + start))
        para = []

    for i, line in enumerate(lines):
        if fence is not None:
            para.append(line)
            if line.strip().startswith(fence):
                fence = None
                flush()
            continue
        m = _FENCE.match(line)
        if m:
            flush()
            fence, start = m.group(1)[:3], i
            para = [line]
            continue
        heading = atx_heading(line)
        if heading:
            flush()
            level, title = heading
            if title:
                blocks.append(Block(title, line=first_line + i, level=level))
            continue
        m = _SETEXT.match(line)
        if m and len(para) == 1 and para[0].strip():
            title = para[0].strip()
            para = []
            blocks.append(Block(title, line=first_line + start, level=1 if m.group(1)[0] == "=" else 2))
            continue
        if not line.strip():
            flush()
            continue
        if not para:
            start = i
        para.append(line)
    flush()
    return blocks


def atx_heading(line: str) -> tuple[int, str] | None:
    """(level, title) of an ATX heading line (`## Title ##`), or None.

    Not one regex: `(.*?)` before an optional closing `#`s backtracks over each run of spaces,
    and a long line of them took minutes.
    """
    m = _ATX.match(line)
    if not m:
        return None
    title = line[m.end() :].strip(" \t")
    unclosed = title.rstrip("#")
    if unclosed != title and (not unclosed or unclosed[-1] in " \t"):  # a closing sequence: ` ##`
        title = unclosed.rstrip(" \t")
    return len(m.group(1)), title.strip()


def text_blocks(text: str, first_line: int = 1, page: int | None = None) -> list[Block]:
    """Paragraphs separated by blank lines, each with its start line (or its page)."""
    blocks: list[Block] = []
    para: list[str] = []
    start = 0
    for i, line in enumerate([*text.splitlines(), ""]):
        if line.strip():
            if not para:
                start = i
            para.append(line.rstrip())
        elif para:
            blocks.append(Block("\n".join(para), line=None if page else first_line + start, page=page))
            para = []
    return blocks


# -- packing: blocks → chunks -----------------------------------------------------------------

def pack(blocks: list[Block], max_chars: int = MAX_CHARS) -> list[Chunk]:
    """Group the paragraphs of each section (and page) into chunks of at most max_chars."""
    chunks: list[Chunk] = []
    stack: list[tuple[int, str]] = []
    current: list[Block] = []
    blocks = join_labels(blocks)

    def headings() -> list[str]:
        return [title for _, title in stack]

    def flush() -> None:
        nonlocal current
        if current:
            chunks.append(Chunk("\n\n".join(b.text for b in current), headings(), current[0].line, current[0].page))
        current = []

    for block in blocks:
        if block.level:
            flush()
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, _one_line(block.text)))
            continue
        if current and current[-1].page != block.page:
            flush()
        if len(block.text) > max_chars:
            flush()
            line, counted = block.line, 0
            for piece, offset in split_text(block.text, max_chars):
                if line is not None:  # count the newlines since the last piece only: linear in the block
                    line += block.text.count("\n", counted, offset)
                    counted = offset
                chunks.append(Chunk(piece, headings(), line, block.page))
            continue
        size = sum(len(b.text) + 2 for b in current) + len(block.text)
        if current and size > max_chars:
            flush()
        current.append(block)
    flush()
    return chunks


def join_labels(blocks: list[Block]) -> list[Block]:
    """Each paragraph that introduces the next (`introduces`) joined to it, with the blank lines
    between kept, so the lines of the joined block are still those of the file. Linear: a run of
    labels (every paragraph ending in ':') is joined once, not copied again for each one."""
    out: list[Block] = []
    run: list[Block] = []

    def close() -> None:
        if len(run) == 1:
            out.append(run[0])
        elif run:
            parts = [run[0].text]
            for prev, block in zip(run, run[1:], strict=False):
                gap = 2 if prev.line is None or block.line is None else block.line - prev.line - prev.text.count("\n")
                parts += ["\n" * gap, block.text]
            out.append(Block("".join(parts), line=run[0].line, page=run[0].page))
        run.clear()

    for block in blocks:
        prev = run[-1] if run else None
        if prev is None or block.level or prev.level or prev.page != block.page or not introduces(prev, block):
            close()
        run.append(block)
    close()
    return out


def introduces(label: Block, after: Block) -> bool:
    """Does `label` introduce `after`: its last line ends in ':' (a short label, or a sentence such as
    "the options are:"), or it is a list item's first line alone with the item's text indented below it.
    Only when `after` is near (at most LABEL_GAP lines down): far below, it is no longer what was introduced."""
    if label.line is not None and after.line is not None:
        if after.line - label.line - label.text.count("\n") > LABEL_GAP:
            return False
    last = label.text[label.text.rfind("\n") + 1 :]
    if last.rstrip().endswith(":"):
        return True
    if "\n" in label.text or not _LIST_ITEM.match(last):
        return False
    return _indent(after.text) > _indent(last)


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" \t"))


def split_text(text: str, max_chars: int = MAX_CHARS) -> list[tuple[str, int]]:
    """Pieces of at most max_chars with their offsets, cut after a sentence when one ends late
    enough, else at a line break, else at a space. Only a single word longer than max_chars is cut
    inside. A piece never ends with a label (a line, or a word, ending in ':'): it goes to the next."""
    pieces: list[tuple[str, int]] = []
    pos = 0
    n = len(text)
    while pos < n:
        while pos < n and text[pos].isspace():
            pos += 1
        if pos >= n:
            break
        if n - pos <= max_chars:
            pieces.append((text[pos:].rstrip(), pos))
            break
        window = text[pos : pos + max_chars + 1]
        cut = -1
        for m in _SENTENCE_END.finditer(window):
            if m.end() - 1 >= max_chars // 2:
                cut = m.end() - 1
        if cut < 0:
            cut = window.rfind("\n")  # whole lines (a list, a log) when a line ends late enough
            if cut < max_chars // 2:
                cut = max(window.rfind(" "), window.rfind("\n"), window.rfind("\t"))
            if cut <= 0:  # one word longer than a chunk: nothing else to do
                cut = max_chars
            else:
                cut = _before_label(window, cut, max_chars // 4)
        pieces.append((text[pos : pos + cut].rstrip(), pos))
        pos += cut
    return [(p, o) for p, o in pieces if p]


def _before_label(window: str, cut: int, least: int) -> int:
    """The cut moved before a label the piece would end with (its line, else its word), if the piece
    keeps at least `least` characters; else the cut as it was."""
    piece = window[:cut].rstrip()
    if not piece.endswith(":"):
        return cut
    start = piece.rfind("\n") + 1  # the label's line; in a piece of one line, the label's word
    if not start:
        start = max(piece.rfind(" "), piece.rfind("\t")) + 1
    return start if start >= least else cut


def _one_line(text: str) -> str:
    return " ".join(text.split())
