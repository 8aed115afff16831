"""Import a chat archive into a memory over the API: upload, choose, read in the background, review, keep.

Real archives the tests write (ChatGPT's and Claude's formats), the real app, a scripted extractor at the
network edge; hostile archives are refused with a 4xx and leave nothing behind.
"""

from __future__ import annotations

import io
import json
import threading
import time
import zipfile
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient

from astralyx.auth.actor import Actor
from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.metis.memory import archives
from astralyx.server.app import create_app

from ...conftest import ADMIN_TOKEN
from .archives_kit import (
    CHATGPT,
    CLAUDE,
    URL,
    chatgpt_conversation,
    extractor_answer,
    facts_kept,
    imports_folder,
    upload,
    wait_for,
    zipped,
)
from .conftest import put_extractor


def test_a_chatgpt_export_lists_its_conversations_and_the_chosen_are_read(client, team, core):
    team.reply(extractor_answer, always=True)
    r = upload(client, zipped(CHATGPT))
    assert r.status_code == 201, r.text
    job = r.json()
    assert job["state"] == "ready" and job["archive"]["format"] == "chatgpt"
    listed = {c["title"]: c for c in job["conversations"]}
    # Oldest first; the edited branch, the system node and the tool's output are not messages.
    assert [c["title"] for c in job["conversations"]] == ["Planning in March", "Empty chat", "Reunião em São Paulo",
                                                          "Team standup"]
    assert listed["Team standup"]["messages"] == 2 and listed["Empty chat"]["messages"] == 0
    assert listed["Team standup"]["created_at"] == "2026-10-12T09:00:00Z"
    assert team.chat_requests == [] and facts_kept(client) == []  # nothing read before it is chosen

    r = client.post(f"{URL}/{job['id']}/start", json={"conversations": ["c-standup", "c-march"]})
    assert r.status_code == 200, r.text
    assert r.json()["state"] == "running" and r.json()["progress"]["total"] == 2
    done = wait_for(client, job["id"])
    assert done["state"] == "finished", done
    assert done["progress"]["done"] == 2 and done["progress"]["eta_seconds"] == 0
    # One extractor call per conversation (each fits one window); the edited-away branch was not sent.
    assert len(team.chat_requests) == 2
    sent = " ".join(r["messages"][-1]["content"] for r in team.chat_requests)
    assert "marketing" not in sent and "TOOL OUTPUT" not in sent and "Bruno" not in sent
    # The conversations' text is gone with the job's end; the proposals stay for the review.
    folder = imports_folder(core) / job["id"]
    assert not (folder / "conversations.json").exists() and (folder / "proposals.jsonl").exists()
    assert facts_kept(client) == []  # nothing kept until the person confirms

    review = done["review"]
    (ana,) = [g for g in review["subjects"] if g["subject"] == "Ana"]
    (role,) = ana["attributes"]
    # Two conversations say different things of Ana's role: side by side, each with its date and period.
    assert role["conflict"] is True
    march, october = role["proposals"]
    assert (march["fact"], march["said_at"], march["conversation"]["title"]) == (
        "Ana leads the data team.", "2026-03-01T10:00:00Z", "Planning in March")
    assert march["period"]["label"] == "history 2026-03-01 – 2026-10-12"
    assert october["period"]["label"] == "current from 2026-10-12"
    assert march["ticked"] and october["ticked"] and march["source"] == "ChatGPT: Planning in March"

    # Keeping goes through POST …/memory: the periods the review showed are the memory's.
    chosen = [{k: p[k] for k in ("subject", "attribute", "fact", "source", "said_at")} for p in (march, october)]
    kept = client.post("/v1/metis/knowledge-bases/team/memory", json={"facts": chosen})
    assert kept.status_code == 200, kept.text
    memory = client.get("/v1/metis/knowledge-bases/team/memory", params={"history": "true"}).json()
    (fact,) = [f for g in memory["subjects"] for f in g["facts"]]
    assert fact["fact"] == "Ana works in research." and fact["said_at"] == "2026-10-12T09:00:00Z"
    assert [(f["fact"], f["until"]) for f in fact["replaced"]] == [("Ana leads the data team.", "2026-10-12T09:00:00Z")]

    # Reviewed again now: what is known is unticked.
    again = client.get(f"{URL}/{job['id']}").json()["review"]
    assert again["ticked"] == 0 and all(p["known"] for g in again["subjects"] for a in g["attributes"]
                                        for p in a["proposals"])


