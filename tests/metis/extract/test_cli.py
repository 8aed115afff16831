"""`astra metis remember` end to end: the local data directory, the real app in process, a scripted extractor."""

from __future__ import annotations

import json

import pytest

from .conftest import facts

READING = "reading the conversation for facts (a small model on a CPU takes a minute or two)…"


@pytest.fixture
def astra(astra, team):
    """The root `astra` (the local data directory of `home`), with the memory `team` made first."""
    return astra


@pytest.fixture
def standup(tmp_path):
    path = tmp_path / "standup.json"
    path.write_text(
        json.dumps(
            [
                {"role": "user", "content": "Ana moved to research this week.", "date": "2026-10-12"},
                {"role": "assistant", "content": "Noted."},
                {"role": "user", "content": "The launch moved to Friday.", "date": "2026-10-12"},
            ]
        )
    )
    return path


STANDUP_FACTS = facts(
    ("Ana", "role", "Ana works in research.", 1),
    ("Launch", "date", "The launch moved to Friday 16 October.", 3),
)


def test_the_doc_dialogue(astra, team, standup, client):
    by_hand = astra("metis", "remember", "team", "--subject", "Ana", "--attribute", "role",
                    "--fact", "Ana leads the data team.", "--said", "2026-09-01")
    assert by_hand.output == "kept 1\n"
    team.reply(STANDUP_FACTS)
    result = astra("metis", "remember", "team", "--from", str(standup), input="y\n")
    assert result.output == (
        f"{READING}\n"
        "new  Ana — role: Ana works in research.  (2026-10-12, conversation: standup.json)\n"
        "      replaces: Ana leads the data team.\n"
        "new  Launch — date: The launch moved to Friday 16 October.  (2026-10-12, conversation: standup.json)\n"
        "Keep 2 fact(s) in team? [y/N] y\n"
        "kept 2; 1 replaced an older fact\n"
    )
    memory = client.get("/v1/metis/knowledge-bases/team/memory", params={"history": "true"}).json()
    current = {f["fact"]: f for group in memory["subjects"] for f in group["facts"]}
    assert set(current) == {"Ana works in research.", "The launch moved to Friday 16 October."}
    assert current["Ana works in research."]["source"] == "conversation: standup.json"
    assert current["Ana works in research."]["said_at"] == "2026-10-12"
    assert [f["fact"] for f in current["Ana works in research."]["replaced"]] == ["Ana leads the data team."]


def test_known_facts_are_shown_but_not_kept(astra, team, standup):
    team.reply(STANDUP_FACTS)
    astra("metis", "remember", "team", "--from", str(standup), "--yes")
    team.reply(facts(("Ana", "role", "Ana works in research.", 1), ("Bruno", "city", "Bruno lives in Recife.", 3)))
    result = astra("metis", "remember", "team", "--from", str(standup), input="y\n")
    assert "known Ana — role: Ana works in research.  (2026-10-12, conversation: standup.json)" in result.output
    assert "Keep 1 fact(s) in team? [y/N] y" in result.output
    assert result.output.endswith("kept 1\n")
    team.reply(facts(("Ana", "role", "Ana works in research.", 1)))
    result = astra("metis", "remember", "team", "--from", str(standup))
    assert "nothing to keep: every fact proposed is known already" in result.output


def test_select_answer_no_and_numbers_at_the_question(astra, team, standup, client):
    three = facts(
        ("Ana", "role", "Ana works in research.", 1),
        ("Launch", "date", "The launch moved to Friday 16 October.", 3),
        ("Bruno", "city", "Bruno lives in Recife.", 3),
    )
    team.reply(three)
    result = astra("metis", "remember", "team", "--from", str(standup), input="\n")
    assert result.output.endswith("Keep 3 fact(s) in team? [y/N] \nkept nothing\n")
    assert client.get("/v1/metis/knowledge-bases/team/memory").json()["count"] == 0

    team.reply(three)
    result = astra("metis", "remember", "team", "--from", str(standup), "--select", "1,3", "--yes")
    assert result.output.endswith("kept 2\n")
    kept = client.get("/v1/metis/knowledge-bases/team/memory").json()
    assert sorted(g["subject"] for g in kept["subjects"]) == ["Ana", "Bruno"]

    team.reply(three)
    result = astra("metis", "remember", "team", "--from", str(standup), input="2\n")
    assert "Keep 1 fact(s) in team? [y/N] 2" in result.output  # Ana and Bruno are known now
    assert result.output.endswith("kept 1\n")
    assert client.get("/v1/metis/knowledge-bases/team/memory").json()["count"] == 3


def test_json_plain_text_said_and_source(astra, team, tmp_path, client):
    notes = tmp_path / "notes.txt"
    notes.write_text("Standup, Monday.\nDora joined as a designer.\n")
    team.reply(facts(("Dora", "role", "Dora joined as a designer.", 1)))
    result = astra("metis", "remember", "team", "--from", str(notes), "--said", "2026-10-12", "--json")
    data = json.loads(result.output)
    assert data["proposals"][0]["source"] == "conversation: notes.txt"
    assert data["proposals"][0]["said_at"] == "2026-10-12"
    assert data["extractor"] == "qwen3-4b" and "result" not in data
    sent = team.chat_requests[0]["messages"][-1]["content"]
    assert "[1] 2026-10-12 user: Standup, Monday.\nDora joined as a designer." in sent

    team.reply(facts(("Dora", "role", "Dora joined as a designer.", 1)))
    result = astra("metis", "remember", "team", "--from", str(notes), "--source", "chat: design", "--yes", "--json")
    data = json.loads(result.output)
    assert data["result"]["kept"] == 1
    assert client.get("/v1/metis/knowledge-bases/team/memory").json()["subjects"][0]["facts"][0]["source"] == "chat: design"


def test_nothing_proposed_secrets_and_errors(astra, team, standup, client):
    team.reply(facts(("Ana", "password", "Ana's password is hunter2-Zq9x.", 1)))
    result = astra("metis", "remember", "team", "--from", str(standup))
    assert "left out 1 thing(s) that looked like a secret" in result.output
    assert "no facts proposed: nothing durable was said" in result.output
    assert "hunter2" not in result.output

    team.reply("no json here")
    team.reply("still none")
    result = astra("metis", "remember", "team", "--from", str(standup), ok=False)
    assert result.exit_code == 1
    assert "(EXTRACTOR_UNREADABLE)" in result.output

    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "plain"}, "spec": {"kind": "memory", "sources": []}})
    result = astra("metis", "remember", "plain", "--from", str(standup), ok=False)
    assert "(NO_EXTRACTOR)" in result.output

    result = astra("metis", "remember", "team", "--subject", "Ana", ok=False)
    assert result.exit_code == 2 and "--attribute" in result.output
    result = astra("metis", "remember", "team", "--from", str(standup.parent / "missing.json"), ok=False)
    assert result.exit_code == 2
    bad = standup.parent / "bad.json"
    bad.write_text("{not json")
    result = astra("metis", "remember", "team", "--from", str(bad), ok=False)
    assert result.exit_code == 2 and "not valid JSON" in result.output
