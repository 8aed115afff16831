"""Two real `astra serve` replicas on two ports over one PostgreSQL and one data directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import frontmatter
import httpx
import pytest

from .kit import Replica


@pytest.fixture(autouse=True)
def _source_roots(monkeypatch, tmp_path):
    """API keys name folder sources here: the operator allows the test's folder (metis/roots.py)."""
    monkeypatch.setenv("ASTRALYX_SOURCE_ROOTS", str(tmp_path))


MEMORY = "/v1/metis/knowledge-bases/team/memory"
TEAM = {"metadata": {"name": "team"}, "spec": {"kind": "memory"}}




@pytest.fixture
def replicas(home, postgres_server) -> Iterator[tuple[Replica, Replica]]:
    with postgres_server.database() as url:
        first = Replica(home, url).wait()  # the first makes the data directory; then the second joins
        second = Replica(home, url).wait()
        try:
            yield first, second
        finally:
            first.stop()
            second.stop()


def fact(subject: str, attribute: str, sentence: str, said_at: str) -> dict:
    return {"subject": subject, "attribute": attribute, "fact": sentence, "said_at": said_at, "source": "chat: replicas"}


def current_and_history(replica: Replica) -> dict[tuple[str, str], tuple[list[str], list[str]]]:
    """(subject, attribute) → (current facts, the facts they replaced), as a replica lists them."""
    listed = replica.http.get(MEMORY, params={"history": "true"}).json()
    out: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for group in listed["subjects"]:
        for item in group["facts"]:
            key = (item["subject"], item["attribute"])
            current, older = out.setdefault(key, ([], []))
            current.append(item["fact"])
            older.extend(r["fact"] for r in item.get("replaced", []))
    return out


def test_writes_on_one_replica_are_read_on_the_other_and_they_share_one_signing_key(replicas):
    a, b = replicas
    assert a.http.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}}).status_code == 201
    note = {"metadata": {"title": "Offsite"}, "content": "# Offsite\n\nThe offsite is in Porto in March.\n"}
    assert a.http.put("/v1/metis/knowledge-bases/handbook/notes/offsite.md", json=note).status_code == 201
    names = [k["metadata"]["name"] for k in b.http.get("/v1/metis/knowledge-bases").json()["knowledge_bases"]]
    assert "handbook" in names
    found = b.http.post("/v1/metis/knowledge-bases/handbook/search", json={"query": "offsite Porto"}).json()
    assert "Porto" in found["results"][0]["text"]
    created = b.http.post("/v1/keys", json={"role": "viewer"}).json()["key"]
    assert a.http.get("/v1/metis/knowledge-bases", headers={"Authorization": f"Bearer {created}"}).status_code == 200
    assert a.http.get("/v1/eos/receipts/public-key").json() == b.http.get("/v1/eos/receipts/public-key").json()


def test_a_sync_started_on_one_replica_is_followed_and_joined_on_the_other(replicas, tmp_path):
    from .scripted_openai import ScriptedOpenAI

    a, b = replicas
    src = tmp_path / "handbook"
    src.mkdir()
    for i in range(64):  # 64 passages: 4 calls of 16 to a slow embedding server
        (src / f"doc{i:02}.md").write_text(f"# Doc {i}\n\nParagraph about topic{i}.\n")
    with ScriptedOpenAI() as upstream:
        upstream.embed_delay = 1.0
        spec = {"model": "bge-m3", "kind": "embedding", "runtime": {"type": "upstream", "url": upstream.url}}
        assert a.http.put("/v1/eos/deployments/slow", json={"spec": spec}).status_code == 200
        base = {"metadata": {"name": "handbook"},
                "spec": {"sources": [{"folder": str(src)}], "embedding": {"deployment": "slow"}}}
        assert a.http.post("/v1/metis/knowledge-bases", json=base).status_code == 201
        started = a.http.post("/v1/metis/knowledge-bases/handbook/sync", params={"wait": "false"})
        assert started.status_code == 202 and started.json()["started"] is True
        job = started.json()["id"]
        seen = b.http.get("/v1/metis/knowledge-bases/handbook/sync").json()
        assert seen["id"] == job and seen["state"] in ("queued", "running")
        joined = b.http.post("/v1/metis/knowledge-bases/handbook/sync", params={"wait": "false"}).json()
        assert joined["id"] == job and joined["started"] is False
        report = b.http.post("/v1/metis/knowledge-bases/handbook/sync").json()  # waits on b for a's job
        assert report["added"] == 64
        texts = [t for r in upstream.requests if "input" in r for t in (r["input"] if isinstance(r["input"], list) else [])]
        assert sum("Paragraph about" in t for t in texts) == 64  # one sync across both replicas: each passage once
    final = a.http.get("/v1/metis/knowledge-bases/handbook/sync").json()
    assert (final["id"], final["state"]) == (job, "finished")


