"""A fact said again: one fact with its later sayings (said_again); a fact said in between splits it.

The issue's three cases through the REST API, Edit and Forget with such facts, and memories written
before said_again existed.
"""

from __future__ import annotations

import json

from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.metis.memory.facts import FactIn
from astralyx.metis.memory.store import JOURNAL, MemoryStore

from .conftest import files
from .kit import ACME, GLOBEX, MEMORY, ana, fact, keep, split, timeline


def held_on(client, day):
    listing = client.get(MEMORY, params={"as_of": day}).json()
    return [f["fact"] for g in listing["subjects"] for f in g["facts"]]


SPLIT = [
    (ACME, "2024-03-01", "2024-03-10", [], GLOBEX),
    (GLOBEX, "2024-03-10", "2024-03-20", [], ACME),
    (ACME, "2024-03-20", None, [], None),
]


def test_case_a_a_fact_said_between_two_sayings_splits_it(client, team):
    first = keep(client, ana(ACME, "2024-03-01"))["facts"][0]
    again = keep(client, ana("ana works at ACME", "2024-03-20"))
    (f,) = again["facts"]
    assert (f["change"], f["status"], again["kept"], again["known"], again["confirmed"]) == ("confirms", "known", 0, 1, 1)
    assert f["known"]["id"] == first["id"] and f["known"]["said_again"] == ["2024-03-20"]
    assert timeline(client) == [(ACME, "2024-03-01", None, ["2024-03-20"], None)]

    out = keep(client, ana(GLOBEX, "2024-03-10"))
    (g,) = out["facts"]
    assert (g["change"], g["status"], g["until"]) == ("older", "history", "2024-03-20")
    assert g["splits"]["id"] == first["id"] and g["current"]["fact"] == ACME and g["current"]["said_at"] == "2024-03-20"
    assert timeline(client) == SPLIT
    assert held_on(client, "2024-03-25") == [ACME]
    assert held_on(client, "2024-03-15") == [GLOBEX]
    assert held_on(client, "2024-03-05") == [ACME]
    # Three notes: the first Acme kept its id; the later Acme is a note of its own.
    disk = files(team.folder)
    assert set(disk) == {f"history/{first['id']}", f"history/{g['id']}", f"current/{g['current']['id']}"}
    assert "said_again" not in disk[f"history/{first['id']}"]
    assert f"replaced_by: {g['id']}" in disk[f"history/{first['id']}"]
    assert MemoryStore(team.folder).repair() == []  # the files agree with the rule: nothing to settle


def test_case_b_the_same_statements_in_another_order_give_the_same_memory(client, team):
    assert keep(client, ana(ACME, "2024-03-01"))["facts"][0]["change"] == "new"
    assert keep(client, ana(GLOBEX, "2024-03-10"))["facts"][0]["change"] == "replaces"
    assert keep(client, ana(ACME, "2024-03-20"))["facts"][0]["change"] == "replaces"  # the same wording, not next to it
    assert timeline(client) == SPLIT
    assert held_on(client, "2024-03-25") == [ACME]


def test_case_c_an_earlier_saying_moves_the_fact_back(client, team):
    globex = keep(client, ana(GLOBEX, "2024-03-20"))["facts"][0]
    acme = keep(client, ana(ACME, "2024-03-01"))["facts"][0]
    assert acme["change"] == "older"
    out = keep(client, ana(GLOBEX, "2024-03-10"))
    (f,) = out["facts"]
    assert f["change"] == "confirms" and f["known"]["id"] == globex["id"] and f["known"]["said_at"] == "2024-03-10"
    assert timeline(client) == [
        (ACME, "2024-03-01", "2024-03-10", [], GLOBEX),
        (GLOBEX, "2024-03-10", None, ["2024-03-20"], None),
    ]
    assert held_on(client, "2024-03-15") == [GLOBEX]
    assert held_on(client, "2024-03-05") == [ACME]
    disk = files(team.folder)
    assert set(disk) == {f"current/{globex['id']}", f"history/{acme['id']}"}
    assert "said_at: '2024-03-10'" in disk[f"current/{globex['id']}"]
    assert f"until: '2024-03-10'\nreplaced_by: {globex['id']}" in disk[f"history/{acme['id']}"]
    assert client.get(f"{MEMORY}/{globex['id']}").json()["said_again"] == ["2024-03-20"]


