"""Inputs that once gave 500: each gets a 4xx with a stable code, and no 500 leaves without the error shape."""

from __future__ import annotations

import http.client
import io
import json
import struct
import zlib
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from astralyx.errors import BadRequest
from astralyx.server.body import MAX_DEPTH, parse_json

from .conftest import ADMIN_TOKEN
from .docs_helpers import served
from .kit import error

BOMB = b"[" * 100_000
JSON = {"content-type": "application/json"}


@pytest.fixture
def bases(client):
    for body in ({"metadata": {"name": "team"}, "spec": {"kind": "memory"}}, {"metadata": {"name": "docs"}}):
        assert client.post("/v1/metis/knowledge-bases", json=body).status_code == 201
    return client


def keep(client, said_at):
    fact = {"subject": "Ana", "attribute": "team", "fact": "Ana leads the data team.", "said_at": said_at}
    return client.post("/v1/metis/knowledge-bases/team/memory", json={"facts": [fact]})




@pytest.mark.parametrize("said_at", ["0001-01-01T00:30:00+01:00", "9999-12-31T23:30:00-01:00"])
def test_said_at_past_the_ends_of_time_is_refused(bases, said_at):
    assert "between the years 1 and 9999" in error(keep(bases, said_at), 422, "INVALID_DATE")
    assert bases.get("/v1/metis/knowledge-bases/team/memory").json()["subjects"] == []


@pytest.mark.parametrize("said_at", ["0001-01-01", "0001-01-01T00:30:00-01:00", "9999-12-31T23:59:59Z"])
def test_said_at_at_the_ends_of_time_is_kept(bases, said_at):
    answer = keep(bases, said_at)
    assert answer.status_code == 200, answer.text
    assert answer.json()["facts"][0]["change"] == "new"


def test_as_of_at_the_ends_of_time(bases):
    assert keep(bases, "2026-10-12").status_code == 200
    listed = bases.get("/v1/metis/knowledge-bases/team/memory", params={"as_of": "9999-12-31"})
    assert listed.status_code == 200, listed.text
    assert [f["fact"] for s in listed.json()["subjects"] for f in s["facts"]] == ["Ana leads the data team."]
    found = bases.post("/v1/metis/knowledge-bases/team/search", json={"query": "data team", "as_of": "9999-12-31"})
    assert found.status_code == 200, found.text
    assert len(found.json()["results"]) == 1
    before = bases.get("/v1/metis/knowledge-bases/team/memory", params={"as_of": "0001-01-01"})
    assert before.status_code == 200 and before.json()["subjects"] == []
    edge = "0001-01-01T00:00:00+01:00"
    error(bases.get("/v1/metis/knowledge-bases/team/memory", params={"as_of": edge}), 422, "INVALID_DATE")
    searched = bases.post("/v1/metis/knowledge-bases/team/search", json={"query": "data team", "as_of": edge})
    error(searched, 422, "INVALID_DATE")


@pytest.mark.parametrize(
    "method,url",
    [
        ("PUT", "/v1/metis/knowledge-bases/docs/notes/deep.md"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/metis/knowledge-bases/team/memory"),
        ("POST", "/v1/metis/knowledge-bases"),
        ("POST", "/v1/eos/receipts/verify"),
    ],
)
def test_a_body_nested_too_deep_is_invalid_json_on_every_route(bases, method, url):
    message = error(bases.request(method, url, content=BOMB, headers=JSON), 400, "INVALID_JSON")
    assert f"more than {MAX_DEPTH} deep" in message
    # Not too deep for the parser, still too deep for us: refused the same way.
    moderate = ("[" * 900 + "]" * 900).encode()
    error(bases.request(method, url, content=moderate, headers=JSON), 400, "INVALID_JSON")


def test_broken_json_is_invalid_json_on_every_route(bases):
    for method, url in [("PUT", "/v1/metis/knowledge-bases/docs/notes/a.md"), ("POST", "/v1/metis/knowledge-bases")]:
        message = error(bases.request(method, url, content=b'{"content": ', headers=JSON), 400, "INVALID_JSON")
        assert message.startswith("The body is not valid JSON")
    assert not bases.get("/v1/metis/knowledge-bases/docs/notes").json()["notes"]


def test_a_body_as_deep_as_allowed_is_read(bases):
    metadata: dict = {"title": "Deep"}
    for _ in range(MAX_DEPTH - 2):  # the body {"metadata": {... }} adds two levels
        metadata = {"inner": metadata}
    written = bases.put("/v1/metis/knowledge-bases/docs/notes/deep.md", json={"metadata": metadata, "content": "x"})
    assert written.status_code == 201, written.text


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), st.text(alphabet="[]{}\",:0 \\tru", max_size=200)))
def test_any_body_parses_or_is_invalid_json(raw):
    try:
        parse_json(raw)
    except BadRequest as e:
        assert e.code == "INVALID_JSON" and e.status == 400