def test_50_concurrent_keeps_over_both_leave_one_current_fact_per_subject_and_attribute(replicas):
    a, b = replicas
    assert a.http.post("/v1/metis/knowledge-bases", json=TEAM).status_code == 201
    people = ["Ana", "Bruno", "Chen", "Dara", "Eli"]
    jobs = [(a if i % 2 else b, fact(people[i % 5], "city", f"{people[i % 5]} lives in city {i}.", f"2026-01-{1 + i // 5:02d}"))
            for i in range(50)]

    def keep(job) -> int:
        replica, one = job
        return replica.http.post(MEMORY, json={"facts": [one]}).status_code

    with ThreadPoolExecutor(10) as pool:
        assert list(pool.map(keep, jobs)) == [200] * 50
    seen_a, seen_b = current_and_history(a), current_and_history(b)
    assert seen_a == seen_b  # one memory, whichever replica answers
    assert sorted(seen_a) == [(p, "city") for p in people]
    for person in people:
        current, older = seen_a[(person, "city")]
        # The latest said is current; the nine before it are its history, each once.
        assert current == [f"{person} lives in city {45 + people.index(person)}."]
        assert sorted(older) == sorted(f"{person} lives in city {i}." for i in range(people.index(person), 45, 5))


def test_kill_9_of_one_replica_during_writes_loses_no_acknowledged_fact_and_the_other_keeps_answering(replicas, home):
    a, b = replicas
    assert a.http.post("/v1/metis/knowledge-bases", json=TEAM).status_code == 201
    acknowledged: list[str] = []
    refused_by_b: list[int] = []

    def keep(i: int) -> None:
        replica = a if i % 2 else b
        one = fact(f"Person {i}", "role", f"Person {i} is on team {i}.", "2026-02-01")
        try:
            r = replica.http.post(MEMORY, json={"facts": [one]})
        except httpx.TransportError:
            return  # the killed replica: not acknowledged
        if r.status_code == 200:
            acknowledged.append(one["fact"])
        elif replica is b:
            refused_by_b.append(r.status_code)

    with ThreadPoolExecutor(6) as pool:
        futures = [pool.submit(keep, i) for i in range(120)]
        while len(acknowledged) < 10:  # writes under way on both
            time.sleep(0.01)
        os.kill(a.process.pid, signal.SIGKILL)
        for f in futures:
            f.result()
    assert refused_by_b == []
    print(f"acknowledged {len(acknowledged)} of 120")
    assert 60 <= len(acknowledged) < 120  # every one of b's, and a's until it died
    listed = current_and_history(b)
    kept = {current[0] for current, _ in listed.values()}
    assert set(acknowledged) <= kept
    for path in (home / "bases/default/team/notes/memory").glob("*.md"):
        note = frontmatter.load(path)  # whole notes only: front matter and the fact
        assert note["subject"] and note.content.strip()
    assert b.http.post(MEMORY, json={"facts": [fact("Zoe", "role", "Zoe joined.", "2026-03-01")]}).status_code == 200


STARTER = """
import sys
from astralyx.config import Settings
from astralyx.core import Astralyx
core = Astralyx(Settings.load(sys.argv[1], database_url=sys.argv[2]))
sys.stdin.readline()  # all open, then all start at once
core.start()
print(core.new_admin_key or "")
core.close()
"""


def test_replicas_starting_together_on_a_new_database_make_one_workspace_and_one_admin_key(tmp_path, postgres_server):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k not in ("ASTRALYX_TOKEN", "ASTRALYX_DATABASE_URL")}
    with postgres_server.database() as url:
        starters = [subprocess.Popen([sys.executable, "-c", STARTER, str(home), url], env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                    for _ in range(4)]
        time.sleep(3)  # each has opened (its migrations run) and waits
        for p in starters:
            try:
                p.stdin.write("go\n")
                p.stdin.flush()
            except BrokenPipeError:
                pass  # it ended before being told to start: its error is shown below
        outs = [p.communicate(timeout=120) for p in starters]
        assert [p.returncode for p in starters] == [0] * 4, [err for _, err in outs]
        shown = [out.strip() for out, _ in outs if out.strip()]
        assert len(shown) == 1  # one of them made the admin key and showed it; the others found it
        assert (home / "admin.key").read_text().strip() == shown[0]

        from astralyx.config import Settings
        from astralyx.core import Astralyx

        core = Astralyx(Settings.load(home, database_url=url)).start()
        try:
            assert core.keys.count() == 1
            assert [r[0] for r in core.db.query("SELECT name FROM workspaces")] == ["default"]
            assert core.keys.authenticate(shown[0]).role == "admin"
        finally:
            core.close()