def test_said_again_is_shown_and_is_absent_when_never_said_again(client, team):
    keep(client, ana(ACME, "2024-03-01"), fact("Bruno", "city", "Bruno lives in Recife.", "2024-03-01"))
    keep(client, ana(ACME, "2024-03-20"))
    listing = client.get(MEMORY).json()
    by_fact = {f["fact"]: f for g in listing["subjects"] for f in g["facts"]}
    assert by_fact[ACME]["said_again"] == ["2024-03-20"]
    assert "said_again" not in by_fact["Bruno lives in Recife."]
    assert listing["count"] == 2


def test_a_memory_written_before_said_again_reads_the_same(client, team):
    # Notes as the previous version wrote them: no said_again in their front matter.
    folder = team.folder / "notes/memory"
    (folder / "history").mkdir(parents=True)
    (folder / "history/f_00000000000000a1.md").write_text(
        "---\nid: f_00000000000000a1\nsubject: Ana\nattribute: employer\nfact: Ana works at Acme.\nsource: by hand\n"
        "said_at: '2024-03-01'\nkept_at: '2024-03-01T09:00:00.000000Z'\nuntil: '2024-03-10'\n"
        "replaced_by: f_00000000000000b2\nstatus: history\n---\n\nAna works at Acme.\n"
    )
    (folder / "f_00000000000000b2.md").write_text(
        "---\nid: f_00000000000000b2\nsubject: Ana\nattribute: employer\nfact: Ana works at Globex.\nsource: by hand\n"
        "said_at: '2024-03-10'\nkept_at: '2024-03-10T09:00:00.000000Z'\nstatus: current\n---\n\nAna works at Globex.\n"
    )
    before = files(team.folder)
    assert MemoryStore(team.folder).repair() == []
    assert timeline(client) == [(ACME, "2024-03-01", "2024-03-10", [], GLOBEX), (GLOBEX, "2024-03-10", None, [], None)]
    assert files(team.folder) == before
    # And it goes on under the rule: Acme said again after Globex is Acme again.
    assert keep(client, ana(ACME, "2024-03-20"))["facts"][0]["change"] == "replaces"
    assert timeline(client) == SPLIT




def test_forget_the_fact_in_between_makes_the_two_one_fact_again(client, team):
    acme1, globex, acme2 = split(client)
    r = client.delete(f"{MEMORY}/{globex}")
    assert r.status_code == 200, r.text
    out = r.json()
    assert out["history_forgotten"] == 0 and out["rejoined"]["id"] == acme1
    assert timeline(client) == [(ACME, "2024-03-01", None, ["2024-03-20"], None)]
    assert set(files(team.folder)) == {f"current/{acme1}"}
    assert held_on(client, "2024-03-15") == [ACME]


def test_forget_the_current_fact_with_the_older_facts_it_replaced(client, team):
    acme1, globex, acme2 = split(client)
    out = client.delete(f"{MEMORY}/{acme2}", params={"history": "true"}).json()
    assert out["history_forgotten"] == 2  # "with the 2 older facts it replaced"
    assert files(team.folder) == {}


def test_forget_only_the_current_fact_lets_the_one_before_hold_again(client, team):
    acme1, globex, acme2 = split(client)
    out = client.delete(f"{MEMORY}/{acme2}").json()
    assert out["history_forgotten"] == 0 and out["current"]["id"] == globex
    assert timeline(client) == [(ACME, "2024-03-01", "2024-03-10", [], GLOBEX), (GLOBEX, "2024-03-10", None, [], None)]


def test_edit_a_fact_said_again_corrects_every_saying(client, team):
    first = keep(client, ana(ACME, "2024-03-01"))["facts"][0]
    keep(client, ana(ACME, "2024-03-20"))
    r = client.put(f"{MEMORY}/{first['id']}", json={"fact": "Ana works at Acme Corp."})
    assert r.status_code == 200, r.text
    edited = r.json()
    assert edited["id"] == first["id"] and edited["said_again"] == ["2024-03-20"] and edited["edited_at"]
    # The corrected wording is the fact now: said again in it, it is known.
    assert keep(client, ana("Ana works at Acme Corp.", "2024-03-20"))["facts"][0]["change"] == "known"
    assert keep(client, ana(ACME, "2024-03-25"))["facts"][0]["change"] == "replaces"


