"""A bad date is INVALID_DATE wherever it is given: a fact's said_at, an Edit's, as_of of a listing or a
search (a conversation's date: tests/metis/extract); over HTTP and in the CLI (--said, --as-of). The message names the field."""

from __future__ import annotations

import pytest

from astralyx.metis.memory.facts import DATE_FORMS

URL = "/v1/metis/knowledge-bases/team/memory"
BAD = "2026-13-01"


def refused(response, field: str) -> str:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "INVALID_DATE", response.text
    assert error["message"].startswith(f"{field} {BAD!r} is not a date") and DATE_FORMS in error["message"], error
    return error["message"]


@pytest.fixture
def kept(client, team) -> str:
    r = client.post(URL, json={"facts": [{"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team."}]})
    assert r.status_code == 200, r.text
    return r.json()["facts"][0]["id"]


def test_over_http(client, kept):
    fact = {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "said_at": BAD}
    refused(client.post(URL, json={"facts": [fact]}), "said_at")
    refused(client.put(f"{URL}/{kept}", json={"said_at": BAD}), "said_at")
    refused(client.get(URL, params={"as_of": BAD}), "as_of")
    refused(client.post("/v1/metis/knowledge-bases/team/search", json={"query": "Ana", "as_of": BAD}), "as_of")
    # Nothing was kept or changed.
    listed = client.get(URL).json()["subjects"]
    assert [f["fact"] for g in listed for f in g["facts"]] == ["Ana leads the data team."]


def test_in_the_cli(astra, kept):
    runs = [
        ("said_at", ("metis", "remember", "team", "--subject", "Ana", "--attribute", "role", "--fact", "x.", "--said", BAD)),
        ("said_at", ("metis", "edit", "team", kept, "--said", BAD)),
        ("as_of", ("metis", "memory", "team", "--as-of", BAD)),
        ("as_of", ("metis", "search", "team", "Ana", "--as-of", BAD)),
    ]
    for field, args in runs:
        result = astra(*args, ok=False)
        assert result.exit_code == 1, result.output
        assert f"{field} {BAD!r} is not a date" in result.output and "(INVALID_DATE)" in result.output, result.output
