"""Text extraction: Markdown, plain text, HTML (headings, source lines), PDF (pages); uploads."""

from __future__ import annotations

import pytest

from astralyx.errors import Invalid
from astralyx.metis.parsing import check_supported, parse_file, read_html, read_pdf


def make_pdf(pages: list[list[str]], title: str | None = None) -> bytes:
    """A small real PDF: one Helvetica text line per string, a page per list."""
    objects: list[bytes] = []
    kids = []
    n_pages = len(pages)
    # 1 catalog, 2 pages, 3 font, then (page, content) pairs, then info
    for i, lines in enumerate(pages):
        page_id, content_id = 4 + 2 * i, 5 + 2 * i
        kids.append(f"{page_id} 0 R")
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({escaped}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(
            f"{page_id} 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {content_id} 0 R >>\nendobj\n".encode()
        )
        objects.append(
            f"{content_id} 0 obj\n<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream\nendobj\n"
        )
    info_id = 4 + 2 * n_pages
    head = [
        b"1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n",
        f"2 0 obj\n<< /Type /Pages /Kids [{' '.join(kids)}] /Count {n_pages} >>\nendobj\n".encode(),
        b"3 0 obj\n<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>\nendobj\n",
    ]
    info = f"{info_id} 0 obj\n<< /Title ({title or ''}) >>\nendobj\n".encode()
    body = head + objects + [info]
    out = b"%PDF-1.4\n"
    offsets = []
    for obj in body:
        offsets.append(len(out))
        out += obj
    xref = len(out)
    out += f"xref\n0 {len(body) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    info_ref = f" /Info {info_id} 0 R" if title else ""
    out += f"trailer\n<< /Size {len(body) + 1} /Root 1 0 R{info_ref} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def test_pdf_chunks_say_their_page():
    data = make_pdf([["Travel policy", "Trains are booked in second class."], ["Hotels up to 150 euros a night."]])
    title, chunks = read_pdf(data, "travel")
    assert title == "Travel policy"
    assert [c.page for c in chunks] == [1, 2]
    assert "second class" in chunks[0].text
    assert chunks[1].where == "page 2"
    assert "150 euros" in chunks[1].text


def test_pdf_title_from_its_metadata():
    title, _ = read_pdf(make_pdf([["Some text here."]], title="Expenses"), "exp")
    assert title == "Expenses"


def test_a_broken_pdf_says_so():
    with pytest.raises(Invalid) as e:
        read_pdf(b"%PDF-1.4 this is not really a pdf", "bad")
    assert e.value.code == "UNREADABLE_FILE"


def test_html_headings_paragraphs_and_source_lines():
    html = """<html><head><title>Leave policy</title><style>p {color: red}</style></head>
<body>
<nav><a href="/">Home</a></nav>
<h1>Leave policy</h1>
<p>How leave works.</p>
<h2>Vacation</h2>
<p>Each person has <b>25 vacation days</b>
a year.</p>
<ul><li>Book in the HR tool.</li></ul>
<script>var secret = 1;</script>
</body></html>"""
    title, chunks = read_html(html, "leave")
    assert title == "Leave policy"
    vacation = next(c for c in chunks if "25 vacation days" in c.text)
    assert vacation.headings == ["Leave policy", "Vacation"]
    assert vacation.text.startswith("Each person has 25 vacation days a year.")
    assert "Book in the HR tool." in vacation.text
    assert vacation.where == "Leave policy › Vacation › line 7"
    assert not any("secret" in c.text or "Home" in c.text or "color" in c.text for c in chunks)


def test_html_without_markup_for_paragraphs():
    title, chunks = read_html("<div>Just some text\n\nin a div.</div>", "plain")
    assert title == "plain"
    assert "Just some text" in chunks[0].text


def test_parse_file_by_extension():
    md = parse_file("docs:hb/a.md", "a.md", b"# A\n\nalpha")
    assert (md.label, md.title, md.chunks[0].where) == ("docs:hb/a.md", "A", "A \u203a line 3")
    txt = parse_file("docs:hb/b.txt", "b.txt", "caf\u00e9 latte".encode())
    assert txt.chunks[0].text == "caf\u00e9 latte"
    latin = parse_file("docs:hb/c.txt", "c.txt", "caf\u00e9".encode("latin-1"))
    assert latin.chunks[0].text == "caf\u00e9"
    with pytest.raises(Invalid) as e:
        check_supported("photo.jpg")
    assert e.value.code == "UNSUPPORTED_FILE_TYPE"