def test_a_claude_conversations_json_with_filters_and_a_newer_fact_in_the_memory(client, team):
    team.reply(extractor_answer, always=True)
    client.post("/v1/metis/knowledge-bases/team/memory", json={"facts": [
        {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "said_at": "2026-10-12"}]})
    r = upload(client, json.dumps(CLAUDE).encode(), "conversations.json")
    assert r.status_code == 201, r.text
    job = r.json()
    assert job["archive"]["format"] == "claude"
    assert [c["title"] for c in job["conversations"]] == ["Launch planning", "Ana's new role"]
    # A title glob (case-insensitive) and dates choose.
    r = client.post(f"{URL}/{job['id']}/start", json={"title": "*ROLE*", "since": "2026-09-01", "until": "2026-09-30"})
    assert r.json()["chosen"] == ["u-2"], r.text
    done = wait_for(client, job["id"])
    (group,) = done["review"]["subjects"]
    (proposal,) = group["attributes"][0]["proposals"]
    # Said before what the memory holds: it would go to the history, until the newer fact's date.
    assert proposal["status"] == "older" and proposal["current"]["fact"] == "Ana works in research."
    assert proposal["period"]["label"] == "history 2026-09-20 – 2026-10-12"
    assert proposal["source"] == "Claude: Ana's new role" and group["attributes"][0]["conflict"] is False
    assert group["attributes"][0]["holds_now"]["fact"] == "Ana works in research."


def test_the_same_archive_again_continues_its_job_and_unknown_choices_are_refused(client, team):
    team.reply(extractor_answer, always=True)
    first = upload(client, zipped(CHATGPT)).json()
    again = upload(client, zipped(CHATGPT))
    assert again.status_code == 200 and again.json()["id"] == first["id"]
    for body, code in (({}, "NOTHING_CHOSEN"), ({"conversations": ["nope"]}, "NOTHING_CHOSEN"),
                       ({"conversations": ["c-empty"]}, "NOTHING_CHOSEN"), ({"since": "last week"}, "INVALID_DATE"),
                       ({"all": "yes"}, "NOTHING_CHOSEN")):
        r = client.post(f"{URL}/{first['id']}/start", json=body)
        assert (r.status_code, r.json()["error"]["code"]) == (422, code), (body, r.text)
    r = client.get(f"{URL}/imp_0123456789abcdef")
    assert (r.status_code, r.json()["error"]["code"]) == (404, "IMPORT_NOT_FOUND")
    assert client.get(f"{URL}/..%2f..").status_code == 404


def test_secrets_are_left_out_of_every_proposal(client, team):
    team.reply(extractor_answer, always=True)
    conv = chatgpt_conversation("c-s", "Wifi", "2026-10-01 10:00", [("user", "Ana moved to research; my password is x")])
    job = upload(client, zipped([conv])).json()
    client.post(f"{URL}/{job['id']}/start", json={"all": True})
    done = wait_for(client, job["id"])
    assert done["left_out_secrets"] == 1 and done["review"]["left_out_secrets"] == 1
    assert "sunflower42" not in json.dumps(done)
    folder_text = json.dumps(done)
    assert "password" not in [a["attribute"] for g in done["review"]["subjects"] for a in g["attributes"]], folder_text


