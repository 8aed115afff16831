"""Files parsed into documents: text extraction (Markdown, plain text, HTML, PDF) into cited chunks.

A parsed document has a label to cite it by (`docs:handbook/leave.md`), a title, its chunks
(each with where it is: headings › line, or page) and `attrs`, kept with the document in
the index and handed back with every hit (the memory helper keeps a fact's dates there).
"""

from __future__ import annotations

import codecs
import io
import logging
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from ..errors import AstralyxError, Invalid, TooLarge
from .chunking import Block, Chunk, markdown_blocks, pack, text_blocks

log = logging.getLogger("astralyx.metis")

MARKDOWN = {".md", ".markdown", ".mdown", ".mkd"}
TEXT = {".txt", ".text", ".rst", ".csv", ".log"}
HTML = {".html", ".htm", ".xhtml"}
PDF = {".pdf"}
SUPPORTED = MARKDOWN | TEXT | HTML | PDF


@dataclass
class ParsedDocument:
    label: str  # what a citation names: docs:<base>/<path>, notes:…, saved:…, memory:…
    title: str
    chunks: list[Chunk]
    attrs: dict[str, Any] = field(default_factory=dict)
    kind: str = "docs"  # docs | notes | saved | memory: selects a re-ranking hook


def supported(name: str) -> bool:
    return PurePosixPath(name).suffix.lower() in SUPPORTED


def check_supported(name: str) -> None:
    if not supported(name):
        raise Invalid(
            f"{name!r}: this file type is not read; send Markdown (.md), plain text (.txt), HTML (.html) or PDF (.pdf)",
            code="UNSUPPORTED_FILE_TYPE",
        )


# The most text one document may hold (about 14,000 passages): past it, 413 FILE_TOO_LARGE.
MAX_TEXT_CHARS = 10_000_000
# Text has few control characters besides tab and newlines (a coloured log: a few %); binary has
# about one byte in nine (and NUL, which text never has).
MAX_CONTROL_SHARE = 0.05
_CONTROLS = bytes([*range(0x00, 0x09), 0x0B, *range(0x0E, 0x20), 0x7F])  # all but \t \n \f \r


def decode(data: bytes) -> str:
    """Bytes as text: UTF-8 (a BOM dropped), UTF-16 with its BOM, else Windows-1252 / Latin-1."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[3:]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16", errors="replace")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def text_of(data: bytes, name: str) -> str:
    """A text file's text, or 422 UNREADABLE_FILE when its bytes are not text (a binary named .md)."""
    text = decode(data)
    raw = text.encode("utf-8", errors="replace") if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) else data
    if b"\x00" in raw or len(raw) - len(raw.translate(None, _CONTROLS)) > MAX_CONTROL_SHARE * len(raw):
        raise Invalid(
            f"{name!r} is not a text file (it holds NUL or many control bytes): send Markdown, plain text "
            "or HTML as text (UTF-8), a PDF as .pdf",
            code="UNREADABLE_FILE",
        )
    check_size(len(text), name)
    return text


def check_size(chars: int, name: str) -> None:
    if chars > MAX_TEXT_CHARS:
        raise TooLarge(
            f"{name!r} has more than {MAX_TEXT_CHARS:,} characters of text, the most one document may hold: "
            "split it into smaller files",
            code="FILE_TOO_LARGE",
        )


def parse_file(label: str, name: str, data: bytes, *, kind: str = "docs") -> ParsedDocument:
    """A document from a file's bytes, by its extension."""
    suffix = PurePosixPath(name).suffix.lower()
    stem = PurePosixPath(name).stem
    if suffix in PDF:
        title, chunks = read_pdf(data, stem, name)
    elif suffix in HTML:
        title, chunks = read_html(text_of(data, name), stem)
    elif suffix in MARKDOWN:
        title, chunks = read_markdown(text_of(data, name), stem)
    else:
        title, chunks = read_text(text_of(data, name), stem)
    return ParsedDocument(label=label, title=title, chunks=chunks, kind=kind)


# -- formats ------------------------------------------------------------------------------------

