"""Attacks on the import of chat archives, as an attacker and an operator would try them: other workspaces' and
weaker keys, documents bases, job ids with path tricks, concurrent uploads and starts, crashes mid-job, a base
deleted under its job, hostile archives beyond the obvious, secrets and the conversations' text on disk."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from astralyx.auth.actor import Actor
from astralyx.metis.memory import archives

from .archives_kit import (
    CHATGPT,
    CLAUDE,
    URL,
    chatgpt_conversation,
    claude_conversation,
    extractor_answer,
    facts_kept,
    imports_folder,
    upload,
    wait_for,
    zipped,
)


def blocking(first_n: int = 0):
    """A scripted extractor that answers `first_n` calls at once, then holds each until released."""
    entered, release, calls = threading.Event(), threading.Event(), []

    def answer(request):
        calls.append(request)
        if len(calls) > first_n:
            entered.set()
            release.wait(30)
        return extractor_answer(request)

    return answer, entered, release, calls


def ended(core, job_id: str) -> None:
    while core.imports._running_here(job_id):
        time.sleep(0.02)


# -- who may call ---------------------------------------------------------------------------


def test_another_workspaces_key_reaches_no_job_of_this_one(client, team, core, key_client):
    team.reply(extractor_answer, always=True)
    job = upload(client, zipped(CHATGPT)).json()
    acme = key_client("admin", workspace="acme")
    for method, path, kw in (("get", f"{URL}/{job['id']}", {}), ("post", f"{URL}/{job['id']}/start", {"json": {"all": True}}),
                             ("delete", f"{URL}/{job['id']}", {}), ("get", URL, {})):
        r = getattr(acme, method)(path, **kw)
        assert (r.status_code, r.json()["error"]["code"]) == (404, "BASE_NOT_FOUND"), (method, path, r.text)
    # Its own memory of the same name knows no job of that id either.
    spec = {"kind": "memory", "sources": [], "extractor": {"deployment": "qwen3-4b"}}
    from .conftest import put_extractor
    put_extractor(acme, team.url)
    assert acme.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "team"}, "spec": spec}).status_code == 201
    for method, path, kw in (("get", f"{URL}/{job['id']}", {}), ("post", f"{URL}/{job['id']}/start", {"json": {"all": True}}),
                             ("delete", f"{URL}/{job['id']}", {})):
        r = getattr(acme, method)(path, **kw)
        assert (r.status_code, r.json()["error"]["code"]) == (404, "IMPORT_NOT_FOUND"), (method, path, r.text)
    assert acme.get(URL).json()["imports"] == []
    assert client.get(f"{URL}/{job['id']}").json()["state"] == "ready" and team.chat_requests == []


@pytest.mark.parametrize("role", ["viewer", "caller"])
def test_a_viewer_or_callers_key_may_not_read_start_or_cancel(client, team, key_client, role):
    job = upload(client, zipped(CHATGPT)).json()
    weak = key_client(role)
    for method, path, kw in (("get", f"{URL}/{job['id']}", {}), ("post", f"{URL}/{job['id']}/start", {"json": {"all": True}}),
                             ("delete", f"{URL}/{job['id']}", {}), ("get", URL, {}),
                             ("post", URL, {"files": {"archive": ("x.zip", zipped(CLAUDE), "application/zip")}})):
        r = getattr(weak, method)(path, **kw)
        assert (r.status_code, r.json()["error"]["code"]) == (403, "PERMISSION_DENIED"), (method, path, r.text)
    assert client.get(f"{URL}/{job['id']}").json()["state"] == "ready"


def test_a_documents_base_is_no_target(client, team, core):
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "docs"},
                                                            "spec": {"kind": "documents", "sources": []}}).status_code == 201
    docs = URL.replace("/team/", "/docs/")
    r = client.post(docs, files={"archive": ("x.zip", zipped(CHATGPT), "application/zip")})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "NOT_A_MEMORY"), r.text
    for method, path in (("get", docs), ("get", f"{docs}/imp_0123"), ("delete", f"{docs}/imp_0123"),
                         ("post", f"{docs}/imp_0123/start")):
        r = getattr(client, method)(path)
        assert (r.status_code, r.json()["error"]["code"]) == (409, "NOT_A_MEMORY"), (method, path, r.text)
    assert not (core.bases.find("default", "docs").folder / ".imports").exists()


@pytest.mark.parametrize("job_id", ["%2E%2E", "..%2F..%2Fteam", "imp_..", "imp_a%2F..", "imp_" + "a" * 300,
                                    "imp_" + "a" * 5000, "imp_²³", "imp_ⅷ", "imp_%00", "imp_a%20b", ".imports", "imp_"])
def test_job_ids_with_path_tricks_are_not_found(client, team, core, job_id):
    upload(client, zipped(CHATGPT))
    for method, path in (("get", f"{URL}/{job_id}"), ("delete", f"{URL}/{job_id}"), ("post", f"{URL}/{job_id}/start")):
        r = getattr(client, method)(path, json={"all": True}) if method == "post" else getattr(client, method)(path)
        assert r.status_code == 404, (method, path, r.status_code, r.text)
        assert r.json()["error"]["code"] in ("IMPORT_NOT_FOUND", "NOT_FOUND"), r.text
    assert len(client.get(URL).json()["imports"]) == 1


# -- at the same time ------------------------------------------------------------------------


def test_the_same_archive_uploaded_twice_at_once_is_one_job(client, team, core):
    data = zipped([chatgpt_conversation(f"c{i}", f"chat {i}", "2026-01-01 10:00", [("user", "x" * 200)])
                   for i in range(3000)])
    answers: list = []
    barrier = threading.Barrier(3)

    def send():
        barrier.wait()
        answers.append(upload(client, data))

    threads = [threading.Thread(target=send) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.status_code for r in answers) == [200, 200, 201], [r.text[:200] for r in answers]
    assert len({r.json()["id"] for r in answers}) == 1
    assert len(client.get(URL).json()["imports"]) == 1


def test_different_archives_at_once_are_two_jobs(client, team):
    answers: list = []
    barrier = threading.Barrier(2)

    def send(data):
        barrier.wait()
        answers.append(upload(client, data))

    threads = [threading.Thread(target=send, args=(d,)) for d in (zipped(CHATGPT), zipped(CLAUDE))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(r.status_code for r in answers) == [201, 201]
    assert len(client.get(URL).json()["imports"]) == 2


def test_start_called_twice_at_once_reads_each_conversation_once(client, team, core, other):
    team.reply(extractor_answer, always=True)
    job = upload(client, zipped(CHATGPT)).json()
    barrier = threading.Barrier(4)
    answers: list = []

    def start(i):
        barrier.wait()
        if i % 2:  # another process (a replica) on the same data directory too
            answers.append(other.imports.start(Actor.local_owner("default"), "team", job["id"], everything=True).model_dump())
        else:
            r = client.post(f"{URL}/{job['id']}/start", json={"all": True})
            assert r.status_code == 200, r.text
            answers.append(r.json())

    threads = [threading.Thread(target=start, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(a["chosen"] == answers[0]["chosen"] for a in answers)
    done = wait_for(client, job["id"])
    ended(core, job["id"])
    assert done["state"] == "finished"
    read = [r["messages"][-1]["content"] for r in team.chat_requests if r.get("messages")]
    assert len(read) == done["progress"]["total"] == len(done["chosen"])
    assert done["proposed"] == sum(1 for _ in done["review"]["subjects"] for _ in _["attributes"] for _ in _["proposals"])
    lines = (imports_folder(core) / job["id"] / "proposals.jsonl").read_text().splitlines()
    assert len(lines) == len(done["chosen"])


# -- crashes and the disk --------------------------------------------------------------------


def test_a_line_a_crash_cut_short_does_not_swallow_the_next_conversation(client, team, core):
    team.reply(extractor_answer)  # the first conversation is read, then the extractor goes away
    team.reply(status=503)
    job = upload(client, zipped(CHATGPT)).json()
    client.post(f"{URL}/{job['id']}/start", json={"all": True})
    assert wait_for(client, job["id"])["state"] == "failed"
    ended(core, job["id"])
    # A kill -9 in the middle of writing the next conversation's line leaves half of it, without its newline.
    with open(imports_folder(core) / job["id"] / "proposals.jsonl", "a") as f:
        f.write('{"conversation": "c-pt", "facts": [{"subj')
    team.reply(extractor_answer, always=True)
    client.post(f"{URL}/{job['id']}/start", json={})
    done = wait_for(client, job["id"])
    assert done["state"] == "finished" and done["progress"]["done"] == 3, done
    facts = sorted(p["fact"] for g in done["review"]["subjects"] for a in g["attributes"] for p in a["proposals"])
    assert facts == ["Ana leads the data team.", "Ana works in research.", "Bruno mora em Recife."]


def test_an_upload_a_crash_cut_short_leaves_no_conversations_on_disk(client, team, core):
    import os

    upload(client, zipped(CHATGPT))
    root = imports_folder(core)
    # What a kill -9 between writing the conversations and the job's record leaves (whatever the folder's name).
    for name in ("imp_0123456789abcdef", ".imp_89abcdef01234567.new"):
        (root / name).mkdir()
        (root / name / "conversations.json").write_text(json.dumps([{"text": "Ana's PIN is 4321"}]))
        if name.startswith("."):  # written whole aside, the rename into place not done
            record = {"id": name[1:21], "state": "ready", "created_at": "2026-12-04T00:00:00Z"}
            (root / name / "job.json").write_text(json.dumps(record))
        old = time.time() - 3600
        os.utime(root / name / "conversations.json", (old, old))
        os.utime(root / name, (old, old))
    assert len(client.get(URL).json()["imports"]) == 1  # a listing purges
    assert sorted(p.name for p in root.iterdir() if p.is_dir()) == [client.get(URL).json()["imports"][0]["id"]]


def test_the_proposals_file_is_the_owners_alone(client, team, core):
    team.reply(extractor_answer, always=True)
    job = upload(client, zipped(CHATGPT)).json()
    client.post(f"{URL}/{job['id']}/start", json={"all": True})
    wait_for(client, job["id"])
    folder = imports_folder(core) / job["id"]
    for file in folder.iterdir():
        if file.is_file() and file.name != ".lock":
            assert file.stat().st_mode & 0o077 == 0, (file.name, oct(file.stat().st_mode))


def test_secrets_said_in_a_conversation_reach_no_file_and_no_answer(client, team, core):
    team.reply(extractor_answer, always=True)
    said = "Ana moved to research; my password is sunflower42"
    conv = chatgpt_conversation("c-s", "Wifi: password is sunflower42", "2026-10-01 10:00", [("user", said)])
    job = upload(client, zipped([conv, *CHATGPT])).json()
    client.post(f"{URL}/{job['id']}/start", json={"all": True})
    done = wait_for(client, job["id"])
    ended(core, job["id"])
    assert done["state"] == "finished" and done["left_out_secrets"] >= 1
    folder = imports_folder(core) / job["id"]
    on_disk = {f.name: f.read_bytes() for f in folder.rglob("*") if f.is_file()}
    assert not any(b"sunflower42" in data for data in on_disk.values()), {k: v[:3000] for k, v in on_disk.items()}
    assert "sunflower42" not in json.dumps(done) and "sunflower42" not in client.get(URL).text


def test_an_extractor_error_that_echoes_the_conversation_keeps_no_secret_on_disk(client, team, core):
    said = "Ana moved to research; my password is sunflower42"
    echo = {"error": {"message": f"invalid request near '{said}'"}}
    team.reply(status=400, body=echo)  # the one conversation: an error that quotes it (skipped, or stopping the job)
    team.reply(status=503, body=echo)
    conv = chatgpt_conversation("c-s", "Wifi", "2026-10-01 10:00", [("user", said)])
    job = upload(client, zipped([conv, CHATGPT[1]])).json()
    client.post(f"{URL}/{job['id']}/start", json={"all": True})
    done = wait_for(client, job["id"])
    ended(core, job["id"])
    assert done["state"] in ("failed", "finished") and (done["error"] or done["errors"]), done
    cut = {"conversations.json"}  # the text itself, while the job may be started again (failed)
    folder = imports_folder(core) / job["id"]
    on_disk = {f.name: f.read_bytes() for f in folder.rglob("*") if f.is_file() and f.name not in cut}
    assert not any(b"sunflower42" in data for data in on_disk.values()), on_disk
    assert "sunflower42" not in json.dumps(done)


def test_the_conversations_text_goes_at_the_end_at_cancel_and_at_expiry(client, team, core):
    from datetime import UTC, datetime, timedelta

    team.reply(extractor_answer, always=True)
    finished = upload(client, zipped(CHATGPT)).json()
    client.post(f"{URL}/{finished['id']}/start", json={"all": True})
    wait_for(client, finished["id"])
    cancelled = upload(client, zipped(CLAUDE)).json()
    client.delete(f"{URL}/{cancelled['id']}")
    stale = upload(client, json.dumps(CLAUDE).encode() + b" ", "conversations.json").json()
    core.imports.purge(now=datetime.now(UTC) + timedelta(hours=25))
    for job in (finished, cancelled, stale):
        folder = imports_folder(core) / job["id"]
        assert not (folder / "conversations.json").exists(), job["id"]
        assert not any(b"Ana moved" in f.read_bytes() or b"launch moved" in f.read_bytes()
                       for f in folder.rglob("*") if f.is_file())


def _age(core, job_id: str, days: float) -> None:
    """The job as it is `days` after its upload (its record's date moved back)."""
    from datetime import UTC, datetime, timedelta

    file = imports_folder(core) / job_id / "job.json"
    record = json.loads(file.read_text())
    record["created_at"] = (datetime.now(UTC) - timedelta(days=days)).isoformat().replace("+00:00", "Z")
    file.write_text(json.dumps(record))


def test_a_job_left_more_than_a_day_is_not_started_nor_kept_while_the_server_runs(client, team, core):
    job = upload(client, zipped(CHATGPT)).json()
    _age(core, job["id"], 2)
    r = client.post(f"{URL}/{job['id']}/start", json={"all": True})
    assert (r.status_code, r.json()["error"]["code"]) == (409, "IMPORT_ENDED"), r.text
    assert not (imports_folder(core) / job["id"] / "conversations.json").exists()
    assert client.get(f"{URL}/{job['id']}").json()["state"] == "expired" and team.chat_requests == []
    other = upload(client, zipped(CLAUDE)).json()
    _age(core, other["id"], 2)
    assert client.get(f"{URL}/{other['id']}").json()["state"] == "expired"
    assert not (imports_folder(core) / other["id"] / "conversations.json").exists()


def test_a_job_no_one_looks_at_loses_its_conversations_after_a_day_without_a_restart(home, client, team, core,
                                                                                      monkeypatch):
    from astralyx.config import Settings
    from astralyx.core import Astralyx
    from astralyx.metis.memory import imports

    job = upload(client, zipped(CHATGPT)).json()
    monkeypatch.setattr(imports, "SWEEP", 0.05)
    running = Astralyx(Settings.load(home)).start()  # a server that runs on, with no upload, listing or look
    try:
        _age(core, job["id"], 2)
        text = imports_folder(core) / job["id"] / "conversations.json"
        deadline = time.monotonic() + 60
        while text.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not text.exists()
        assert json.loads((imports_folder(core) / job["id"] / "job.json").read_text())["state"] == "expired"
    finally:
        running.close()


# -- a base deleted under its job ------------------------------------------------------------


def test_the_memory_deleted_while_its_import_runs(client, team, core):
    answer, entered, release, calls = blocking()
    team.reply(answer, always=True)
    job = upload(client, zipped(CHATGPT)).json()
    client.post(f"{URL}/{job['id']}/start", json={"all": True})
    assert entered.wait(30)
    folder = core.bases.find("default", "team").folder
    assert client.delete("/v1/metis/knowledge-bases/team").status_code == 200
    release.set()
    ended(core, job["id"])
    assert not folder.exists()  # not made again by the job's last steps
    assert len(calls) == 1  # the job ended with the conversation it was reading
    r = client.get(f"{URL}/{job['id']}")
    assert (r.status_code, r.json()["error"]["code"]) == (404, "BASE_NOT_FOUND")
    spec = {"kind": "memory", "sources": [], "extractor": {"deployment": "qwen3-4b"}}
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "team"}, "spec": spec}).status_code == 201
    assert client.get(URL).json()["imports"] == [] and facts_kept(client) == []


