"""The two user docs, followed step by step against the real app served on a port.

../shared/docs/keep-a-memory-of-facts.md and ../shared/docs/give-a-model-your-knowledge-base.md are the
contract: their curl commands run through bash with the docs' bodies, their `astra` commands through the
CLI talking HTTP to the served app, and what a user sees (printed lines, JSON fields, status codes, files)
is checked as the docs write it. The models are the network edge: the scripted OpenAI-compatible server
answers the extractor (qwen3-4b), the chat deployment (chat) and the embeddings (bge-m3).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from openai import OpenAI

from astralyx.metis.memory.dates import asked_period
from astralyx.metis.memory.facts import moment

from .conftest import ADMIN_TOKEN
from .docs_helpers import astra, served, shell


def facts(*items: tuple) -> str:
    """What the extractor answers (astralyx/metis/memory/extract.py reads {"facts": [...]})."""
    return json.dumps({"facts": [{"subject": s, "attribute": a, "fact": f, "message": m} for s, a, f, m in items]})


def deploy(client, name: str, url: str, kind: str, model: str, **spec) -> None:
    body = {"spec": {"model": model, "kind": kind, "runtime": {"type": "upstream", "url": url}, **spec}}
    r = client.put(f"/v1/eos/deployments/{name}", json=body)
    assert r.status_code in (200, 201), r.text


@pytest.fixture
def api(core, monkeypatch, tmp_path):
    """ASTRALYX_API and ASTRALYX_TOKEN set as the docs' readers have them; the real app served.

    ASTRALYX_HOME points elsewhere, so `astra` cannot fall back to a data directory of its own: it talks HTTP.
    """
    with served(core) as url:
        monkeypatch.setenv("ASTRALYX_API", url)
        monkeypatch.setenv("ASTRALYX_TOKEN", ADMIN_TOKEN)
        monkeypatch.setenv("ASTRALYX_HOME", str(tmp_path / "unused"))
        yield url
    assert not (tmp_path / "unused").exists()


# -- Keep a memory of facts -----------------------------------------------------------------------------------

STEP2 = """curl -fsS -X POST "$ASTRALYX_API/metis/knowledge-bases" -H "Authorization: Bearer $ASTRALYX_TOKEN" \\
    -H 'content-type: application/json' -d '{
      "metadata": {"name": "team"},
      "spec": {"kind": "memory", "sources": [], "embedding": {"deployment": "bge-m3"}, "extractor": {"deployment": "qwen3-4b"}}
    }'"""

EXTRACT = """curl -fsS -X POST "$ASTRALYX_API/metis/knowledge-bases/team/memory/extract" \\
    -H "Authorization: Bearer $ASTRALYX_TOKEN" -H 'content-type: application/json' \\
    -d '{"source": "chat: standup", "messages": [{"role": "user", "content": "Ana moved to research this week."}]}'"""

KEEP = """curl -fsS -X POST "$ASTRALYX_API/metis/knowledge-bases/team/memory" \\
    -H "Authorization: Bearer $ASTRALYX_TOKEN" -H 'content-type: application/json' \\
    -d '{"facts": [{"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "source": "chat: standup"}]}'"""

STANDUP = [
    {"role": "user", "content": "Quick update: Ana moved to research this week.", "date": "2026-10-12"},
    {"role": "assistant", "content": "Noted. Anything else?", "date": "2026-10-12"},
    {"role": "user", "content": "Yes, the launch moved to Friday 16 October.", "date": "2026-10-12"},
]


@pytest.fixture
def team(client, api, scripted_openai, home):
    """Step 2 of the doc, with bge-m3 and qwen3-4b answered by the scripted server."""
    deploy(client, "bge-m3", scripted_openai.url, "embedding", "bge-m3")
    deploy(client, "qwen3-4b", scripted_openai.url, "chat", "qwen3:4b")
    created = shell(STEP2)
    assert created.status == 201, created.text
    assert created.json()["spec"]["kind"] == "memory"
    assert created.json()["spec"]["extractor"] == {"deployment": "qwen3-4b"}
    return home / "bases/default/team"


