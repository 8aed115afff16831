"""Note paths as Unicode compares them, and note text without control characters."""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from astralyx.errors import BadRequest
from astralyx.metis.notes import check_path
from astralyx.metis.parsing import MAX_TEXT_CHARS
from astralyx.util import quoted

from .conftest import ADMIN_TOKEN

URL = "/v1/metis/knowledge-bases/handbook/notes"


@pytest.fixture
def base(client):
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}}).status_code == 201
    return client


@pytest.mark.parametrize(
    "path",
    [
        "\uff0e\uff0e/x.md",  # full-width dots
        "\u2025/x.md",  # two dot leader
        "a/\uff0e\uff0e/b.md",
        "\uff0e\uff0e\uff0fx.md",  # full-width dots and slash: ../x.md to NFKC
        "\uff0fetc/x.md",  # full-width slash first: an absolute path to NFKC
        "\uff0ehidden.md",  # a full-width dot first: a hidden name
        "a\uff3cb.md",  # full-width backslash
        "\u3000x.md",  # ideographic space first
        "x\u202egpj.md",  # right-to-left override
        "x\u200b.md",  # zero-width space
        "x\u2028y.md",  # line separator
    ],
)
def test_look_alike_and_invisible_names_are_refused(base, path):
    answer = base.put(f"{URL}/{path}", json={"content": "x"})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "BAD_PATH"
    assert base.get(URL).json()["notes"] == []


@pytest.mark.parametrize(
    "path", ["caf\u00e9.md", "cafe\u0301.md", "\u5e73\u6210/\u30e1\u30e2.md", "\uff41\uff42.md", "a\uff0fb.md"]
)
def test_names_in_any_script_are_kept_as_written(base, path):
    answer = base.put(f"{URL}/{path}", json={"content": "Notes."})
    assert answer.status_code == 201, answer.text
    assert answer.json()["path"] == path
    assert base.get(f"{URL}/{path}").json()["content"] == "Notes."


def test_a_note_is_text_tabs_and_line_breaks_allowed(base):
    kept = base.put(f"{URL}/ok.md", json={"content": "# Title\n\n\tindented\r\nline two\n"})
    assert kept.status_code == 201, kept.text
    for bad in ("NUL \x00 here", "escape \x1b[31m red", "bell \x07", "delete \x7f"):
        answer = base.put(f"{URL}/bad.md", json={"content": bad})
        assert answer.status_code == 400 and answer.json()["error"]["code"] == "INVALID_NOTE", answer.text
        assert "control character" in answer.json()["error"]["message"]
    markdown = base.put(f"{URL}/bad.md", content=b"# T\n\nNUL\x00\n", headers={"content-type": "text/markdown"})
    assert markdown.json()["error"]["code"] == "INVALID_NOTE"
    assert [n["path"] for n in base.get(URL).json()["notes"]] == ["ok.md"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(codec="utf-8"), max_size=6), min_size=1, max_size=4))
def test_an_accepted_path_has_no_dot_segment_even_to_nfkc(segments):
    path = "/".join(segments) + ".md"
    try:
        accepted = check_path(path)
    except BadRequest as e:
        assert e.code == "BAD_PATH"
        return
    assert accepted == path
    for part in unicodedata.normalize("NFKC", path).split("/"):
        assert part not in ("", ".", "..") and not part.startswith(".")
    assert not any(unicodedata.category(c) in ("Cc", "Cf") for c in path)


def test_the_console_links_to_a_note_whose_name_has_url_characters(base, app):
    path = "plans/q&a #1 50%.md"
    assert base.put(f"{URL}/{quoted(path, slashes=True)}", json={"content": "Questions and answers."}).status_code == 201
    console = TestClient(app, base_url="http://127.0.0.1", follow_redirects=False)
    console.cookies.set("astralyx_key", ADMIN_TOKEN)
    page = console.get("/metis/knowledge-bases/handbook").text
    links = re.findall(r'href="(/metis/knowledge-bases/handbook/notes/[^"]+)"', page)
    assert links == ["/metis/knowledge-bases/handbook/notes/plans/q%26a%20%231%2050%25.md"]
    note = console.get(links[0])
    assert note.status_code == 200 and "Questions and answers." in note.text


def test_a_note_longer_than_a_document_may_be_is_refused(base):
    body = b"x" * (MAX_TEXT_CHARS + 1)
    answer = base.put(f"{URL}/huge.md", content=body, headers={"content-type": "text/markdown"})
    assert answer.status_code == 413 and answer.json()["error"]["code"] == "NOTE_TOO_LARGE", answer.text[:300]
    assert base.get(URL).json()["notes"] == []
