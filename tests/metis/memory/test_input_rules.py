"""What a fact may hold: no control characters; dates in the documented forms only."""

from __future__ import annotations

import pytest

from astralyx.errors import Invalid
from astralyx.metis.memory.extract import conversation
from astralyx.metis.memory.facts import DATE_FORMS, normalize_said_at

URL = "/v1/metis/knowledge-bases/team/memory"


@pytest.fixture
def memory(client, team):
    return client


def keep(client, **fields):
    fact = {"subject": "Ana", "attribute": "team", "fact": "Ana leads the data team.", "source": "chat", **fields}
    return client.post(URL, json={"facts": [fact]})


def refused(response, code="INVALID_FACT"):
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == code, response.text
    return response.json()["error"]["message"]


@pytest.mark.parametrize("field", ["subject", "attribute", "fact", "source"])
@pytest.mark.parametrize("char", ["\x00", "\x1b", "\x7f", "\x9b", "\u202e"])
def test_control_characters_are_refused_in_every_field(memory, field, char):
    value = {"subject": "Ana", "attribute": "team", "fact": "Ana leads the data team.", "source": "chat"}[field]
    message = refused(keep(memory, **{field: value[:3] + char + value[3:]}))
    assert field in message and f"U+{ord(char):04X}" in message
    assert memory.get(URL).json()["subjects"] == []


def test_tabs_and_line_breaks_become_one_space(memory):
    kept = keep(memory, fact="Ana leads\n\tthe data\r\nteam.", source="chat:\tstandup")
    assert kept.status_code == 200, kept.text
    assert kept.json()["facts"][0]["fact"] == "Ana leads the data team."
    assert kept.json()["facts"][0]["source"] == "chat: standup"


def test_a_correction_with_a_control_character_is_refused(memory):
    fact_id = keep(memory).json()["facts"][0]["id"]
    message = refused(memory.put(f"{URL}/{fact_id}", json={"fact": "Ana leads\x00 research."}))
    assert "U+0000" in message
    refused(memory.put(f"{URL}/{fact_id}", json={"source": "chat\x1b"}))
    assert memory.get(f"{URL}/{fact_id}").json()["fact"] == "Ana leads the data team."


@pytest.mark.parametrize(
    "said_at,stored",
    [
        ("2026-10-12", "2026-10-12"),
        ("2026-10-12T10:05:00Z", "2026-10-12T10:05:00Z"),
        ("2026-10-12t10:05:00z", "2026-10-12T10:05:00Z"),
        ("2026-10-12T10:05Z", "2026-10-12T10:05:00Z"),
        ("2026-10-12 10:05:00", "2026-10-12T10:05:00Z"),
        ("2026-10-12T12:05:00+02:00", "2026-10-12T10:05:00Z"),
        ("2026-10-12T10:05:00.250Z", "2026-10-12T10:05:00Z"),
    ],
)
def test_the_documented_date_forms_are_taken(said_at, stored):
    assert normalize_said_at(said_at) == stored


@pytest.mark.parametrize(
    "said_at", ["2026-W01", "2026-W01-1", "20260101", "20260101T100500Z", "2026-001", "2026-10-12T1005", "12/10/2026",
                "2026-10-12T10:05:00+0200", "2026-1-2", "2026-02-30", "yesterday"],
)
def test_other_date_forms_are_refused_naming_the_ones_taken(memory, said_at):
    # One code for a bad date, wherever it is given.
    message = refused(keep(memory, said_at=said_at), "INVALID_DATE")
    assert DATE_FORMS in message
    assert DATE_FORMS in refused(memory.get(URL, params={"as_of": said_at}), "INVALID_DATE")
    searched = memory.post("/v1/metis/knowledge-bases/team/search", json={"query": "Ana", "as_of": said_at})
    assert DATE_FORMS in refused(searched, "INVALID_DATE")
    with pytest.raises(Invalid) as e:
        conversation([{"role": "user", "content": "Hi", "date": said_at}])
    assert e.value.code == "INVALID_DATE" and "messages[0].date" in e.value.message


def test_a_conversation_date_at_the_end_of_time_is_refused_not_a_crash():
    with pytest.raises(Invalid) as e:
        conversation([{"role": "user", "content": "Hi"}], said_at="9999-12-31T23:30:00-01:00")
    assert e.value.code == "INVALID_DATE" and "between the years 1 and 9999" in e.value.message