def test_memory_doc_remember_a_conversation(team, scripted_openai, tmp_path, monkeypatch):
    # An older fact the standup replaces (the doc's "replaces: Ana leads the data team.").
    kept = shell(KEEP.replace("Ana works in research.", "Ana leads the data team.")
                 .replace('"source": "chat: standup"', '"source": "chat: reorg", "said_at": "2026-09-01"'))
    assert kept.status == 200 and kept.json()["kept"] == 1, kept.text

    # astra metis remember team --from standup.json
    monkeypatch.chdir(tmp_path)
    (tmp_path / "standup.json").write_text(json.dumps(STANDUP))
    scripted_openai.reply(facts(("Ana", "role", "Ana works in research.", 1),
                                ("Launch", "date", "The launch moved to Friday 16 October.", 3)))
    out = astra("metis", "remember", "team", "--from", "standup.json", input="y\n").output
    assert out == (
        "reading the conversation for facts (a small model on a CPU takes a minute or two)…\n"
        "new  Ana — role: Ana works in research.  (2026-10-12, conversation: standup.json)\n"
        "      replaces: Ana leads the data team.\n"
        "new  Launch — date: The launch moved to Friday 16 October.  (2026-10-12, conversation: standup.json)\n"
        "Keep 2 fact(s) in team? [y/N] y\n"
        "kept 2; 1 replaced an older fact\n"
    )
    # The extractor was told the subjects and attributes the memory already knows.
    told = "\n".join(m["content"] for m in scripted_openai.chat_requests[-1]["messages"])
    assert "already knows these subjects and attributes:\n- Ana: role" in told

    # One fact by hand.
    out = astra("metis", "remember", "team", "--subject", "Bruno", "--attribute", "city", "--fact",
                "Bruno lives in Recife.").output
    assert out.strip() == "kept 1"

    # Extraction proposes; nothing is kept until you post the facts you chose.
    before = sorted(p.name for p in (team / "notes/memory").rglob("f_*.md"))
    scripted_openai.reply(facts(("Ana", "role", "Ana works in research.", 1)))
    proposed = shell(EXTRACT)
    assert proposed.status == 200, proposed.text
    body = proposed.json()
    assert body["source"] == "chat: standup" and body["extractor"] == "qwen3-4b"
    [proposal] = body["proposals"]
    assert (proposal["subject"], proposal["attribute"], proposal["fact"]) == ("Ana", "role", "Ana works in research.")
    assert proposal["known"] is True  # "Facts already known are shown unticked"
    assert sorted(p.name for p in (team / "notes/memory").rglob("f_*.md")) == before

    kept = shell(KEEP)
    assert kept.status == 200, kept.text
    assert kept.json()["kept"] == 0 and kept.json()["known"] == 1  # the same fact again: not kept twice

    # Each fact is a note of the memory: notes/memory/<id>.md, its history in notes/memory/history/.
    current = sorted((team / "notes/memory").glob("f_*.md"))
    history = sorted((team / "notes/memory/history").glob("f_*.md"))
    assert len(current) == 3 and len(history) == 1
    assert "Ana leads the data team." in history[0].read_text()
    assert any("Bruno lives in Recife." in f.read_text() for f in current)

    # Searches answer current facts before the history, and the history is still found.
    found = shell("""curl -fsS -X POST "$ASTRALYX_API/metis/knowledge-bases/team/search" \\
        -H "Authorization: Bearer $ASTRALYX_TOKEN" -H 'content-type: application/json' \\
        -d '{"query": "what was Ana'"'"'s role in September?"}'""")
    assert found.status == 200, found.text
    texts = [r["text"] for r in found.json()["results"]]
    assert any("Ana leads the data team." in t for t in texts), texts
    # Cited like documents: each fact a document of the memory, where it held.
    history = next(r for r in found.json()["results"] if r["text"] == "Ana leads the data team.")
    assert history["document"].startswith("memory:team/f_") and history["where"].startswith("Ana › role › held 2026-09-01")
    research = next(i for i, t in enumerate(texts) if "Ana works in research." in t)
    leads = next(i for i, t in enumerate(texts) if "Ana leads the data team." in t)
    # A month in the question weighs like as_of: what held in the September asked about (the latest) first.
    since, until = history["where"].removeprefix("Ana › role › held ").split(" – ")
    september = asked_period("what was Ana's role in September?")
    assert september is not None
    assert (leads < research) == september.overlaps(moment(since), moment(until))
    # Without a date, current facts before the history.
    undated = shell("""curl -fsS -X POST "$ASTRALYX_API/metis/knowledge-bases/team/search" \\
        -H "Authorization: Bearer $ASTRALYX_TOKEN" -H 'content-type: application/json' -d '{"query": "Ana role"}'""")
    now = [r["text"] for r in undated.json()["results"]]
    assert now.index("Ana works in research.") < now.index("Ana leads the data team.")