def _zip(entries: dict[str, bytes], method=zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return out.getvalue()


def _lying_size(data: bytes, declared: int) -> bytes:
    """A one-entry zip whose headers declare `declared` bytes unpacked (a bomb that lies about itself)."""
    b = bytearray(data)
    local, central = b.find(b"PK\x03\x04"), b.find(b"PK\x01\x02")
    b[local + 22 : local + 26] = b[central + 24 : central + 28] = declared.to_bytes(4, "little")
    return bytes(b)


HOSTILE = {
    "not a zip nor JSON": (b"\x00\x01binary", 422, "ARCHIVE_INVALID"),
    "JSON that is not a list": (b'{"title": "x"}', 422, "ARCHIVE_INVALID"),
    "a list of strings": (b'["a", "b"]', 422, "ARCHIVE_INVALID"),
    "neither vendor": (b'[{"title": "x", "messages": []}]', 422, "ARCHIVE_INVALID"),
    "not UTF-8": (b'["\xff\xfe"]', 422, "ARCHIVE_INVALID"),
    "nested deep": (b"[" * 100_000 + b"]" * 100_000, 422, "ARCHIVE_INVALID"),
    "a broken zip": (b"PK\x03\x04 not really", 422, "ARCHIVE_INVALID"),
    "path tricks only": (_zip({"../conversations.json": b"[]", "a/b/conversations.json": b"[]",
                               "./conversations.json": b"[]", "Conversations.JSON": b"[]"}), 422, "ARCHIVE_INVALID"),
    "a zip in the zip": (_zip({"export.zip": zipped(CHATGPT)}), 422, "ARCHIVE_INVALID"),
    "conversations.json that is a zip": (_zip({"conversations.json": zipped(CHATGPT)}), 422, "ARCHIVE_INVALID"),
    "two candidates": (_zip({"a/conversations.json": b"[]", "b/conversations.json": b"[]"}), 422, "ARCHIVE_INVALID"),
    "not JSON inside": (_zip({"conversations.json": b"hello"}), 422, "ARCHIVE_INVALID"),
    "a bomb (ratio)": (_zip({"conversations.json": b"[" + b" " * 4_000_000 + b"]"}), 413, "ARCHIVE_TOO_LARGE"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_or_wrong_archives_get_a_4xx_and_leave_nothing(client, team, core, case):
    data, status, code = HOSTILE[case]
    r = upload(client, data)
    assert (r.status_code, r.json()["error"]["code"]) == (status, code), r.text
    assert client.get(URL).json()["imports"] == []
    assert not imports_folder(core).exists() or not any(imports_folder(core).iterdir())
    assert facts_kept(client) == [] and team.chat_requests == []


def test_a_bomb_that_lies_about_its_size_and_one_over_the_limit(client, team, core, monkeypatch):
    # Declared small, unpacks large: refused as read, not as declared (or its CRC fails): a 4xx either way.
    bomb = _zip({"conversations.json": b"[" + b" " * 3_000_000 + b"]"})
    lying = _lying_size(bomb, 1000)
    r = upload(client, lying)
    assert r.status_code in (413, 422) and r.json()["error"]["code"] in ("ARCHIVE_TOO_LARGE", "ARCHIVE_INVALID"), r.text
    # Over the documented limit of conversations.json (made small here: the test does not write 256 MB).
    monkeypatch.setattr(archives, "MAX_JSON_BYTES", 1000)
    big = zipped([chatgpt_conversation(f"c{i}", f"chat {i}", "2026-01-01 10:00", [("user", "x" * 50)]) for i in range(20)])
    r = upload(client, big)
    assert (r.status_code, r.json()["error"]["code"]) == (413, "ARCHIVE_TOO_LARGE"), r.text
    r = upload(client, json.dumps(CLAUDE * 10).encode(), "conversations.json")
    assert (r.status_code, r.json()["error"]["code"]) == (413, "ARCHIVE_TOO_LARGE"), r.text
    assert client.get(URL).json()["imports"] == [] and team.chat_requests == []


def test_the_export_one_folder_down_is_read(client, team):
    r = upload(client, zipped(CLAUDE, folder="data-2026-12-01/"))
    assert r.status_code == 201 and r.json()["archive"]["conversations"] == 2, r.text


def test_permissions_are_those_of_extraction(client, team, key_client):
    viewer = key_client("viewer")
    r = viewer.post(URL, files={"archive": ("x.zip", zipped(CLAUDE), "application/zip")})
    assert (r.status_code, r.json()["error"]["code"]) == (403, "PERMISSION_DENIED")
    editor = key_client("editor")
    assert editor.post(URL, files={"archive": ("x.zip", zipped(CLAUDE), "application/zip")}).status_code == 201


def test_cancel_stops_the_job_and_drops_its_conversations(client, team, core):
    entered, release = threading.Event(), threading.Event()

    def slow(request):
        entered.set()
        release.wait(30)
        return extractor_answer(request)

    team.reply(slow, always=True)
    job = upload(client, zipped(CHATGPT)).json()
    client.post(f"{URL}/{job['id']}/start", json={"all": True})
    assert entered.wait(30)
    r = client.delete(f"{URL}/{job['id']}")
    assert r.status_code == 200 and r.json()["state"] == "cancelled"
    release.set()
    folder = imports_folder(core) / job["id"]
    assert not (folder / "conversations.json").exists() and not (folder / "proposals.jsonl").exists()
    # Its thread ends after the conversation it was reading, writing nothing more.
    while core.imports._running_here(job["id"]):
        time.sleep(0.02)
    assert not (folder / "proposals.jsonl").exists()
    assert client.get(f"{URL}/{job['id']}").json()["state"] == "cancelled"
    r = client.post(f"{URL}/{job['id']}/start", json={"all": True})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "IMPORT_ENDED")
    assert client.delete(f"{URL}/{job['id']}").json()["removed"] is True
    assert client.get(f"{URL}/{job['id']}").status_code == 404
    assert facts_kept(client) == []


def test_a_job_older_than_a_day_loses_its_conversations_at_start(client, team, core):
    job = upload(client, zipped(CHATGPT)).json()
    folder = imports_folder(core) / job["id"]
    assert (folder / "conversations.json").exists()
    assert core.imports.purge(now=datetime.now(UTC) + timedelta(hours=25)) == 1
    assert not (folder / "conversations.json").exists()
    r = client.post(f"{URL}/{job['id']}/start", json={"all": True})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "IMPORT_ENDED")
    assert client.get(f"{URL}/{job['id']}").json()["state"] == "expired"


def test_an_unavailable_extractor_stops_the_job_and_start_continues_it(client, team):
    team.reply(extractor_answer)  # the first conversation is read, then the extractor fails
    team.reply(status=503)
    job = upload(client, zipped(CHATGPT)).json()
    client.post(f"{URL}/{job['id']}/start", json={"all": True})
    stopped = wait_for(client, job["id"])
    assert stopped["state"] == "failed" and stopped["error"]["code"] == "EXTRACTOR_UNAVAILABLE"
    assert stopped["progress"]["done"] == 1
    team.reply(extractor_answer, always=True)
    client.post(f"{URL}/{job['id']}/start", json={})
    done = wait_for(client, job["id"])
    assert done["state"] == "finished" and done["progress"]["done"] == 3
    read = [r["messages"][-1]["content"] for r in team.chat_requests if r.get("messages")]
    assert sum("Ana leads the data team" in t for t in read) == 1  # the first conversation was not read twice


def test_a_job_continues_after_a_restart_of_the_core(home, scripted_openai):
    """The core stops while a job reads; the next core continues from the conversation it stopped before."""
    entered, release = threading.Event(), threading.Event()
    calls = []

    def answer(request):
        calls.append(request)
        if len(calls) == 2:  # the second conversation: the core stops meanwhile
            entered.set()
            release.wait(30)
        return extractor_answer(request)

    scripted_openai.reply(answer, always=True)
    first = Astralyx(Settings.load(home)).start()
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with TestClient(create_app(first), headers=headers) as c:
        put_extractor(c, scripted_openai.url)
        spec = {"kind": "memory", "sources": [], "extractor": {"deployment": "qwen3-4b"}}
        assert c.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "team"}, "spec": spec}).status_code == 201
        job = upload(c, zipped(CHATGPT)).json()
        c.post(f"{URL}/{job['id']}/start", json={"all": True})
        assert entered.wait(30)
        folder = first.bases.find("default", "team").folder / ".imports" / job["id"]
        stopping = threading.Thread(target=first.close)
        stopping.start()
        while not first.imports.closing:
            time.sleep(0.01)
        release.set()
        stopping.join()
    on_disk = json.loads((folder / "job.json").read_text())
    assert on_disk["state"] == "running" and len((folder / "proposals.jsonl").read_text().splitlines()) == 2

    second = Astralyx(Settings.load(home)).start()
    try:
        with TestClient(create_app(second), headers=headers) as c:
            done = wait_for(c, job["id"])  # following it continues it
            assert done["state"] == "finished" and done["progress"]["done"] == 3, done
            assert len(calls) == 3  # each conversation read once
            facts = sorted(p["fact"] for g in done["review"]["subjects"] for a in g["attributes"] for p in a["proposals"])
            assert facts == ["Ana leads the data team.", "Ana works in research.", "Bruno mora em Recife."]
    finally:
        second.close()


