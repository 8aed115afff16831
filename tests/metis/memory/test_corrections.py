"""Edit keeps what it corrected: the earlier wording in the fact's file, in GET …/memory and `--history`,
through the timeline's rebuilds and a crash repair; the timeline itself unchanged."""

from __future__ import annotations

import json

import yaml

from astralyx.metis.memory.facts import Correction, render
from astralyx.metis.memory.store import JOURNAL, MemoryStore
from astralyx.util import iso

from .conftest import files
from .kit import ACME, GLOBEX, MEMORY, ana, keep, split, timeline


def _front(text: str) -> dict:
    return yaml.safe_load(text.split("---")[1])


def _today(core) -> str:
    return iso()[:10]


def test_edit_keeps_the_earlier_wording_in_the_file_and_the_listing(client, core, team):
    first = keep(client, ana(ACME, "2024-03-01"))["facts"][0]
    keep(client, ana(GLOBEX, "2024-04-01"))
    before = timeline(client)
    disk = files(team.folder)
    assert all("corrected" not in text for text in disk.values())  # never edited: the files as before
    r = client.put(f"{MEMORY}/{first['id']}", json={"fact": "Ana worked at Acme Labs."})
    assert r.status_code == 200, r.text
    today = _today(core)
    assert r.json()["corrected"] == [{"from": ACME, "on": today}]
    meta = _front(files(team.folder)[f"history/{first['id']}"])
    assert meta["fact"] == "Ana worked at Acme Labs." and meta["corrected"] == [{"from": ACME, "on": today}]
    # the timeline is unchanged but for the wording
    after = timeline(client)
    assert [t[1:] for t in after] == [t[1:] for t in before] and after[0][0] == "Ana worked at Acme Labs."
    old = client.get(MEMORY, params={"history": "true"}).json()["subjects"][0]["facts"][0]["replaced"][0]
    assert old["corrected"] == [{"from": ACME, "on": today}]
    # a second correction, of the source too, is added after the first
    r = client.put(f"{MEMORY}/{first['id']}", json={"fact": "Ana worked at Acme Research.", "source": "HR"})
    assert r.json()["corrected"] == [{"from": ACME, "on": today},
                                     {"from": "Ana worked at Acme Labs.", "source": "chat: standup", "on": today}]
    # the same wording again changes nothing, and records nothing
    same = client.put(f"{MEMORY}/{first['id']}", json={"fact": "Ana worked at Acme Research."}).json()
    assert len(same["corrected"]) == 2


def test_the_correction_survives_the_timeline_rebuilding_the_notes(client, team):
    acme1, globex, acme2 = split(client)
    client.put(f"{MEMORY}/{acme1}", json={"fact": "Ana worked at Acme Labs."})
    # a newer fact: the key's notes are rebuilt from its sayings
    keep(client, ana("Ana works at Initech.", "2024-05-01"))
    disk = files(team.folder)
    assert _front(disk[f"history/{acme1}"])["corrected"][0]["from"] == ACME
    # the fact in between edited into its neighbours: one note, keeping both notes' corrections
    client.put(f"{MEMORY}/{globex}", json={"fact": "Ana works at Acme."})
    notes = {k: _front(v) for k, v in files(team.folder).items()}
    merged = next(m for m in notes.values() if m["fact"] == ACME)
    assert [c["from"] for c in merged["corrected"]] == [GLOBEX]
    assert sorted(c["from"] for m in notes.values() for c in m.get("corrected", [])) == [ACME, GLOBEX]
    # repair finds nothing to change: the files agree with the rule
    assert MemoryStore(team.folder).repair() == []


def test_a_crash_in_the_middle_of_an_edit_is_finished_with_its_correction(client, core, team):
    first = keep(client, ana(ACME, "2024-03-01"))["facts"][0]
    keep(client, ana(GLOBEX, "2024-04-01"))
    before = {f.id: f for f in MemoryStore(team.folder).facts()}
    edited = before[first["id"]].with_(fact="Ana worked at Acme Labs.", corrected=(Correction(on="2026-12-01", fact=ACME),))
    # the journal written, no file changed yet: what a crash right after the journal leaves
    (team.folder / JOURNAL).write_text(json.dumps({"ops": [[edited.relpath, render(edited)]]}))
    assert core.memory.repair(team)
    meta = _front(files(team.folder)[f"history/{first['id']}"])
    assert meta["corrected"] == [{"from": ACME, "on": "2026-12-01"}]
    assert not (team.folder / JOURNAL).exists()


def test_an_earlier_wording_that_looks_like_a_secret_is_not_kept(client, team):
    first = keep(client, ana(ACME, "2024-03-01"))["facts"][0]
    path = team.folder / f"notes/memory/{first['id']}.md"
    # written by hand with a secret in it (keeping it through the API is refused)
    path.write_text(path.read_text().replace(ACME, "Ana's password is hunter2-Xy9!qq."))
    r = client.put(f"{MEMORY}/{first['id']}", json={"fact": "Ana works at Acme."})
    assert r.status_code == 200, r.text
    assert "from" not in r.json()["corrected"][0] and "hunter2" not in path.read_text()


def test_cli_history_says_what_was_corrected(astra, home, client, core, team):
    first = keep(client, ana(ACME, "2024-03-01"))["facts"][0]
    out = astra("metis", "edit", "team", first["id"], "--fact", "Ana works at Acme Labs.").output
    assert f"corrected {first['id']}: Ana works at Acme Labs. (was: “{ACME}”)" in out
    out = astra("metis", "memory", "team", "--history").output
    assert f"corrected from “{ACME}”, on {_today(core)}" in out
    assert "corrected from" not in astra("metis", "memory", "team").output
    out = astra("metis", "edit", "team", first["id"], "--said", "2024-03-02", "--source", "HR").output
    assert f"corrected {first['id']}: Ana works at Acme Labs." in out
    out = astra("metis", "memory", "team", "--history").output
    assert "corrected said 2024-03-01, source chat: standup, on" in out
    assert astra("metis", "edit", "team", first["id"], ok=False).exit_code == 2