def test_memory_doc_replacement_table(team):
    def keep(fact: str, said_at: str) -> dict:
        body = {"facts": [{"subject": "Ana", "attribute": "role", "fact": fact, "source": "chat: standup", "said_at": said_at}]}
        r = shell("""curl -sS -X POST "$ASTRALYX_API/metis/knowledge-bases/team/memory" \\
            -H "Authorization: Bearer $ASTRALYX_TOKEN" -H 'content-type: application/json' -d '""" + json.dumps(body) + "'")
        assert r.status == 200, r.text
        return r.json()

    def listing() -> dict:
        return shell("""curl -fsS -H "Authorization: Bearer $ASTRALYX_TOKEN" \\
            "$ASTRALYX_API/metis/knowledge-bases/team/memory?history=true" """).json()

    # A fact on a new subject or attribute → Current.
    first = keep("Ana leads the data team.", "2026-09-01")
    assert first["kept"] == 1 and first["facts"][0]["status"] == "current"
    # The same subject and attribute, said later → Current; the older one moves to the history,
    # with until when it held and what replaced it.
    later = keep("Ana works in research.", "2026-10-12")
    assert later["replaced"] == 1 and later["facts"][0]["status"] == "current"
    [ana] = listing()["subjects"]
    [now] = ana["facts"]
    assert now["fact"] == "Ana works in research."
    [old] = now["replaced"]
    assert old["fact"] == "Ana leads the data team."
    assert old["held"]["until"][:10] == "2026-10-12"
    assert old["replaced_by"] == now["id"]
    # Said before the one that holds now → History straight away.
    earlier = keep("Ana was an intern.", "2026-06-01")
    assert earlier["facts"][0]["status"] == "history" and earlier["replaced"] == 0
    assert listing()["subjects"][0]["facts"][0]["fact"] == "Ana works in research."
    # The same fact again → Nothing: it is not kept twice.
    again = keep("Ana works in research.", "2026-10-13")
    assert again["kept"] == 0 and again["known"] == 1
    assert listing()["history_count"] == 2
    assert len(list((team / "notes/memory").glob("f_*.md"))) == 1
    assert len(list((team / "notes/memory/history").glob("f_*.md"))) == 2


