"""The current facts found about one person said on one day are one passage of the answer (metis/context.py):
a question that needs two of them gets both, not only the first eight facts of the ranking."""

from __future__ import annotations

from astralyx.metis.context import grouped
from astralyx.metis.search import BUDGET_CHARS, Hit

from .kit import fact, keep

SEARCH = "/v1/metis/knowledge-bases/{}/search"


def answer(client, query, max_results=8):
    r = client.post(SEARCH.format("team"), json={"query": query, "max_results": max_results})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def test_facts_said_together_are_one_passage(client, team):
    kept = keep(
        client,
        fact("Ana", "hobby", "Ana signed up for a pottery class.", "2026-05-08"),
        fact("Ana", "race", "Ana ran a charity race for mental health.", "2026-05-08"),
        fact("Ana", "trip", "Ana went to a pottery fair in Lisbon.", "2026-06-20"),
        fact("Bruno", "race", "Bruno watched the charity race.", "2026-05-08"),
    )
    # max_results 2: without the rule, the third fact found (the other of 8 May) would not be in the answer
    results = answer(client, "pottery class charity race", max_results=2)
    texts = [r["text"] for r in results]
    assert len(results) == 2
    assert "Ana signed up for a pottery class." in texts[0] and "Ana ran a charity race for mental health." in texts[0]
    assert texts[0].count("\n") == 1  # Ana's two facts of 8 May: one passage, a line each
    assert "Bruno" not in texts[0] and "Lisbon" not in texts[0]  # another person, another day: passages of their own
    assert results[0]["document"].startswith("memory:team/")  # cited by its best fact
    # ... and each other line by its own: a citation can be followed to the fact that says it
    first_two = {f"memory:team/{f['id']}" for f in kept["facts"][:2]}
    assert {results[0]["document"], *results[0]["with_documents"]} == first_two
    assert "with_documents" not in results[1]  # a passage of one fact says nothing more


def test_a_fact_of_the_history_is_shown_on_its_own(client, team):
    keep(client, fact("Ana", "role", "Ana leads the data team.", "2026-05-08"),
         fact("Ana", "hobby", "Ana plays chess with the data team.", "2026-05-08"))
    keep(client, fact("Ana", "role", "Ana works in research, no longer the data team.", "2026-09-01"))
    texts = [r["text"] for r in answer(client, "data team")]
    history = "Ana leads the data team."
    assert history in texts and "\n" not in texts[texts.index(history)]  # never grouped: the history stays where it is
    assert all(t.count("Ana plays chess") <= 1 for t in texts)
    current = next(i for i, t in enumerate(texts) if "Ana works in research" in t)
    assert current < texts.index(history)  # current facts before their history, as always


def fact_hit(n: int, text: str, day: str, subject: str = "Ana", status: str = "current") -> Hit:
    return Hit(chunk_id=n, document=f"memory:team/f{n}", title="t", where="w", text=text, kind="memory", key=f"k{n}",
               attrs={"subject": subject, "said_at": day, "status": status})


def test_groups_stay_within_the_budget_and_the_first_places():
    hits = [
        fact_hit(1, "a" * 50, "2026-05-08"),
        fact_hit(2, "b" * 50, "2026-05-09"),
        fact_hit(3, "c" * 50, "2026-05-08"),  # joins 1
        fact_hit(4, "d" * 50, "2026-05-10"),  # third place: not answered with limit 2, no group of its own
        fact_hit(5, "e" * 50, "2026-05-10"),
        fact_hit(6, "f" * 50, "2026-05-09", subject="Bruno"),
    ]
    out = grouped(hits, 2, 200)
    assert out[0].text == "a" * 50 + "\n" + "c" * 50 and out[1].text == "b" * 50
    assert [h.chunk_id for h in out] == [1, 2, 4, 5, 6]  # the ones not answered keep their order
    tight = grouped(hits, 2, 120)  # no room for a third fact: 3 is left for a later place, not cut
    assert tight[0].text == "a" * 50 and [h.chunk_id for h in tight][:3] == [1, 2, 3]
    assert grouped(hits, 8, BUDGET_CHARS)[0].text.count("\n") == 1
    assert hits[0].text == "a" * 50  # the hits themselves are not changed
