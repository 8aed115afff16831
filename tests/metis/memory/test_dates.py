"""A date in a question to a memory weighs like as_of: the fact that held then comes first."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from astralyx.metis.memory.dates import asked_period

from .kit import fact, keep

pytestmark = pytest.mark.engines  # indexes on SQLite and on PostgreSQL

SEARCH = "/v1/metis/knowledge-bases/team/search"
TODAY = date(2026, 12, 4)


def search(client, query, **extra):
    r = client.post(SEARCH, json={"query": query, **extra})
    assert r.status_code == 200, r.text
    return [(r["text"], r["where"]) for r in r.json()["results"]]


def ana_changed_role(client):
    keep(client, fact("Ana", "role", "Ana leads the data team.", "2026-03-01"))
    keep(client, fact("Ana", "role", "Ana works in research.", "2026-10-12"))
    keep(client, fact("Bruno", "city", "Bruno lives in Recife.", "2026-02-01"))


DATA_TEAM = ("Ana leads the data team.", "Ana › role › held 2026-03-01 – 2026-10-12")
RESEARCH = ("Ana works in research.", "Ana › role › current since 2026-10-12")


def test_a_month_in_the_question_puts_what_held_then_first(client, team):
    ana_changed_role(client)
    assert search(client, "What was Ana's role in April 2026?")[:2] == [DATA_TEAM, RESEARCH]
    assert search(client, "What was Ana's role on 15 April 2026?")[:2] == [DATA_TEAM, RESEARCH]
    assert search(client, "Ana's role in November 2026")[:2] == [RESEARCH, DATA_TEAM]


def test_without_a_date_the_current_fact_comes_first(client, team):
    ana_changed_role(client)
    assert search(client, "What is Ana's role?")[:2] == [RESEARCH, DATA_TEAM]
    assert search(client, "What was Ana's role?")[:2] == [RESEARCH, DATA_TEAM]
    # a date when none of them held: nothing moves ahead
    assert search(client, "What was Ana's role in 2024?")[:2] == [RESEARCH, DATA_TEAM]


def test_as_of_still_keeps_only_what_held_then(client, team):
    ana_changed_role(client)
    held = search(client, "Ana's role in November 2026", as_of="2026-04-10")
    assert [r for r in held if r[0].startswith("Ana")] == [DATA_TEAM]


def test_the_dates_a_question_names():
    def period(query):
        p = asked_period(query, TODAY)
        return None if p is None else (p.start.date().isoformat(), p.end.date().isoformat())

    assert period("What was Ana's role in April 2026?") == ("2026-04-01", "2026-05-01")
    assert period("what was Ana's role in September?") == ("2026-09-01", "2026-10-01")  # the latest September
    assert period("role in December") == ("2026-12-01", "2027-01-01")
    assert period("in Jan. 2026") == ("2026-01-01", "2026-02-01")
    assert period("on 2026-04-15") == period("April 15, 2026") == period("15th of April 2026") == ("2026-04-15", "2026-04-16")
    assert period("Ana's team last year") == period("in 2025") == ("2025-01-01", "2026-01-01")
    assert period("last month") == ("2026-11-01", "2026-12-01")
    assert period("3 months ago") == ("2026-09-01", "2026-10-01")
    for none in ("What is Ana's role?", "may I ask where Bruno lives", "release 2.30 notes", "2026-02-30"):
        assert period(none) is None, none
    assert asked_period("in April 2026").start == datetime(2026, 4, 1, tzinfo=UTC)  # today: the clock's