def test_memory_doc_needs_write_content(team, key_client):
    """Before you begin: permission to add to it (knowledge-bases:write-content)."""
    viewer = key_client("viewer")
    body = {"facts": [{"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "source": "chat: standup"}]}
    for path in ("/v1/metis/knowledge-bases/team/memory", "/v1/metis/knowledge-bases/team/memory/extract"):
        r = viewer.post(path, json=body if path.endswith("memory") else {"messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 403 and r.json()["error"]["details"]["permission"] == "knowledge-bases:write-content"
    assert viewer.get("/v1/metis/knowledge-bases/team/memory").status_code == 200


def test_memory_doc_secrets_are_never_kept(team, scripted_openai, tmp_path):
    refused = shell("""curl -sS -X POST "$ASTRALYX_API/metis/knowledge-bases/team/memory" \\
        -H "Authorization: Bearer $ASTRALYX_TOKEN" -H 'content-type: application/json' \\
        -d '{"facts": [{"subject": "Ana", "attribute": "password",
                        "fact": "Ana'"'"'s password is hunter2-Xq9!zz.", "source": "chat"}]}'""")
    assert refused.status == 422 and refused.json()["error"]["code"] == "FACT_SENSITIVE", refused.text
    assert not list(team.rglob("f_*.md"))
    by_hand = astra("metis", "remember", "team", "--subject", "Ops", "--attribute", "api key", "--fact",
                    "The API key is sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c.", ok=False)
    assert by_hand.exit_code == 1 and "FACT_SENSITIVE" in by_hand.output
    # Extraction leaves it out, and says so.
    scripted_openai.reply(facts(("Ops", "api key", "The API key is sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c.", 1),
                                ("Bruno", "city", "Bruno lives in Recife.", 1)))
    found = shell(EXTRACT).json()
    assert found["left_out_secrets"] == 1 and [p["subject"] for p in found["proposals"]] == ["Bruno"]
    (tmp_path / "ops.txt").write_text("My API key is sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c\n")
    scripted_openai.reply(facts(("Ops", "api key", "The API key is sk-proj-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c.", 1)))
    said = astra("metis", "remember", "team", "--from", str(tmp_path / "ops.txt")).output
    assert "left out 1 thing(s) that looked like a secret (passwords, keys, card numbers are never kept)" in said
    assert not list(team.rglob("f_*.md"))


def test_memory_doc_see_correct_and_delete(team):
    for fact, said in (("Ana leads the data team.", "2026-09-01"), ("Ana works in research.", "2026-10-12")):
        astra("metis", "remember", "team", "--subject", "Ana", "--attribute", "role", "--fact", fact, "--said", said)
    shown = astra("metis", "memory", "team", "--history").output
    assert "Ana" in shown and "Ana works in research." in shown and "was: Ana leads the data team." in shown
    assert "1 fact(s), 1 in the history" in shown

    listed = shell("""curl -fsS -H "Authorization: Bearer $ASTRALYX_TOKEN" \\
        "$ASTRALYX_API/metis/knowledge-bases/team/memory?history=true" """)
    assert listed.status == 200
    [group] = listed.json()["subjects"]
    [current] = group["facts"]
    fact_id = current["id"]
    assert re.fullmatch(r"f_[0-9a-f]{16}", fact_id)
    assert [(f["fact"], f["said_at"][:10], f["source"]) for f in current["replaced"]] == [
        ("Ana leads the data team.", "2026-09-01", "by hand")]

    # PUT …/memory/<id> corrects it; its history is kept.
    corrected = shell(f"""curl -fsS -X PUT "$ASTRALYX_API/metis/knowledge-bases/team/memory/{fact_id}" \\
        -H "Authorization: Bearer $ASTRALYX_TOKEN" -H 'content-type: application/json' \\
        -d '{{"fact": "Ana works in the research team."}}'""")
    assert corrected.status == 200 and corrected.json()["fact"] == "Ana works in the research team.", corrected.text
    assert "Ana works in the research team." in (team / f"notes/memory/{fact_id}.md").read_text()
    assert len(list((team / "notes/memory/history").glob("f_*.md"))) == 1

    # astra metis forget team f_… --history: with the older facts it replaced, everything kept about it.
    out = astra("metis", "forget", "team", fact_id, "--history").output
    assert out.strip() == f"forgot {fact_id} and 1 older fact(s) it replaced"
    assert not list(team.rglob("f_*.md"))
    assert "(no facts)" in astra("metis", "memory", "team", "--history").output

    # DELETE …/memory/<id>?history=true over REST.
    astra("metis", "remember", "team", "--subject", "Bruno", "--attribute", "city", "--fact", "Bruno lives in Porto.",
          "--said", "2026-01-01")
    astra("metis", "remember", "team", "--subject", "Bruno", "--attribute", "city", "--fact", "Bruno lives in Recife.")
    bruno = shell("""curl -fsS -H "Authorization: Bearer $ASTRALYX_TOKEN" \\
        "$ASTRALYX_API/metis/knowledge-bases/team/memory" """).json()["subjects"][0]["facts"][0]["id"]
    gone = shell(f"""curl -fsS -X DELETE -H "Authorization: Bearer $ASTRALYX_TOKEN" \\
        "$ASTRALYX_API/metis/knowledge-bases/team/memory/{bruno}?history=true" """)
    assert gone.status == 200 and gone.json()["forgotten"] == bruno and gone.json()["history_forgotten"] == 1
    assert not list(team.rglob("f_*.md"))

    # Deleting the memory deletes every fact.
    astra("metis", "remember", "team", "--subject", "Bruno", "--attribute", "city", "--fact", "Bruno lives in Recife.")
    astra("metis", "delete", "team", "--yes")
    assert not team.exists()


def test_memory_doc_troubleshooting(client, api, scripted_openai, home):
    # 409 NO_EXTRACTOR: the memory has no extractor model.
    r = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "team"}, "spec": {"kind": "memory"}})
    assert r.status_code == 201, r.text
    no_extractor = shell(EXTRACT.replace("-fsS", "-sS"))
    assert no_extractor.status == 409 and no_extractor.json()["error"]["code"] == "NO_EXTRACTOR"
    # … or keep facts by hand.
    assert shell(KEEP).status == 200
    client.delete("/v1/metis/knowledge-bases/team")

    # 503 EXTRACTOR_UNAVAILABLE: the extractor deployment does not answer. Step 1's deploy, as written, with
    # the model not on this machine (`astra eos add qwen3:4b` downloads 2.5 GB: not run here).
    out = astra("eos", "deploy", "qwen3-4b-q4-k-m", "--name", "qwen3-4b", "--cpu", "--min", "1", "--max", "1").output
    assert out.startswith("deployed qwen3-4b: qwen3-4b-q4-k-m (chat, embedded, CPUs only, 1-1 replicas)")
    assert shell(STEP2.replace('"embedding": {"deployment": "bge-m3"}, ', "")).status == 201
    down = shell(EXTRACT.replace("-fsS", "-sS"))
    assert down.status == 503 and down.json()["error"]["code"] == "EXTRACTOR_UNAVAILABLE", down.text
    assert "Eos" in down.json()["error"]["message"] and "one replica" in down.json()["error"]["message"]
    # An upstream that does not answer at all.
    deploy(client, "qwen3-4b", "http://127.0.0.1:9/v1", "chat", "qwen3:4b")
    down = shell(EXTRACT.replace("-fsS", "-sS"))
    assert down.status == 503 and down.json()["error"]["code"] == "EXTRACTOR_UNAVAILABLE", down.text

    # 502 EXTRACTOR_UNREADABLE: the model did not answer with facts (it is asked twice).
    deploy(client, "qwen3-4b", scripted_openai.url, "chat", "qwen3:4b")
    scripted_openai.reply("I am not sure what you mean.").reply("Sorry, no.")
    unreadable = shell(EXTRACT.replace("-fsS", "-sS"))
    assert unreadable.status == 502 and unreadable.json()["error"]["code"] == "EXTRACTOR_UNREADABLE", unreadable.text

    # No facts proposed: nothing durable was said.
    scripted_openai.reply(json.dumps({"facts": []}))
    assert shell(EXTRACT).json()["proposals"] == []


# -- Give a model your knowledge base ------------------------------------------------------------------------

DOC_TABLE = (
    "TOOL                    FUNCTION                      APPROVAL\n"
    "search_knowledge        (search_knowledge: handbook)  -\n"
    "save_to_knowledge       (save_to_knowledge: handbook) -\n"
    "save_to_journal         (save_to_knowledge: journal, saves on its own) -\n"
)

DOC_TOOLS = [
    {"builtin": "search_knowledge", "knowledge_base": "handbook"},
    {"builtin": "save_to_knowledge", "knowledge_base": "handbook"},
    {"builtin": "save_to_knowledge", "knowledge_base": "journal", "confirm": False},
]

LEAVE = (
    "# Leave policy\n\nHow leave works at the company.\n\n## Vacation\n\n"
    "Each person has 25 vacation days a year, taken in agreement with your lead.\n\n"
    "## Sick leave\n\nTell your lead on the first day.\n"
)

MODEL_SAVES = 'curl -s -H "Authorization: Bearer $ASTRALYX_TOKEN" "$ASTRALYX_API/metis/knowledge-bases/journal/model-saves"'
UNDO = ('curl -s -X POST -H "Authorization: Bearer $ASTRALYX_TOKEN" '
        '"$ASTRALYX_API/metis/knowledge-bases/journal/model-saves/s_4f2a9c1b7d3e5a60/undo"')


@pytest.fixture
def tools_setup(client, api, scripted_openai, home, tmp_path):
    """A chat deployment `chat` (no tools yet), a base `handbook` with an embedding model, and a base `journal`."""
    deploy(client, "bge-m3", scripted_openai.url, "embedding", "bge-m3")
    deploy(client, "chat", scripted_openai.url, "chat", "scripted")
    r = client.post("/v1/metis/knowledge-bases",
                    json={"metadata": {"name": "handbook"}, "spec": {"embedding": {"deployment": "bge-m3"}}})
    assert r.status_code == 201, r.text
    r = client.post("/v1/metis/knowledge-bases/handbook/files", files={"file": ("leave.md", LEAVE, "text/markdown")})
    assert r.status_code == 201, r.text
    # by keywords: a search that matches nothing says so (a hybrid base always has nearest passages)
    journal = {"metadata": {"name": "journal"}, "spec": {"embedding": None}}
    assert client.post("/v1/metis/knowledge-bases", json=journal).status_code == 201
    return scripted_openai


def chat_client(api: str) -> OpenAI:
    return OpenAI(base_url=api, api_key=ADMIN_TOKEN, max_retries=0)


def test_tools_doc_give_it_the_tools(tools_setup, client):
    out = astra("eos", "tools", "chat", "knowledge", "handbook", "--search", "--save").output
    assert out.splitlines()[:2] == [
        "chat: search_knowledge searches handbook",
        "chat: save_to_knowledge saves notes to handbook, asking before saving (a draft to save or discard)",
    ]
    # "Who searches through the deployment": the CLI says it when a base is given for search.
    said = " ".join(out.split())  # the note is a paragraph wrapped at the terminal's width
    assert "Anyone who may call chat" in said and "even without permission to read it" in said
    out = astra("eos", "tools", "chat", "knowledge", "journal", "--save-on-its-own").output
    assert out.startswith("chat: save_to_journal saves notes to journal on its own")
    # The listing exactly as printed in the doc, by the CLI as installed too.
    assert astra("eos", "tools", "chat").output == DOC_TABLE
    installed = subprocess.run([str(Path(sys.executable).parent / "astra"), "eos", "tools", "chat"],
                               capture_output=True, text=True, env=os.environ.copy(), timeout=60)
    assert installed.returncode == 0 and installed.stdout == DOC_TABLE, installed.stderr
    # spec.tools as the doc shows it: confirm only written when false.
    assert client.get("/v1/eos/deployments/chat").json()["spec"]["tools"] == DOC_TOOLS
    # No flags: none, the base's tools removed.
    out = astra("eos", "tools", "chat", "knowledge", "handbook").output
    assert out.strip() == "chat: no tools on handbook (removed)"
    assert client.get("/v1/eos/deployments/chat").json()["spec"]["tools"] == [DOC_TOOLS[2]]


def put_doc_tools(client) -> None:
    """PUT /v1/eos/deployments/chat, the spec whole, with the doc's spec.tools, by curl."""
    spec = client.get("/v1/eos/deployments/chat").json()["spec"]
    spec["tools"] = DOC_TOOLS
    r = shell(f"""curl -sS -X PUT "$ASTRALYX_API/eos/deployments/chat" -H "Authorization: Bearer $ASTRALYX_TOKEN" \\
        -H 'content-type: application/json' -d '{json.dumps({"spec": spec})}'""")
    assert r.status == 200, r.text
    assert r.json()["spec"]["tools"] == DOC_TOOLS
    # confirm: true is the default, and not written back.
    spec["tools"] = [dict(DOC_TOOLS[0]), {**DOC_TOOLS[1], "confirm": True}, DOC_TOOLS[2]]
    r = shell(f"""curl -sS -X PUT "$ASTRALYX_API/eos/deployments/chat" -H "Authorization: Bearer $ASTRALYX_TOKEN" \\
        -H 'content-type: application/json' -d '{json.dumps({"spec": spec})}'""")
    assert r.status == 200 and r.json()["spec"]["tools"] == DOC_TOOLS, r.text
    assert client.get("/v1/eos/deployments/chat").json()["spec"]["tools"] == DOC_TOOLS
    assert [t["name"] for t in client.get("/v1/eos/deployments/chat/tools").json()["tools"]] == [
        "search_knowledge", "save_to_knowledge", "save_to_journal"]


def test_tools_doc_search_answers_with_citations(tools_setup, client, api):
    chat = tools_setup
    put_doc_tools(client)
    chat.reply(tool_calls=[("search_knowledge", {"query": "vacation days"})])
    chat.reply("You have 25 vacation days a year [1] (handbook/leave.md).")
    answer = chat_client(api).chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "How many vacation days do I have?"}])
    assert answer.choices[0].message.content == "You have 25 vacation days a year [1] (handbook/leave.md)."
    tool_message = next(m for m in chat.chat_requests[-1]["messages"] if m["role"] == "tool")
    got = json.loads(tool_message["content"])
    assert list(got) == ["knowledge_base", "mode", "results", "note"]
    assert (got["knowledge_base"], got["mode"]) == ("handbook", "hybrid")
    assert got["results"][0] == {
        "ref": 1, "document": "docs:handbook/leave.md", "title": "Leave policy", "where": "Leave policy › Vacation › line 7",
        "text": "Each person has 25 vacation days a year, taken in agreement with your lead."}
    assert [r["ref"] for r in got["results"]] == list(range(1, len(got["results"]) + 1))
    assert all(list(r) == ["ref", "document", "title", "where", "text"] for r in got["results"])
    assert len(got["results"]) <= 8 and sum(len(r["text"]) for r in got["results"]) <= 6000
    assert got["note"] == "Answer from these passages and cite each one you use as [ref] with its document."
    # At most 8 passages, about 6 000 characters in all.
    many = "# Rules\n\n" + "\n\n".join(f"## Part {i}\n\n" + f"Vacation days rule {i} applies here. " * 30 for i in range(40))
    r = client.post("/v1/metis/knowledge-bases/handbook/files", files={"file": ("rules.md", many, "text/markdown")})
    assert r.status_code == 201, r.text
    chat.reply(tool_calls=[("search_knowledge", {"query": "vacation days rule"})])
    chat.reply("Many rules [1].")
    chat_client(api).chat.completions.create(model="chat", messages=[{"role": "user", "content": "Vacation rules?"}])
    big = json.loads(next(m for m in chat.chat_requests[-1]["messages"] if m["role"] == "tool")["content"])
    assert len(big["results"]) == 8 and 4000 <= sum(len(r["text"]) for r in big["results"]) <= 6500
    # Each call has its signed receipt.
    assert len(answer.model_extra["astralyx"]["receipts"]) == 1

    # Nothing found is said as such, and the model is told not to make an answer up. (A base searched by
    # keywords: hybrid search always has nearest vectors, so "nothing" is a keywords answer.)
    r = client.put("/v1/metis/knowledge-bases/journal/notes/lunch.md", json={"content": "# Lunch\n\nLunch is at noon.\n"})
    assert r.status_code in (200, 201), r.text
    deploy(client, "chat-journal", chat.url, "chat", "scripted",
           tools=[{"builtin": "search_knowledge", "knowledge_base": "journal"}])
    chat.reply(tool_calls=[("search_knowledge", {"query": "zyzzyva quokka"})])
    chat.reply("The journal says nothing about that.")
    chat_client(api).chat.completions.create(model="chat-journal", messages=[{"role": "user", "content": "zyzzyva?"}])
    nothing = json.loads(next(m for m in chat.chat_requests[-1]["messages"] if m["role"] == "tool")["content"])
    assert nothing["results"] == [] and "do not make an answer up" in nothing["note"]

    # Streamed (as the Playground asks), the same search and the same answer.
    chat.reply(tool_calls=[("search_knowledge", {"query": "vacation days"})])
    chat.reply("You have 25 vacation days a year [1] (handbook/leave.md).")
    chunks = chat_client(api).chat.completions.create(
        model="chat", stream=True, messages=[{"role": "user", "content": "How many vacation days do I have?"}])
    said = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert said == "You have 25 vacation days a year [1] (handbook/leave.md)."

    # A base that cannot be searched makes the call fail with why; the model is told to answer without it and say so.
    deploy(client, "bge-m3", "http://127.0.0.1:9/v1", "embedding", "bge-m3")
    chat.reply(tool_calls=[("search_knowledge", {"query": "vacation days"})])
    chat.reply("I could not search the handbook: its embedding model does not answer.")
    extra = chat_client(api).chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "How many vacation days do I have?"}]).model_extra["astralyx"]
    failed = json.loads(next(m for m in chat.chat_requests[-1]["messages"] if m["role"] == "tool")["content"])
    assert failed["error"]["code"] == "DEPLOYMENT_UNAVAILABLE" and "cannot be reached" in failed["error"]["message"]
    assert "answer without handbook, and say that it could not be searched and why" in failed["note"]
    assert extra["tool_calls"][0]["status"] == "DEPLOYMENT_UNAVAILABLE" and len(extra["receipts"]) == 1