def test_edit_one_part_of_a_split_fact_keeps_its_place(client, team):
    acme1, globex, acme2 = split(client)
    client.put(f"{MEMORY}/{acme1}", json={"fact": "Ana worked at Acme Labs."})
    assert timeline(client) == [
        ("Ana worked at Acme Labs.", "2024-03-01", "2024-03-10", [], GLOBEX),
        (GLOBEX, "2024-03-10", "2024-03-20", [], ACME),
        (ACME, "2024-03-20", None, [], None),
    ]


def test_edit_the_fact_in_between_into_its_neighbours_makes_one_fact(client, team):
    acme1, globex, acme2 = split(client)
    r = client.put(f"{MEMORY}/{globex}", json={"fact": "ana works at acme"})
    assert r.status_code == 200, r.text
    assert r.json()["id"] == acme1 and r.json()["said_again"] == ["2024-03-10", "2024-03-20"] and r.json()["edited_at"]
    assert timeline(client) == [(ACME, "2024-03-01", None, ["2024-03-10", "2024-03-20"], None)]
    assert set(files(team.folder)) == {f"current/{acme1}"}


def test_edit_the_date_of_a_fact_moves_it_and_its_sayings_follow_the_rule(client, team):
    acme1, globex, acme2 = split(client)
    # Acme was first said on 03-15, not 03-01: then Globex held first, and Acme since 03-15.
    r = client.put(f"{MEMORY}/{acme1}", json={"said_at": "2024-03-15"})
    assert r.status_code == 200, r.text
    assert timeline(client) == [(GLOBEX, "2024-03-10", "2024-03-15", [], ACME), (ACME, "2024-03-15", None, ["2024-03-20"], None)]
    assert r.json()["id"] == acme1
    assert MemoryStore(team.folder).repair() == []


def test_same_day_sayings_keep_the_order_they_were_kept_in(client, team):
    keep(client, ana(ACME, "2024-03-01"), ana(ACME, "2024-03-10"))
    # Globex said the same day as Acme's second saying, kept after it: Globex is newer.
    assert keep(client, ana(GLOBEX, "2024-03-10"))["facts"][0]["change"] == "replaces"
    assert timeline(client) == [(ACME, "2024-03-01", "2024-03-10", ["2024-03-10"], GLOBEX),
                                (GLOBEX, "2024-03-10", None, [], None)]
    assert keep(client, ana(ACME, "2024-03-10"))["facts"][0]["change"] == "known"  # said that day already
    assert MemoryStore(team.folder).repair() == []


def test_a_split_keeps_same_day_facts_in_the_order_they_were_kept(client, team):
    keep(client, ana(ACME, "2024-03-20"))
    keep(client, ana(GLOBEX, "2024-03-20"))  # kept later the same day: newer
    assert keep(client, ana(ACME, "2024-03-01"))["facts"][0]["change"] == "confirms"
    # Initech said between Acme's two sayings: the Acme of 03-20 is a fact of its own, still before Globex.
    assert keep(client, ana("Ana works at Initech.", "2024-03-10"))["facts"][0]["change"] == "older"
    assert timeline(client) == [
        (ACME, "2024-03-01", "2024-03-10", [], "Ana works at Initech."),
        ("Ana works at Initech.", "2024-03-10", "2024-03-20", [], ACME),
        (ACME, "2024-03-20", "2024-03-20", [], GLOBEX),
        (GLOBEX, "2024-03-20", None, [], None),
    ]
    assert MemoryStore(team.folder).repair() == []  # a restart reads the same memory


def test_a_split_interrupted_by_a_crash_is_finished_at_start(core, client, team):
    keep(client, ana(ACME, "2024-03-01"), ana(ACME, "2024-03-20"))
    store = MemoryStore(team.folder)
    # The split's file operations, as keeping Globex would write them; the crash comes after the first.
    _, before, after = core.memory._plan(store, [FactIn.model_validate(ana(GLOBEX, "2024-03-10"))])
    ops = store.ops_for(before, after)
    assert len(ops) >= 3  # the Acme of 03-01 rewritten, Globex and the Acme of 03-20 written
    (team.folder / JOURNAL).write_text(json.dumps({"ops": ops}))
    (team.folder / ops[0][0]).parent.mkdir(parents=True, exist_ok=True)
    (team.folder / ops[0][0]).write_text(ops[0][1])
    fresh = Astralyx(Settings.load(core.home)).start()
    try:
        fresh.memory.repair_interrupted()
    finally:
        fresh.close()
    assert not (team.folder / JOURNAL).exists()
    assert timeline(client) == SPLIT
    assert len(files(team.folder)) == 3
