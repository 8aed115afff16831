"""Edit, forget, secrets, repair after a crash, concurrent keeps, permissions, documents bases."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from astralyx.auth.actor import Actor
from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.errors import AstralyxError
from astralyx.metis.bases import KnowledgeBaseRequest
from astralyx.metis.memory.facts import Fact, render
from astralyx.metis.memory.store import JOURNAL

from .conftest import files
from .kit import fact, keep, three_roles

pytestmark = pytest.mark.engines  # on SQLite and on PostgreSQL

URL = "/v1/metis/knowledge-bases/team/memory"


def timeline(client, subject="Ana", attribute="role"):
    listing = client.get(URL + "?history=true").json()
    for group in listing["subjects"]:
        for item in group["facts"]:
            if item["subject"] == subject and item["attribute"] == attribute:
                return [item["fact"]] + [h["fact"] for h in item["replaced"]]
    return []


def test_listing_groups_by_subject_with_date_and_source(client, team):
    three_roles(client)
    data = client.get(URL).json()
    assert data["count"] == 2
    assert [g["subject"] for g in data["subjects"]] == ["Ana", "Bruno"]
    (ana,) = data["subjects"][0]["facts"]
    assert ana["fact"] == "Ana works in research." and ana["said_at"] == "2026-10-12" and ana["source"] == "chat: standup"
    assert "replaced" not in ana
    one = client.get(f"{URL}/{ana['id']}").json()
    assert one["status"] == "current" and one["held"] == {"from": "2026-10-12", "until": None}


def test_as_of_lists_what_held_then(client, team):
    three_roles(client)
    data = client.get(URL + "?as_of=2026-09-15").json()
    ana = data["subjects"][0]["facts"][0]
    assert ana["fact"] == "Ana leads the data team." and ana["held"] == {"from": "2026-06-01", "until": "2026-10-12"}
    assert [g["subject"] for g in client.get(URL + "?as_of=2026-10-05").json()["subjects"]] == ["Ana", "Bruno"]
    assert client.get(URL + "?as_of=2025-12-31").json()["subjects"] == []
    # A fact said on that day holds on it.
    assert client.get(URL + "?as_of=2026-10-12").json()["subjects"][0]["facts"][0]["fact"] == "Ana works in research."


def test_edit_corrects_wording_and_keeps_history(client, team):
    facts = three_roles(client)
    current = facts[2]
    r = client.put(f"{URL}/{current['id']}", json={"fact": "Ana works in the research group."})
    assert r.status_code == 200, r.text
    assert r.json()["fact"] == "Ana works in the research group." and r.json()["edited_at"]
    assert timeline(client) == ["Ana works in the research group.", "Ana leads the data team.", "Ana is an intern."]
    disk = files(team.folder)
    assert "Ana works in the research group." in disk[f"current/{current['id']}"]
    assert f"replaced_by: {current['id']}" in disk[f"history/{facts[1]['id']}"]
    # A history fact's wording can be corrected too; it stays where it was.
    client.put(f"{URL}/{facts[0]['id']}", json={"fact": "Ana was an intern."})
    assert timeline(client)[-1] == "Ana was an intern."
    assert client.put(f"{URL}/f_0000000000000000", json={"fact": "x"}).json()["error"]["code"] == "FACT_NOT_FOUND"


def test_forget_without_history_the_older_fact_holds_again(client, team):
    facts = three_roles(client)
    r = client.delete(f"{URL}/{facts[2]['id']}")
    assert r.status_code == 200
    assert r.json()["history_forgotten"] == 0 and r.json()["current"]["id"] == facts[1]["id"]
    assert timeline(client) == ["Ana leads the data team.", "Ana is an intern."]
    disk = files(team.folder)
    assert f"current/{facts[1]['id']}" in disk and "until" not in disk[f"current/{facts[1]['id']}"]
    assert not any(facts[2]["id"] in k for k in disk)


def test_forget_with_history_forgets_everything_kept_about_it(client, team):
    facts = three_roles(client)
    r = client.delete(f"{URL}/{facts[2]['id']}?history=true")
    assert r.json()["history_forgotten"] == 2 and "current" not in r.json()
    assert timeline(client) == []
    assert list(files(team.folder)) == [f"current/{facts[3]['id']}"]


def test_forget_a_history_fact_with_history(client, team):
    facts = three_roles(client)
    r = client.delete(f"{URL}/{facts[1]['id']}?history=true")
    assert r.json()["history_forgotten"] == 1
    assert timeline(client) == ["Ana works in research."]


SECRETS = [
    "My password is hunter2.",
    "The API key is sk-proj-abc123DEF456ghi789JKL012mno345PQR678stu.",
    "Ana's card is 4111 1111 1111 1111.",
    "The deploy key is -----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA",
    "The GitHub token is ghp_abcdefghijklmnopqrstuvwxyz0123456789.",
]


@pytest.mark.parametrize("secret", SECRETS)
def test_secrets_are_refused_and_nothing_is_written(client, team, home, secret, caplog):
    caplog.set_level("DEBUG")
    keep(client, fact("Ana", "role", "Ana leads the data team.", "2026-09-01"))
    before = files(team.folder)
    r = client.post(URL, json={"facts": [fact("Bruno", "city", "Bruno lives in Recife."), fact("Ana", "login", secret)]})
    assert r.status_code == 422 and r.json()["error"]["code"] == "FACT_SENSITIVE"
    assert "facts[1]" in r.json()["error"]["message"] and secret not in r.text
    assert files(team.folder) == before  # all or nothing: Bruno was not kept either
    needle = secret.split()[-1].rstrip(".").encode()
    for path in Path(home).rglob("*"):
        if path.is_file():
            assert needle not in path.read_bytes(), path
    assert needle.decode() not in caplog.text
    # Correcting a fact into a secret is refused too.
    fid = next(iter(before)).split("/")[1]
    r = client.put(f"{URL}/{fid}", json={"fact": secret})
    assert r.status_code == 422 and r.json()["error"]["code"] == "FACT_SENSITIVE"
    assert files(team.folder) == before


@pytest.mark.parametrize(
    ("attribute", "text", "source", "field"),
    [
        ("wifi password", "It is sunflower42.", "chat", "fact"),
        ("door code", "4417", "chat", "fact"),
        ("role", "Ana leads the data team.", "email from IT: the new password is Welcome2026!", "source"),
    ],
)
def test_a_secret_given_by_the_attribute_or_in_the_source_is_refused(client, team, attribute, text, source, field):
    item = fact("Ana", attribute, text, "2026-09-01")
    item["source"] = source
    r = client.post(URL, json={"facts": [item]})
    assert r.status_code == 422 and r.json()["error"]["code"] == "FACT_SENSITIVE", r.text
    assert r.json()["error"]["details"]["field"] == field
    assert files(team.folder) == {}


def test_ordinary_facts_with_numbers_are_kept(client, team):
    out = keep(
        client,
        fact("Ana", "extension", "Ana's phone extension is 4521."),
        fact("Launch", "date", "The launch moved to Friday 16 October 2026 at 10:00."),
        fact("Laptop", "price", "The new laptops cost $1,299.99 each, 12 of them."),
        fact("Bruno", "phone", "Bruno's phone number is +55 81 99876-5432."),
        fact("Office", "address", "The office is at 1600 Amphitheatre Parkway, Mountain View, CA 94043."),
        fact("Order", "number", "The order number is 1234567890123."),
    )
    assert out["kept"] == 6


def test_repair_two_current_facts_for_one_key_the_later_said_wins(core, admin, team):
    folder = team.folder / "notes/memory"
    a = Fact("f_" + "a" * 16, "Ana", "role", "Ana leads the data team.", "chat: x", "2026-09-01", "2026-12-01T00:00:00Z")
    b = Fact("f_" + "b" * 16, "ana", "Role", "Ana works in research.", "chat: y", "2026-10-12", "2026-11-01T00:00:00Z")
    folder.mkdir(parents=True)
    (folder / f"{a.id}.md").write_text(render(a))
    (folder / f"{b.id}.md").write_text(render(b))
    # Also a fact in both folders: the history copy is read, the timeline decides where it lives.
    c = Fact("f_" + "c" * 16, "Bruno", "city", "Bruno lives in Recife.", "by hand", "2026-10-01", "2026-10-01T00:00:00Z")
    (folder / "history").mkdir()
    (folder / f"{c.id}.md").write_text(render(c.with_(fact="Bruno lives in Olinda.")))
    (folder / "history" / f"{c.id}.md").write_text(render(c.with_(status="history")))
    fresh = Astralyx(Settings.load(core.home)).start()
    try:
        data = fresh.memory.list(admin, "team", history=True).model_dump()
    finally:
        fresh.close()
    ana, bruno = (g["facts"][0] for g in data["subjects"])
    assert ana["id"] == b.id and [h["id"] for h in ana["replaced"]] == [a.id]
    assert bruno["fact"] == "Bruno lives in Recife."
    assert set(files(team.folder)) == {f"history/{a.id}", f"current/{b.id}", f"current/{c.id}"}
    assert f"until: '2026-10-12'\nreplaced_by: {b.id}" in files(team.folder)[f"history/{a.id}"]


def test_repair_replays_an_interrupted_batch(core, admin, team, client):
    old = keep(client, fact("Ana", "role", "Ana leads the data team.", "2026-09-01"))["facts"][0]
    # Simulate a crash after the journal was written and the first operation applied.
    new = Fact("f_" + "d" * 16, "Ana", "role", "Ana works in research.", "chat: y", "2026-10-12", "2099-01-01T00:00:00Z")
    moved = files(team.folder)[f"current/{old['id']}"]
    ops = [
        (f"notes/memory/{new.id}.md", render(new)),
        (f"notes/memory/history/{old['id']}.md", moved.replace("status: current", "status: history")),
        (f"notes/memory/{old['id']}.md", None),
    ]
    (team.folder / JOURNAL).write_text(json.dumps({"ops": ops}))
    (team.folder / ops[0][0]).write_text(ops[0][1])
    fresh = Astralyx(Settings.load(core.home)).start()
    try:
        item = fresh.memory.list(admin, "team", history=True).model_dump()["subjects"][0]["facts"][0]
    finally:
        fresh.close()
    assert item["id"] == new.id and [h["id"] for h in item["replaced"]] == [old["id"]]
    assert not (team.folder / JOURNAL).exists()
    assert set(files(team.folder)) == {f"current/{new.id}", f"history/{old['id']}"}


def test_concurrent_keeps_lose_nothing(core, admin, team):
    errors = []

    def worker(n: int) -> None:
        try:
            for i in range(8):
                core.memory.keep(admin, "team", [
                    {"subject": f"Person {n}", "attribute": "count", "fact": f"Person {n} counted {i}.",
                     "said_at": f"2026-10-{i + 1:02d}"},
                    {"subject": f"Thing {n}-{i}", "attribute": "state", "fact": f"Thing {n}-{i} exists."},
                ])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    disk = files(team.folder)
    assert len(disk) == 6 * 16
    assert sum(k.startswith("current/") for k in disk) == 6 + 6 * 8
    data = core.memory.list(admin, "team", history=True).model_dump()
    counts = [f for g in data["subjects"] for f in g["facts"] if f["attribute"] == "count"]
    assert sorted(f["fact"] for f in counts) == sorted(f"Person {n} counted 7." for n in range(6))
    assert all(len(f["replaced"]) == 7 for f in counts)


def test_a_documents_base_has_no_memory(client, core, admin):
    core.bases.create(admin, KnowledgeBaseRequest.model_validate({"metadata": {"name": "handbook"}}))
    r = client.post("/v1/metis/knowledge-bases/handbook/memory", json={"facts": [fact("A", "b", "C.")]})
    assert r.status_code == 409 and r.json()["error"]["code"] == "NOT_A_MEMORY"
    assert client.get("/v1/metis/knowledge-bases/handbook/memory").json()["error"]["code"] == "NOT_A_MEMORY"


def test_permissions(client, key_client, team):
    fid = keep(client, fact("Ana", "role", "Ana leads the data team."))["facts"][0]["id"]
    viewer = key_client("viewer")
    assert viewer.get(URL).status_code == 200
    for r in (
        viewer.post(URL, json={"facts": [fact("A", "b", "C.")]}),
        viewer.put(f"{URL}/{fid}", json={"fact": "x."}),
        viewer.delete(f"{URL}/{fid}"),
    ):
        assert r.status_code == 403 and r.json()["error"]["code"] == "PERMISSION_DENIED"
    editor = key_client("editor")
    assert editor.post(URL, json={"facts": [fact("A", "b", "C.")]}).status_code == 200
    other = key_client("admin", workspace="acme")
    for r in (other.get(URL), other.post(URL, json={"facts": [fact("A", "b", "C.")]}), other.delete(f"{URL}/{fid}")):
        assert r.status_code == 404 and r.json()["error"]["code"] == "BASE_NOT_FOUND"
    assert client.get(f"{URL}/{fid}").status_code == 200


def test_deleting_the_memory_deletes_every_fact(client, team):
    three_roles(client)
    assert files(team.folder)
    assert client.delete("/v1/metis/knowledge-bases/team").status_code in (200, 204)
    assert not team.folder.exists()


def test_preview_writes_nothing_and_known_subjects(core, admin, team):
    core.memory.keep(admin, "team", [fact("Ana", "role", "Ana leads the data team.", "2026-09-01")])
    before = files(team.folder)
    preview = core.memory.preview(admin, "team", [
        fact("ana", "role", "Ana works in research.", "2026-10-12"),
        fact("Ana", "role", "Ana was an intern.", "2026-01-01"),
        fact("Ana", "role", "Ana leads the data team.", "2026-09-01"),
        fact("Ana", "role", "Ana leads the data team.", "2026-09-02"),
        fact("Launch", "date", "The launch is on Friday."),
    ])
    # The same saying again: known; on another day (before research was said): confirms.
    assert [p.change for p in preview] == ["replaces", "older", "known", "confirms", "new"]
    assert preview[3].known.said_again == ["2026-09-02"]
    assert preview[0].replaces.fact == "Ana leads the data team." and preview[0].replaces.said_at == "2026-09-01"
    assert files(team.folder) == before
    assert core.memory.known_subjects(team) == {"Ana": ["role"]}
    viewer = Actor.of("default", "viewer")
    with pytest.raises(AstralyxError) as e:
        core.memory.preview(viewer, "team", [fact("A", "b", "C.")])
    assert e.value.code == "PERMISSION_DENIED"


def test_a_journal_left_by_another_process_is_replayed_before_the_next_change(core, admin, team, client):
    old = keep(client, fact("Ana", "role", "Ana leads the data team.", "2026-09-01"))["facts"][0]  # touched: repaired
    crashed = Fact("f_" + "f" * 16, "Ana", "role", "Ana works in research.", "cli", "2026-10-12", "2026-12-01T00:00:00Z")
    (team.folder / JOURNAL).write_text(json.dumps({"ops": [(f"notes/memory/{crashed.id}.md", render(crashed))]}))
    out = keep(client, fact("Ana", "role", "Ana heads research.", "2026-11-01"))
    assert out["facts"][0]["replaces"]["id"] == crashed.id
    assert timeline(client) == ["Ana heads research.", "Ana works in research.", "Ana leads the data team."]
    assert not (team.folder / JOURNAL).exists() and old["id"]


def test_as_of_with_history_and_a_bad_date(client, team):
    three_roles(client)
    item = client.get(URL + "?as_of=2026-09-15&history=true").json()["subjects"][0]["facts"][0]
    assert item["fact"] == "Ana leads the data team." and [h["fact"] for h in item["replaced"]] == ["Ana is an intern."]
    r = client.get(URL + "?as_of=September")
    assert r.status_code == 422 and r.json()["error"]["code"] == "INVALID_DATE" and "as_of" in r.json()["error"]["message"]


WRITER = """
import sys
from astralyx.auth.actor import Actor
from astralyx.config import Settings
from astralyx.core import Astralyx