def save_on_its_own(chat, api, title: str = "Offsite", text: str = "The offsite is in Porto in March.") -> dict:
    chat.reply(tool_calls=[("save_to_journal", {"title": title, "text": text})])
    chat.reply("Saved to journal.")
    answer = chat_client(api).chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "Keep this: the offsite is in Porto in March."}],
        metadata={"conversation_title": "Planning the year"})
    return answer.model_extra["astralyx"]


def test_tools_doc_save_on_its_own_and_undo(tools_setup, client, api, home):
    chat = tools_setup
    put_doc_tools(client)
    extra = save_on_its_own(chat, api)
    told = json.loads(next(m for m in chat.chat_requests[-1]["messages"] if m["role"] == "tool")["content"])
    assert told["message"] == "Saved to journal" and told["title"] == "Offsite"
    assert extra["saves"][0]["link"] == "/v1/metis/knowledge-bases/journal/saved/offsite.md" and extra["saves"][0]["undo"]
    note = home / "bases/default/journal/saved/offsite.md"
    text = note.read_text()
    assert re.fullmatch(
        r'---\ntitle: "Offsite"\ndate: "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"\nsource: "model"\n'
        r'conversation: "Planning the year"\nmodel: "chat"\n---\n\n# Offsite\n\nThe offsite is in Porto in March.\n', text), text

    # The doc's two curl commands: the saves listed on the base, and undo.
    [save] = shell(MODEL_SAVES).json()["saves"]
    assert (save["note"], save["deployment"], save["conversation"], save["as_saved"]) == (
        "saved/offsite.md", "chat", "Planning the year", True)
    assert save["saved_at"] and re.fullmatch(r"s_[0-9a-f]{16}", save["id"])
    assert save["undo"] == extra["saves"][0]["undo"] == f"/v1/metis/knowledge-bases/journal/model-saves/{save['id']}/undo"
    undone = shell(UNDO.replace("s_4f2a9c1b7d3e5a60", save["id"]))
    assert undone.status == 200 and undone.json()["state"] == "undone", undone.text
    assert not note.exists()

    # If someone changed it since, undo asks first: 409 NOTE_CHANGED; ?force=true removes it with the changes.
    save_on_its_own(chat, api)
    r = client.put("/v1/metis/knowledge-bases/journal/saved/offsite.md",
                   json={"metadata": {"title": "Offsite"}, "content": "# Offsite\n\nPorto, 12-14 March.\n"})
    assert r.status_code == 200, r.text
    saves = shell(MODEL_SAVES).json()["saves"]
    assert sorted(s["state"] for s in saves) == ["changed", "undone"]
    [changed] = [s for s in saves if s["state"] == "changed"]
    assert changed["as_saved"] is False
    asked = shell(UNDO.replace("s_4f2a9c1b7d3e5a60", changed["id"]))
    assert asked.status == 409 and asked.json()["error"]["code"] == "NOTE_CHANGED", asked.text
    assert note.exists()
    forced = shell(UNDO.replace("s_4f2a9c1b7d3e5a60", changed["id"]).replace('/undo"', '/undo?force=true"'))
    assert forced.status == 200 and not note.exists(), forced.text


