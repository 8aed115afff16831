"""Every row of the doc's table "How facts replace each other", through the REST API."""

from __future__ import annotations

import pytest

from .conftest import files
from .kit import fact, keep

pytestmark = pytest.mark.engines  # on SQLite and on PostgreSQL








def test_new_subject_or_attribute_is_current(client, team):
    out = keep(client, fact("Ana", "role", "Ana leads the data team.", "2026-09-01"))
    assert out["kept"] == 1 and out["replaced"] == 0
    (f,) = out["facts"]
    assert f["status"] == "current" and f["change"] == "new" and f["id"].startswith("f_") and len(f["id"]) == 18
    out = keep(client, fact("Ana", "city", "Ana lives in Porto.", "2026-09-01"))
    assert out["facts"][0]["status"] == "current"
    disk = files(team.folder)
    assert sorted(k.split("/")[0] for k in disk) == ["current", "current"]
    text = disk[f"current/{f['id']}"]
    for field in ("id:", "subject: Ana", "attribute: role", "fact: Ana leads the data team.", "source: 'chat: standup'",
                  "said_at: '2026-09-01'", "kept_at:", "status: current"):
        assert field in text


def test_same_key_said_later_replaces(client, team):
    old = keep(client, fact("Ana", "role", "Ana leads the data team.", "2026-09-01"))["facts"][0]
    out = keep(client, fact(" ana ", "ROLE", "Ana works in research.", "2026-10-12"))
    new = out["facts"][0]
    assert new["status"] == "current" and new["change"] == "replaces"
    assert new["replaces"]["id"] == old["id"] and new["replaces"]["fact"] == "Ana leads the data team."
    assert out["replaced"] == 1
    disk = files(team.folder)
    assert set(disk) == {f"history/{old['id']}", f"current/{new['id']}"}
    hist = disk[f"history/{old['id']}"]
    assert "until: '2026-10-12'" in hist and f"replaced_by: {new['id']}" in hist and "status: history" in hist
    # Names keep the spelling the memory knows.
    assert "subject: Ana" in disk[f"current/{new['id']}"] and "attribute: role" in disk[f"current/{new['id']}"]


def test_said_before_the_current_goes_to_history(client, team):
    cur = keep(client, fact("Ana", "role", "Ana works in research.", "2026-10-12"))["facts"][0]
    out = keep(client, fact("Ana", "role", "Ana leads the data team.", "2026-09-01"))
    old = out["facts"][0]
    assert old["status"] == "history" and old["change"] == "older" and out["replaced"] == 0
    assert old["until"] == "2026-10-12" and old["replaced_by"] == cur["id"]
    assert old["current"]["id"] == cur["id"]
    disk = files(team.folder)
    assert set(disk) == {f"current/{cur['id']}", f"history/{old['id']}"}


def test_older_fact_takes_its_place_in_the_timeline(client, team):
    a = keep(client, fact("Ana", "role", "Ana is an intern.", "2026-01-01"))["facts"][0]
    c = keep(client, fact("Ana", "role", "Ana works in research.", "2026-10-12"))["facts"][0]
    b = keep(client, fact("Ana", "role", "Ana leads the data team.", "2026-06-01"))["facts"][0]
    listing = client.get("/v1/metis/knowledge-bases/team/memory?history=true").json()
    (group,) = listing["subjects"]
    (item,) = group["facts"]
    assert item["id"] == c["id"]
    assert [(h["id"], h["held"]["until"], h["replaced_by"]) for h in item["replaced"]] == [
        (b["id"], "2026-10-12", c["id"]),
        (a["id"], "2026-06-01", b["id"]),
    ]


def test_same_fact_again_is_not_kept_twice(client, team):
    first = keep(client, fact("Bruno", "city", "Bruno lives in Recife.", "2026-10-01"))["facts"][0]
    before = files(team.folder)
    # Said again on the same day: nothing changes.
    out = keep(client, fact("bruno", "City ", "  bruno lives in   RECIFE ", "2026-10-01"))
    (f,) = out["facts"]
    assert f["status"] == "known" and f["change"] == "known" and f["known"]["id"] == first["id"]
    assert out["kept"] == 0 and out["known"] == 1 and out["confirmed"] == 0
    assert files(team.folder) == before
    # Said again on another day: still one fact (one note), which records the saying.
    out = keep(client, fact("bruno", "City ", "  bruno lives in   RECIFE ", "2026-10-20"))
    (f,) = out["facts"]
    assert f["status"] == "known" and f["change"] == "confirms" and f["known"]["id"] == first["id"]
    assert f["known"]["said_again"] == ["2026-10-20"]
    assert out["kept"] == 0 and out["known"] == 1 and out["confirmed"] == 1
    disk = files(team.folder)
    assert list(disk) == [f"current/{first['id']}"]
    assert "said_at: '2026-10-01'" in disk[f"current/{first['id']}"]
    assert "said_again:\n- '2026-10-20'" in disk[f"current/{first['id']}"]
    assert "Bruno lives in Recife." in disk[f"current/{first['id']}"]


def test_several_facts_at_once(client, team):
    out = keep(
        client,
        fact("Ana", "role", "Ana leads the data team.", "2026-09-01"),
        fact("Ana", "role", "Ana works in research.", "2026-10-12"),
        fact("Launch", "date", "The launch moved to Friday 16 October.", "2026-10-12"),
        fact("Launch", "date", "The launch moved to Friday 16 October."),
    )
    assert [f["status"] for f in out["facts"]] == ["history", "current", "current", "known"]
    assert out["kept"] == 3 and out["replaced"] == 1 and out["known"] == 1
    assert len(files(team.folder)) == 3


def test_same_moment_the_later_kept_wins(client, team):
    keep(client, fact("Ana", "role", "Ana leads the data team.", "2026-10-12"))
    out = keep(client, fact("Ana", "role", "Ana works in research.", "2026-10-12"))
    assert out["facts"][0]["status"] == "current"


def test_said_at_defaults_to_now_and_accepts_date_times(client, team):
    out = keep(client, fact("Ana", "role", "Ana leads the data team."), fact("Ana", "city", "Ana lives in Porto.",
                                                                          "2026-10-12T12:05:00+02:00"))
    assert out["facts"][0]["said_at"].endswith("Z") and out["facts"][1]["said_at"] == "2026-10-12T10:05:00Z"
    r = client.post("/v1/metis/knowledge-bases/team/memory", json={"facts": [fact("A", "b", "c.", "last tuesday")]})
    assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_DATE"