def test_the_memory_deleted_while_its_job_writes_its_state_is_not_made_again(client, team, core):
    """The deletion lands while the job's thread holds its record (between reading and writing it back)."""
    job = upload(client, zipped(CHATGPT)).json()
    base_folder = core.bases.find("default", "team").folder
    folder = imports_folder(core) / job["id"]

    def change(record):
        assert client.delete("/v1/metis/knowledge-bases/team").status_code == 200
        record["state"] = "finished"

    assert core.imports._update(folder, change) is None
    assert not base_folder.exists()


# -- hostile archives beyond the obvious -----------------------------------------------------


def _entry(name: str, data: bytes, *, mode: int | None = None, zip64: bool = False) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        if mode is not None:
            info.external_attr = mode << 16
        with z.open(info, "w", force_zip64=zip64) as f:
            f.write(data)
    return out.getvalue()


def _zip64_lying(data: bytes, declared: int) -> bytes:
    """A one-entry zip whose central directory declares, in a zip64 extra field, `declared` bytes unpacked."""
    b = bytearray(_entry("conversations.json", data))
    c = b.find(b"PK\x01\x02")
    name, extra, comment = (int.from_bytes(b[c + i:c + i + 2], "little") for i in (28, 30, 32))
    b[c + 24:c + 28] = b"\xff\xff\xff\xff"
    b[c + 30:c + 32] = (extra + 12).to_bytes(2, "little")
    at = c + 46 + name + extra
    b[at:at] = (1).to_bytes(2, "little") + (8).to_bytes(2, "little") + declared.to_bytes(8, "little")
    e = b.find(b"PK\x05\x06")
    b[e + 12:e + 16] = (int.from_bytes(b[e + 12:e + 16], "little") + 12).to_bytes(4, "little")
    return bytes(b)