def test_an_import_answers_its_documented_fields_not_what_the_job_keeps_for_itself(client, team, core):
    team.reply(extractor_answer, always=True)
    job = upload(client, zipped(CHATGPT)).json()
    folder = imports_folder(core) / job["id"]
    # What a job keeps for its own use (here as another version's runner would write it) stays in job.json.
    on_disk = json.loads((folder / "job.json").read_text())
    on_disk.update(conversations_file=str(folder / "conversations.json"), runner={"host": "10.0.0.7", "pid": 4242})
    on_disk["progress"]["claimed_at"] = on_disk["created_at"]
    (folder / "job.json").write_text(json.dumps(on_disk))
    documented = {"id", "knowledge_base", "state", "created_at", "started_at", "finished_at", "archive", "chosen",
                  "progress", "error", "errors", "left_out_secrets", "proposed"}

    def answered(answer: dict, *also: str) -> None:
        assert set(answer) == documented | set(also), set(answer) ^ (documented | set(also))
        assert set(answer["progress"]) <= {"done", "total", "rate_per_minute", "eta_seconds", "current"}
        assert str(folder) not in json.dumps(answer) and "10.0.0.7" not in json.dumps(answer)

    answered(client.get(f"{URL}/{job['id']}").json(), "conversations")
    answered(client.get(URL).json()["imports"][0])
    answered(client.post(f"{URL}/{job['id']}/start", json={"all": True}).json(), "conversations")
    done = wait_for(client, job["id"])
    answered(done, "conversations", "review")
    assert json.loads((folder / "job.json").read_text())["runner"] == {"host": "10.0.0.7", "pid": 4242}  # still the job's
    # The domain answers the model; the API, its JSON.
    assert core.imports.get(Actor.local_owner("default"), "team", job["id"]).model_dump() == done
    # The document says what each route answers.
    doc = client.get("/v1/openapi.json").json()
    paths, schemas = doc["paths"], doc["components"]["schemas"]

    def answer(path: str, method: str, status: str = "200") -> set[str]:
        schema = paths[f"/metis/knowledge-bases/{{base}}/imports{path}"][method]["responses"][status]["content"]
        schema = schema["application/json"]["schema"]
        refs = [s["$ref"] for s in schema.get("anyOf", [schema])]
        return {r.rsplit("/", 1)[1] for r in refs}

    assert answer("", "post", "201") == answer("", "post", "200") == {"ImportJob"}
    assert answer("", "get") == {"ImportListing"} and answer("/{job}/start", "post") == {"ImportJob"}
    assert answer("/{job}", "get") == {"ImportJob"} and answer("/{job}", "delete") == {"ImportJob", "ImportRemoved"}
    assert documented | {"conversations", "review"} == set(schemas["ImportJob"]["properties"])
    assert "review" not in schemas["ImportJob"]["required"]  # left out until the job has finished