def test_tools_doc_save_limit(tools_setup, client, api, home):
    chat = tools_setup
    put_doc_tools(client)
    chat.reply(tool_calls=[("save_to_journal", {"title": f"Note {i}", "text": "x"}) for i in range(30)])
    chat.reply("Saved them.")
    extra = chat_client(api).chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "Keep these."}]).model_extra["astralyx"]
    assert len(extra["saves"]) == 30
    extra = save_on_its_own(chat, api, title="One more")
    told = json.loads(next(m for m in chat.chat_requests[-1]["messages"] if m["role"] == "tool")["content"])
    assert told["error"]["code"] == "SAVE_LIMIT" and "ask the person" in json.dumps(told).lower()
    assert extra["saves"] == [] and not (home / "bases/default/journal/saved/one-more.md").exists()
    assert len(shell(MODEL_SAVES).json()["saves"]) == 30


def test_tools_doc_ask_before_saving(tools_setup, client, api, home):
    """Ask before saving (the default): a draft, nothing kept until Save; named by the conversation's id without a title."""
    chat = tools_setup
    put_doc_tools(client)
    chat.reply(tool_calls=[("save_to_knowledge", {"title": "Offsite", "text": "The offsite is in Porto in March."})])
    chat.reply("Here is a draft to save.")
    extra = chat_client(api).chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "Save this: the offsite is in Porto in March."}],
        metadata={"conversation_id": "c-2026-10-12"}).model_extra["astralyx"]
    [draft] = extra["drafts"]
    assert (draft["knowledge_base"], draft["title"]) == ("handbook", "Offsite")
    assert draft["text"] == "The offsite is in Porto in March."
    assert extra["saves"] == [] and not (home / "bases/default/handbook/saved").exists()
    r = client.post(draft["save"])
    assert r.status_code == 200, r.text
    text = (home / "bases/default/handbook/saved/offsite.md").read_text()
    assert 'conversation: "c-2026-10-12"' in text and 'source: "model"' in text
    [listed] = client.get("/v1/metis/knowledge-bases/handbook/model-saves").json()["saves"]
    assert listed["conversation"] == "c-2026-10-12"


def test_tools_doc_who_may_change_and_undo(tools_setup, client, api, key_client):
    """Before you begin: deployments:update (editor, admin) to change the deployment; write-content to undo a save."""
    body = {"search": True, "save": False, "confirm": True}
    assert key_client("editor").put("/v1/eos/deployments/chat/tools/knowledge/handbook", json=body).status_code == 200
    refused = key_client("viewer").put("/v1/eos/deployments/chat/tools/knowledge/handbook", json=body)
    assert refused.status_code == 403 and refused.json()["error"]["details"]["permission"] == "deployments:update"
    put_doc_tools(client)
    extra = save_on_its_own(tools_setup, api)
    undo = extra["saves"][0]["undo"]
    refused = key_client("viewer").post(undo)
    assert refused.status_code == 403 and refused.json()["error"]["details"]["permission"] == "knowledge-bases:write-content"
    assert key_client("editor").post(undo).status_code == 200