def test_a_symlink_entry_is_not_followed(client, team):
    r = upload(client, _entry("conversations.json", b"/etc/passwd", mode=0o120777))
    assert (r.status_code, r.json()["error"]["code"]) == (422, "ARCHIVE_INVALID"), r.text
    assert client.get(URL).json()["imports"] == []


def test_a_zip64_header_that_lies(client, team):
    bomb = b"[" + b" " * 3_000_000 + b"]"
    r = upload(client, _zip64_lying(bomb, 100))
    assert r.status_code in (413, 422) and r.json()["error"]["code"] in ("ARCHIVE_TOO_LARGE", "ARCHIVE_INVALID"), r.text
    r = upload(client, _zip64_lying(json.dumps(CLAUDE).encode(), 2**62))
    assert (r.status_code, r.json()["error"]["code"]) == (413, "ARCHIVE_TOO_LARGE"), r.text
    assert client.get(URL).json()["imports"] == []


def test_a_million_tiny_conversations(client, team):
    r = upload(client, b"[" + b",".join([b"{}"] * 1_000_000) + b"]", "conversations.json")
    assert (r.status_code, r.json()["error"]["code"]) == (413, "ARCHIVE_TOO_LARGE"), r.text
    assert client.get(URL).json()["imports"] == []


def test_a_chatgpt_tree_with_a_cycle_and_no_current_node_is_read_not_looped():
    from ...conftest import run

    conv = {"id": "c", "title": "Loop", "create_time": 1.0, "mapping": {
        "r": {"id": "r", "parent": None, "children": ["a"], "message": None},
        "a": {"id": "a", "parent": "r", "children": ["b"], "message": {
            "author": {"role": "user"}, "content": {"content_type": "text", "parts": ["hi"]}}},
        "b": {"id": "b", "parent": "a", "children": ["a"], "message": None}}}
    archive = run(lambda: archives.read_archive(json.dumps([conv]).encode()), timeout=30)
    assert [m.text for m in archive.conversations[0].messages] == ["hi"]