def split_front_matter(text: str) -> tuple[dict[str, Any], str, int]:
    """(metadata, body, number of lines before the body) so line numbers stay those of the file."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text, 0
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            import yaml

            try:
                meta = yaml.safe_load("\n".join(lines[1:i])) or {}
            except yaml.YAMLError:
                return {}, text, 0
            if not isinstance(meta, dict):
                return {}, text, 0
            return meta, "\n".join(lines[i + 1 :]), i + 1
    return {}, text, 0


def read_markdown(text: str, fallback_title: str) -> tuple[str, list[Chunk]]:
    meta, body, offset = split_front_matter(text)
    blocks = markdown_blocks(body, first_line=offset + 1)
    title = str(meta.get("title") or "") or next((b.text for b in blocks if b.level == 1), "") or fallback_title
    return _one_line(title), pack(blocks)


def read_text(text: str, fallback_title: str) -> tuple[str, list[Chunk]]:
    return fallback_title, pack(text_blocks(text))


_HEADINGS = {f"h{i}": i for i in range(1, 7)}
_BLOCKS = {"p", "li", "pre", "blockquote", "td", "th", "dt", "dd", "figcaption", "caption", "address", *_HEADINGS}
_DROP = ["script", "style", "noscript", "template", "svg", "nav", "head"]


def read_html(html: str, fallback_title: str) -> tuple[str, list[Chunk]]:
    """Headings and text blocks in document order, each with its line in the HTML source."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    title_tag = soup.find("title")
    page_title = _one_line(title_tag.get_text(" ")) if title_tag else ""
    for tag in soup(_DROP):
        tag.decompose()
    blocks: list[Block] = []
    for tag in soup.find_all(_BLOCKS):
        if tag.find(_BLOCKS):  # a container: its inner blocks speak for it
            continue
        text = tag.get_text("\n" if tag.name == "pre" else " ", strip=tag.name != "pre")
        text = text if tag.name == "pre" else _one_line(text)
        if text.strip():
            blocks.append(Block(text, line=tag.sourceline, level=_HEADINGS.get(tag.name, 0)))
    if not any(not b.level for b in blocks):  # no paragraphs marked up: take the page's text
        body = soup.body or soup
        blocks += text_blocks(body.get_text("\n"))
    h1 = next((b.text for b in blocks if b.level == 1), "")
    return page_title or h1 or fallback_title, pack(blocks)


def read_pdf(data: bytes, fallback_title: str, name: str = "the PDF") -> tuple[str, list[Chunk]]:
    """Page by page: each chunk says its page."""
    from pypdf import PdfReader
    from pypdf.errors import LimitReachedError

    try:
        reader = PdfReader(io.BytesIO(data))
        blocks: list[Block] = []
        chars = 0
        for number, page in enumerate(reader.pages, start=1):
            text = page.extract_text() or ""
            chars += len(text)
            check_size(chars, name)
            blocks += text_blocks(_tidy_pdf_text(text), page=number)
        title = ""
        if reader.metadata and reader.metadata.title:
            title = str(reader.metadata.title)
    except AstralyxError:  # ours (too much text): as it is
        raise
    except LimitReachedError as e:
        # pypdf stops a stream that unpacks past its limits (75 MB): a decompression bomb, or near enough.
        raise Invalid(
            f"This PDF cannot be read: it unpacks to more than can be read ({e}). Split it, or send its text",
            code="UNREADABLE_FILE",
        ) from None
    except Exception as e:  # a malformed file may fail anywhere in the parser: it is the file, not us
        log.info("unreadable PDF: %s: %s", type(e).__name__, e)
        raise Invalid(f"This PDF cannot be read ({e}): is it a valid, unencrypted PDF?", code="UNREADABLE_FILE") from None
    if not title and blocks:
        first = blocks[0].text.split("\n", 1)[0].strip()
        title = first if 0 < len(first) <= 120 else ""
    return _one_line(title) or fallback_title, pack(blocks)


def _tidy_pdf_text(text: str) -> str:
    # Words broken across lines with a hyphen come back whole.
    return re.sub(r"(\w)-\n(\w)", r"\1\2", text.replace("\r\n", "\n"))


def _one_line(text: str) -> str:
    return " ".join(text.split())
