"""GET …/memory?subject=…&attribute=…: the API lists what MCP's recall answers, filtered in the domain (Memory.list)."""

from __future__ import annotations

URL = "/v1/metis/knowledge-bases/team/memory"
FACTS = [
    {"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team.", "source": "standup", "said_at": "2026-09-01"},
    {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "source": "standup", "said_at": "2026-10-12"},
    {"subject": "Ana", "attribute": "city", "fact": "Ana lives in Porto.", "source": "standup", "said_at": "2026-10-12"},
    {"subject": "Bruno", "attribute": "city", "fact": "Bruno lives in Recife.", "source": "standup", "said_at": "2026-10-12"},
]


def _facts(answer: dict) -> list[str]:
    return [f["fact"] for group in answer["subjects"] for f in group["facts"]]


def test_the_listing_takes_a_subject_and_an_attribute(client):
    r = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "team"}, "spec": {"kind": "memory"}})
    assert r.status_code == 201, r.text
    assert client.post(URL, json={"facts": FACTS}).json()["kept"] == 4

    everything = client.get(URL).json()
    assert everything["count"] == 3 and "subject" not in everything and "attribute" not in everything

    ana = client.get(URL, params={"subject": "  ana "}).json()  # matched as facts are: no case, no extra spaces
    assert _facts(ana) == ["Ana lives in Porto.", "Ana works in research."]
    assert ana["count"] == 2 and ana["subject"] == "  ana " and [g["subject"] for g in ana["subjects"]] == ["Ana"]

    cities = client.get(URL, params={"attribute": "City"}).json()
    assert _facts(cities) == ["Ana lives in Porto.", "Bruno lives in Recife."] and cities["attribute"] == "City"

    role = client.get(URL, params={"subject": "Ana", "attribute": "role", "history": "true"}).json()
    assert _facts(role) == ["Ana works in research."] and role["count"] == 1 and role["history_count"] == 1
    assert [f["fact"] for f in role["subjects"][0]["facts"][0]["replaced"]] == ["Ana leads the data team."]

    then = client.get(URL, params={"subject": "Ana", "attribute": "role", "as_of": "2026-09-30"}).json()
    assert _facts(then) == ["Ana leads the data team."] and then["as_of"] == "2026-09-30"

    nobody = client.get(URL, params={"subject": "Zoe"}).json()
    assert nobody["subjects"] == [] and nobody["count"] == 0 and nobody["subject"] == "Zoe"