def test_one_id_many_times_gets_short_distinct_ids():
    conv = claude_conversation("u", "Same", "2026-05-02 09:00", [("human", "hi")])
    archive = archives.read_archive(json.dumps([conv] * 2000).encode())
    ids = [c.id for c in archive.conversations]
    assert len(set(ids)) == 2000 and max(len(i) for i in ids) <= 110


def test_surrogates_nul_and_escapes_in_titles_and_text(client, team, core):
    team.reply(extractor_answer, always=True)
    claude = claude_conversation("u-x", "Ana\ud800 \x00plan\x1b[31m\u202e", "2026-09-20 08:00",
                                 [("human", "Ana leads the platform team now.\ud83d \x00"), ("assistant", "Noted.")])
    r = upload(client, json.dumps([claude]).encode(), "conversations.json")  # lone surrogates, as JSON escapes
    assert r.status_code == 201, r.text
    (listed,) = r.json()["conversations"]
    assert "\x00" not in listed["title"] and "\x1b" not in listed["title"] and "\u202e" not in listed["title"]
    client.post(f"{URL}/{r.json()['id']}/start", json={"all": True})
    done = wait_for(client, r.json()["id"])
    assert done["state"] == "finished" and done["review"]["count"] == 1, done  # its proposal is not lost to its title
    (group,) = done["review"]["subjects"]
    proposal = group["attributes"][0]["proposals"][0]
    kept = client.post("/v1/metis/knowledge-bases/team/memory",
                       json={"facts": [{k: proposal[k] for k in ("subject", "attribute", "fact", "source", "said_at")}]})
    assert kept.status_code == 200, kept.text