def pdf_bomb(unpacked: int = 80_000_000) -> bytes:
    """A 80 KB PDF whose page tree sits in an object stream that unpacks to 80 MB of spaces."""
    head, pages = b"2 0\n", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"
    packed = zlib.compress(head + pages + b" " * unpacked, 9)
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        4: b"<< /Length 13 >>\nstream\nBT (x) Tj ET\nendstream",
        5: b"<< /Type /ObjStm /N 1 /First %d /Length %d /Filter /FlateDecode >>\nstream\n" % (len(head), len(packed))
        + packed
        + b"\nendstream",
    }
    out = io.BytesIO(b"%PDF-1.5\n")
    out.seek(0, io.SEEK_END)
    offsets = {}
    for number, body in objects.items():
        offsets[number] = out.tell()
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    offsets[6] = out.tell()
    rows = [struct.pack(">BIH", 0, 0, 65535), struct.pack(">BIH", 1, offsets[1], 0), struct.pack(">BIH", 2, 5, 0)]
    xref = b"".join(rows + [struct.pack(">BIH", 1, offsets[n], 0) for n in (3, 4, 5, 6)])
    out.write(b"6 0 obj\n<< /Type /XRef /Size 7 /W [1 4 2] /Root 1 0 R /Length %d >>\nstream\n" % len(xref))
    out.write(xref + b"\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n" % offsets[6])
    return out.getvalue()


def test_a_pdf_decompression_bomb_is_unreadable(bases):
    bomb = pdf_bomb()
    assert len(bomb) < 200_000
    answer = bases.post("/v1/metis/knowledge-bases/docs/files", files={"file": ("report.pdf", bomb, "application/pdf")})
    assert "unpacks to more than can be read" in error(answer, 422, "UNREADABLE_FILE")
    assert bases.get("/v1/metis/knowledge-bases/docs/files").json()["files"] == []


def test_an_unexpected_failure_answers_500_in_the_error_shape(bases, core):
    # A folder where the note's file belongs: the write fails in the operating system, not in a rule.
    (core.bases.find("default", "docs").folder / "notes/blocked.md").mkdir(parents=True)
    answer = bases.put("/v1/metis/knowledge-bases/docs/notes/blocked.md", json={"content": "x"})
    assert answer.status_code == 500
    assert answer.json() == {"error": {"code": "INTERNAL", "message": "Something went wrong on the server; its log says what"}}


def test_bad_inputs_and_failures_keep_the_connection(bases, core):
    """Over a real socket: every answer comes back on one keep-alive connection, the 500 included."""
    (core.bases.find("default", "docs").folder / "notes/blocked.md").mkdir(parents=True)
    fact = {"facts": [{"subject": "A", "attribute": "b", "fact": "A is b.", "said_at": "0001-01-01T00:30:00+01:00"}]}
    requests = [
        ("PUT", "/v1/metis/knowledge-bases/docs/notes/blocked.md", json.dumps({"content": "x"}).encode(), 500),
        ("PUT", "/v1/metis/knowledge-bases/docs/notes/deep.md", BOMB, 400),
        ("POST", "/v1/chat/completions", BOMB, 400),
        ("POST", "/v1/metis/knowledge-bases/team/memory", json.dumps(fact).encode(), 422),
        ("GET", "/v1/metis/knowledge-bases/team/memory?as_of=9999-12-31", b"", 200),
        ("GET", "/v1/metis/knowledge-bases/docs/notes", b"", 200),
    ]
    with served(core) as api:
        url = urlsplit(api)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", **JSON}
        conn.request("GET", "/v1/metis/knowledge-bases", headers=headers)
        conn.getresponse().read()
        sock = conn.sock
        for method, path, body, status in requests:
            conn.request(method, path, body=body or None, headers=headers)
            response = conn.getresponse()
            data = json.loads(response.read())
            assert response.status == status, data
            assert status < 400 or set(data) == {"error"}
            assert conn.sock is sock and response.getheader("connection") != "close", f"{method} {path} closed it"
        conn.close()
