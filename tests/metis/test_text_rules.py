"""What counts as text: a binary named .md is refused, a huge one has a clear limit, chunking stays linear."""

from __future__ import annotations

import codecs
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astralyx.metis.chunking import atx_heading, markdown_blocks, pack, split_text
from astralyx.metis.parsing import MAX_TEXT_CHARS, parse_file

URL = "/v1/metis/knowledge-bases/docs/files"


@pytest.fixture
def docs(client):
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "docs"}}).status_code == 201
    return client


def upload(client, name: str, data: bytes):
    return client.post(URL, files={"file": (name, data)})


@pytest.mark.parametrize("name", ["random.md", "random.txt", "random.html", "random.log"])
def test_random_bytes_named_as_text_are_refused(docs, name):
    answer = upload(docs, name, os.urandom(20_000))
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["code"] == "UNREADABLE_FILE"
    assert "not a text file" in answer.json()["error"]["message"]
    assert docs.get(URL).json()["files"] == []


def test_text_with_a_nul_byte_is_refused(docs):
    answer = upload(docs, "notes.md", b"# Notes\n\nAll fine until here\x00 and then a NUL.\n")
    assert answer.json()["error"]["code"] == "UNREADABLE_FILE"


@pytest.mark.parametrize(
    "data,expect",
    [
        ("# Café\n\nNaïve résumé, déjà vu.\n".encode(), "Naïve résumé"),
        (codecs.BOM_UTF8 + "# Café\n\nUTF-8 with a BOM.\n".encode(), "UTF-8 with a BOM"),
        (codecs.BOM_UTF16_LE + "# Café\n\nSaved as Unicode by Notepad.\n".encode("utf-16-le"), "Saved as Unicode"),
        ("# Quotes\n\n\u201cCurly\u201d quotes from Word \u2013 in Windows-1252.\n".encode("cp1252"), "\u201cCurly\u201d"),
        (b"\x1b[32mINFO\x1b[0m server started on port 8000 after loading every base\n" * 50, "server started"),
        (b"# Form feed\n\npage one\n\x0cpage two\n", "page two"),
    ],
)
def test_text_in_its_usual_encodings_is_read(docs, data, expect):
    answer = upload(docs, "doc.md", data)
    assert answer.status_code == 201, answer.text
    found = docs.post("/v1/metis/knowledge-bases/docs/search", json={"query": expect.strip("\u201c\u201d")}).json()
    assert any(expect in r["text"] for r in found["results"]), found


def test_a_text_past_the_limit_is_refused_with_a_clear_code(docs):
    line = b"word " * (MAX_TEXT_CHARS // 5 + 1)  # one line of about 10 MB
    answer = upload(docs, "huge.md", line)
    assert answer.status_code == 413, answer.text[:300]
    error = answer.json()["error"]
    assert error["code"] == "FILE_TOO_LARGE" and f"{MAX_TEXT_CHARS:,}" in error["message"]
    assert docs.get(URL).json()["files"] == []


def test_a_long_single_line_is_cut_into_passages_that_cover_it():
    text = ("lorem ipsum dolor sit amet " * 120_000).strip()  # 3.2 MB on one line
    chunks = parse_file("docs:x/big.md", "big.md", text.encode()).chunks
    assert len(chunks) > 4_000 and all(len(c.text) <= 700 for c in chunks)
    assert {c.line for c in chunks} == {1}
    assert sum(len(c.text.split()) for c in chunks) == len(text.split())


def test_a_long_heading_of_spaces_is_read_at_once():
    # Once a backtracking regex: minutes for this line. Now one pass.
    blocks = markdown_blocks("# a" + " " * 200_000 + "b\n\ntext")
    assert blocks[0].level == 1 and blocks[0].text.startswith("a") and blocks[0].text.endswith("b")


# The heading regex there was: what atx_heading must still answer, for any line. One exception,
# where CommonMark agrees with the new reading: `# #` and `### ###` are empty headings (the regex
# took the closing `#`s for the title).
_OLD_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="# \tab", max_size=24))
def test_atx_heading_reads_every_line_as_the_old_rule_did(line):
    old = _OLD_ATX.match(line)
    expected = None
    if old:
        only_closing = not line[old.end(1) :].strip(" \t").strip("#")
        expected = (len(old.group(1)), "" if only_closing else (old.group(2) or "").strip())
    assert atx_heading(line) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["word", "end.", "\n", " ", "x" * 30, "\n\n"]), max_size=400))
def test_each_piece_of_a_long_paragraph_starts_on_its_own_line(parts):
    from astralyx.metis.chunking import Block

    text = "".join(parts).strip()
    if not text:
        return
    chunks = pack([Block(text, line=10)], max_chars=60)
    if len(text) <= 60:
        return
    pieces = split_text(text, 60)
    assert [c.line for c in chunks] == [10 + text.count("\n", 0, offset) for _, offset in pieces]