def test_invalid_utf8_inside_a_zip(client, team):
    r = upload(client, _entry("conversations.json", b'[{"uuid": "u", "name": "\xff\xfe", "chat_messages": []}]'))
    assert (r.status_code, r.json()["error"]["code"]) == (422, "ARCHIVE_INVALID"), r.text


def test_a_huge_single_message_is_one_conversation_not_read_and_its_text_goes(client, team, core):
    team.reply(extractor_answer, always=True)
    big = claude_conversation("u-big", "Big", "2026-09-20 08:00", [("human", os.urandom(2_500_000).hex())])
    job = upload(client, zipped([big, *CLAUDE])).json()
    client.post(f"{URL}/{job['id']}/start", json={"all": True})
    done = wait_for(client, job["id"])
    assert done["state"] == "finished" and done["progress"]["done"] == 3, done
    assert [e["code"] for e in done["errors"]] == ["CONVERSATION_TOO_LONG"]
    assert not (imports_folder(core) / job["id"] / "conversations.json").exists()


# -- the review, kept in part ----------------------------------------------------------------


def _keep(client, *proposals):
    r = client.post("/v1/metis/knowledge-bases/team/memory", json={"facts": [
        {k: p[k] for k in ("subject", "attribute", "fact", "source", "said_at")} for p in proposals]})
    assert r.status_code == 200, r.text


