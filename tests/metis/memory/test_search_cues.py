"""What a question names moves passages up: the person it asks about (a fact's subject, a chat line's speaker),
the period it asks about (a fact said then, a passage dated then), and its question words weigh nothing."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from astralyx.metis import search as search_module
from astralyx.metis.cues import cues, dated_in, names_match, speaker
from astralyx.metis.memory.dates import named_dates
from astralyx.metis.search import Hit

from ..kit import make_base, owner
from .kit import fact, keep

SEARCH = "/v1/metis/knowledge-bases/{}/search"


def search(client, query, base="team"):
    r = client.post(SEARCH.format(base), json={"query": query})
    assert r.status_code == 200, r.text
    return [p["text"] for p in r.json()["results"]]


def hit(text, **attrs):
    return Hit(chunk_id=1, document="d", title="t", where="w", text=text, kind="notes", key="k", attrs=attrs)


def test_a_question_names_people_and_a_period_and_its_form_is_left_out_of_keywords():
    asked = cues("When did Mel go to the LGBTQ support group in May 2023?", today=date(2026, 12, 1))
    assert asked.names == ("mel",)  # not "When", not the acronym, not the month
    assert asked.period is not None and asked.period.said == "May 2023"
    assert asked.keyword_query == "Mel to the LGBTQ support group in May 2023"
    assert asked.topic_query == "to the LGBTQ support group in May 2023"  # a memory's keywords: the name is the subject's
    assert cues("What fields would Caroline's friend likely pursue?").keyword_query == "fields Caroline friend pursue"
    assert cues("What would she do?").keyword_query == "What would she do?"  # nothing but form: searched as it is
    assert cues("how are things").names == ()


def test_whom_a_passage_is_about_or_by():
    assert speaker(hit("anything", subject="Melanie")) == "Melanie"
    assert speaker(hit("Caroline (8 May 2023): I went to a support group.")) == "Caroline"
    assert speaker(hit("Ana Lima [10:02]: ready")) == "Ana Lima"
    assert speaker(hit("Summary: notes")) == "Summary"  # a transcript-like start is taken as one (harmless)
    assert speaker(hit("no speaker here: lower case")) is None
    assert names_match("Melanie", ("mel",)) and names_match("Ana Lima", ("lima",))
    assert not names_match("Alice", ("al",)) and not names_match("Melanie", ("caroline",)) and not names_match(None, ("mel",))


def test_dates_a_passage_writes_out_in_full():
    found = named_dates("Ana (8 May 2023): see you May 9, 2023, or in July 2022; 2023-06-01 too. Last year no.")
    assert [p.said for p in found] == ["8 May 2023", "May 9, 2023", "July 2022", "2023-06-01"]
    assert found[0].start == datetime(2023, 5, 8, tzinfo=UTC)


def test_a_fact_about_the_person_the_question_names_comes_first(client, team, monkeypatch):
    keep(
        client,
        fact("Bruno", "cooking", "Bruno cooks pasta with Ana every Friday, Ana's pasta recipe.", "2026-03-01"),
        fact("Ana", "cooking", "She cooks a fine risotto and sometimes pasta for friends at the weekend.", "2026-03-01"),
    )
    question = "What does Ana cook?"
    assert search(client, question)[0].startswith("She cooks")  # the subject named wins
    monkeypatch.setattr(search_module, "NAME_BONUS", 0.0)
    assert search(client, question)[0].startswith("Bruno")  # by its words alone, Bruno's fact


def test_a_fact_said_in_the_period_asked_about_comes_first(client, team, monkeypatch):
    keep(
        client,
        fact("Ana", "trip 1", "Ana went hiking.", "2026-01-10"),
        fact("Ana", "trip 2", "Ana went on a long hiking trip in the mountains with friends.", "2026-03-12"),
    )
    question = "Where did Ana go hiking in March 2026?"
    assert search(client, question)[0] == "Ana went on a long hiking trip in the mountains with friends."
    monkeypatch.setattr(search_module, "DATE_BONUS", 0.0)
    assert search(client, question)[0] == "Ana went hiking."  # shorter: BM25's first


def test_a_month_named_without_its_year_is_taken_in_the_year_a_passage_was_said():
    # "in June" asked in 2026 of a memory of 2023 chats: June 2023 is June too (a bonus, never a filter).
    asked = cues("What did Ana do in June?", today=date(2026, 12, 1)).period
    assert asked is not None and asked.yearless and asked.start == datetime(2026, 6, 1, tzinfo=UTC)
    assert dated_in(hit("x", said_at="2023-06-14"), asked) and dated_in(hit("Ana (20 June 2021): hi"), asked)
    assert dated_in(hit("x", said_at="2023-07-05"), asked)  # said a few days after: it tells of June
    assert not dated_in(hit("x", said_at="2023-03-14"), asked) and not dated_in(hit("Ana (8 May 2023): hi"), asked)
    # With its year, only that year; "on 8 May" without one, any year's 8 May.
    dated = cues("What did Ana do in June 2026?", today=date(2026, 12, 1)).period
    assert dated is not None and not dated.yearless and not dated_in(hit("x", said_at="2023-06-14"), dated)
    day = cues("What did Ana say on 8 May?", today=date(2026, 12, 1)).period
    assert day is not None and day.yearless and dated_in(hit("x", said_at="2023-05-08"), day)


def test_saved_chat_lines_by_the_speaker_asked_about_come_first(core, client, monkeypatch):
    make_base(core, "chat")
    lines = {
        "bruno.md": "Bruno (2 January 2026): Ana, the garden! The garden, Ana!",
        "ana.md": "Ana (3 March 2026): I put tomatoes and basil in my garden this spring.",
    }
    for path, text in lines.items():
        core.notes.write(owner(), "chat", "notes", path, text)
    question = "What did Ana say about the garden?"
    assert search(client, question, "chat")[0] == lines["ana.md"]  # Ana's own line
    monkeypatch.setattr(search_module, "NAME_BONUS", 0.0)
    assert search(client, question, "chat")[0] == lines["bruno.md"]  # by its words alone, Bruno's


def test_question_words_do_not_outrank_the_topic(core, client):
    make_base(core, "words")
    core.notes.write(owner(), "words", "notes", "a.md", "Sailing is what Ana enjoys most in the summer, on the lake.")
    core.notes.write(owner(), "words", "notes", "b.md", "It would likely rain, would it not? Likely, they said.")
    assert search(client, "What would Ana likely enjoy?", "words")[0].startswith("Sailing")


@pytest.mark.parametrize("query", ["What does Ana cook?", "anything at all"])
def test_cues_keep_the_answer_shape(client, team, query):
    keep(client, fact("Ana", "cooking", "Ana cooks risotto.", "2026-03-01"))
    r = client.post(SEARCH.format("team"), json={"query": query, "max_results": 1})
    assert r.status_code == 200
    assert len(r.json()["results"]) <= 1


def test_a_memory_searches_the_topic_by_keywords_not_the_name_every_fact_holds(client, team, core):
    keep(
        client,
        fact("Ana", "pastime", "Her hobby is pottery.", "2026-03-01"),
        fact("Ana", "city", "Ana lives in Lisbon.", "2026-03-01"),
        fact("Ana", "pet", "Ana has a cat named Miso.", "2026-03-01"),
    )
    base = core.bases.find("default", "team")
    _, hits = core.search.hits(base, "What is Ana's hobby?", mode="keywords")
    assert [h.text for h in hits] == ["Her hobby is pottery."]  # not every fact that says "Ana"
    assert search(client, "What does Ana do?") != []  # nothing but a name: searched by the name
