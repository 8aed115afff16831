"""Text extraction: Markdown, plain text, HTML (headings, source lines), PDF (pages); uploads."""

from __future__ import annotations

import pytest

from astralyx.errors import Invalid
from astralyx.metis.parsing import check_supported, parse_file, read_html, read_pdf

from .kit import make_pdf


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