@pytest.mark.parametrize("kept", ["march", "october"])
def test_the_review_read_again_after_keeping_part_of_it(client, team, kept):
    team.reply(extractor_answer, always=True)
    job = upload(client, zipped(CHATGPT)).json()
    client.post(f"{URL}/{job['id']}/start", json={"conversations": ["c-standup", "c-march"]})
    done = wait_for(client, job["id"])
    march, october = done["review"]["subjects"][0]["attributes"][0]["proposals"]
    _keep(client, march if kept == "march" else october)
    review = client.get(f"{URL}/{job['id']}").json()["review"]
    (attribute,) = review["subjects"][0]["attributes"]
    march, october = attribute["proposals"]
    assert review["ticked"] == 1
    if kept == "march":
        assert march["known"] and not march["ticked"] and october["ticked"] and october["status"] == "replaces"
        assert october["replaces"]["fact"] == "Ana leads the data team."
        assert attribute["holds_now"]["fact"] == "Ana leads the data team."
    else:
        assert october["known"] and not october["ticked"] and march["ticked"] and march["status"] == "older"
        assert march["current"]["fact"] == "Ana works in research."
    # Keeping the rest as ticked gives the periods the review showed.
    assert march["period"]["label"] == "history 2026-03-01 – 2026-10-12", march
    assert october["period"]["label"] == "current from 2026-10-12", october
    _keep(client, *(p for p in (march, october) if p["ticked"]))
    memory = client.get("/v1/metis/knowledge-bases/team/memory", params={"history": "true"}).json()
    (fact,) = [f for g in memory["subjects"] for f in g["facts"]]
    assert fact["fact"] == "Ana works in research." and [f["fact"] for f in fact["replaced"]] == ["Ana leads the data team."]
    again = client.get(f"{URL}/{job['id']}").json()["review"]
    assert again["ticked"] == 0