core = Astralyx(Settings.load(sys.argv[1])).start()
n = int(sys.argv[2])
for i in range(6):
    core.memory.keep(Actor.local_owner("default"), "team", [
        {"subject": "Counter", "attribute": "value", "fact": f"Process {n} counted {i}.",
         "said_at": f"2026-10-{10 * n + i + 1:02d}"},
        {"subject": f"Process {n}", "attribute": f"step {i}", "fact": f"Process {n} did step {i}."},
    ])
core.close()
"""


def test_concurrent_keeps_from_several_processes_lose_nothing(core, admin, team, home):
    import subprocess
    import sys

    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(home), str(n)]) for n in range(3)]
    assert [p.wait(timeout=300) for p in procs] == [0, 0, 0]
    data = core.memory.list(admin, "team", history=True).model_dump()
    facts = [f for g in data["subjects"] for f in g["facts"]]
    assert len(facts) == 1 + 3 * 6
    (counter,) = [f for f in facts if f["subject"] == "Counter"]
    assert counter["fact"] == "Process 2 counted 5." and len(counter["replaced"]) == 17
    assert [h["said_at"] for h in counter["replaced"]] == sorted((h["said_at"] for h in counter["replaced"]), reverse=True)
    assert len(files(team.folder)) == 3 * 12


def test_correcting_the_date_moves_the_fact_in_its_timeline(client, team):
    intern, lead, research, _ = three_roles(client)
    r = client.put(f"{URL}/{research['id']}", json={"said_at": "2026-03-01"})
    assert r.status_code == 200 and r.json()["status"] == "history" and r.json()["until"] == "2026-06-01"
    assert timeline(client) == ["Ana leads the data team.", "Ana works in research.", "Ana is an intern."]
    assert f"current/{lead['id']}" in files(team.folder)


def test_bad_batches_say_why(client, team):
    for body, code in (
        ({"facts": []}, "INVALID_FACT"),
        ({"fact": "x"}, "INVALID_FACT"),
        ({"facts": [{"subject": "A", "attribute": "b"}]}, "INVALID_FACT"),
        ({"facts": [{"subject": "A", "attribute": "b", "fact": "c", "colour": "red"}]}, "INVALID_FACT"),
        ({"facts": [fact("A", "b", f"c {i}.") for i in range(501)]}, "TOO_MANY_FACTS"),
    ):
        r = client.post(URL, json=body)
        assert r.status_code in (400, 422) and r.json()["error"]["code"] == code, r.text
    assert files(team.folder) == {}
