"""Helpers of the memory tests: keeping facts and reading the timeline through the API."""

from __future__ import annotations


def keep(client, *facts, base="team"):
    r = client.post(f"/v1/metis/knowledge-bases/{base}/memory", json={"facts": list(facts)})
    assert r.status_code == 200, r.text
    return r.json()


def fact(subject, attribute, sentence, said_at=None, source="chat: standup"):
    data = {"subject": subject, "attribute": attribute, "fact": sentence, "source": source}
    if said_at:
        data["said_at"] = said_at
    return data


def three_roles(client):
    """Ana's role three times over a year (intern, data lead, research) and Bruno's city; the kept facts."""
    return keep(
        client,
        fact("Ana", "role", "Ana is an intern.", "2026-01-01"),
        fact("Ana", "role", "Ana leads the data team.", "2026-06-01"),
        fact("Ana", "role", "Ana works in research.", "2026-10-12"),
        fact("Bruno", "city", "Bruno lives in Recife.", "2026-10-01"),
    )["facts"]


MEMORY = "/v1/metis/knowledge-bases/team/memory"


ACME, GLOBEX = "Ana works at Acme.", "Ana works at Globex."


def ana(sentence, said_at):
    return fact("Ana", "employer", sentence, said_at)


def timeline(client):
    """Ana's employer, oldest first: (fact, held from, until, said_again, the fact that replaced it)."""
    listing = client.get(MEMORY, params={"history": "true"}).json()
    (group,) = listing["subjects"]
    (item,) = group["facts"]
    facts = [*reversed(item.get("replaced", [])), item]
    by_id = {f["id"]: f for f in facts}
    return [
        (f["fact"], f["held"]["from"], f["held"]["until"], f.get("said_again", []),
         by_id[f["replaced_by"]]["fact"] if f.get("replaced_by") else None)
        for f in facts
    ]


def split(client):
    keep(client, ana(ACME, "2024-03-01"), ana(ACME, "2024-03-20"), ana(GLOBEX, "2024-03-10"))
    listing = client.get(MEMORY, params={"history": "true"}).json()
    item = listing["subjects"][0]["facts"][0]
    acme2, globex, acme1 = item, *item["replaced"]
    return acme1["id"], globex["id"], acme2["id"]