# -- a server killed (kill -9) in the middle of a job -----------------------------------------

ROOT = Path(__file__).resolve().parents[3]
CHILD = r"""
import sys, threading
from astralyx.auth.actor import Actor
from astralyx.config import Settings
from astralyx.core import Astralyx

core = Astralyx(Settings.load(sys.argv[1])).start()
core.imports.start(Actor.local_owner("default"), "team", sys.argv[2], everything=True)
print("started", flush=True)
threading.Event().wait()
"""


def test_a_server_killed_mid_job_is_continued_by_the_next_and_nothing_is_half_written(client, team, core, home):
    answer, entered, release, calls = blocking(first_n=1)  # the second conversation is being read when it dies
    team.reply(answer, always=True)
    job = upload(client, zipped(CHATGPT)).json()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(home), job["id"]], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert entered.wait(60), child.stderr.read() if child.poll() is not None else "no second call"
        folder = imports_folder(core) / job["id"]
        assert len((folder / "proposals.jsonl").read_text().splitlines()) == 1
        # Another process runs it: following it here does not read it a second time meanwhile.
        assert client.get(f"{URL}/{job['id']}").json()["state"] == "running"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    release.set()
    done = wait_for(client, job["id"])  # following it takes it over, from the conversation the dead one was reading
    ended(core, job["id"])
    assert done["state"] == "finished" and done["progress"]["done"] == 3, done
    lines = [json.loads(x) for x in (folder / "proposals.jsonl").read_text().splitlines()]
    assert sorted(x["conversation"] for x in lines) == sorted(done["chosen"])  # each once: no proposal twice
    facts = sorted(p["fact"] for g in done["review"]["subjects"] for a in g["attributes"] for p in a["proposals"])
    assert facts == ["Ana leads the data team.", "Ana works in research.", "Bruno mora em Recife."]
    assert len(calls) == 4  # the one read when the process died is read again, no other
    left = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert [p for p in left if p.endswith(".tmp") or p == "conversations.json"] == [], left


# -- the CLI ---------------------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"[" * 100_000 + b"]" * 100_000,
                                     b'[{"mapping": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]"])
def test_the_cli_refuses_a_file_that_nests_too_deep_with_a_message(tmp_path, team, home, monkeypatch, content):
    from click.testing import CliRunner

    from astralyx.cli import cli

    monkeypatch.delenv("ASTRALYX_API", raising=False)
    file = tmp_path / "conversations.json"
    file.write_bytes(content)
    result = CliRunner().invoke(cli, ["metis", "remember", "team", "--from", str(file), "--all"],
                                env={"ASTRALYX_HOME": str(home)})
    assert result.exit_code != 0 and not isinstance(result.exception, RecursionError), result.exception
    assert result.exit_code == 2 and "nests too deep" in result.output, result.output
    assert team.chat_requests == []


def test_the_archives_name_is_plain_text_never_a_path(client, team, core):
    r = upload(client, zipped(CLAUDE), "../../\x1b[2Jexport\u202e.zip")
    assert r.status_code == 201, r.text
    assert r.json()["archive"]["name"] == "../../[2Jexport.zip"
    assert sorted(p.name for p in imports_folder(core).iterdir() if p.is_dir()) == [r.json()["id"]]
