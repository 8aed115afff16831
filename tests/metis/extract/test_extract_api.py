"""POST …/memory/extract against a scripted OpenAI-compatible extractor: proposals, statuses, errors."""

from __future__ import annotations

import json
import logging
import socket

import pytest

from .conftest import facts, put_extractor

EXTRACT = "/v1/metis/knowledge-bases/team/memory/extract"
MEMORY = "/v1/metis/knowledge-bases/team/memory"
STANDUP = {
    "source": "chat: standup",
    "messages": [
        {"role": "user", "content": "Ana moved to research this week.", "date": "2026-10-12"},
        {"role": "assistant", "content": "Noted."},
        {"role": "user", "content": "And the launch moved to Friday.", "date": "2026-10-12"},
    ],
}
ANSWER = facts(
    ("Ana", "role", "Ana works in research.", 1),
    ("Launch", "date", "The launch moved to Friday 16 October.", 3),
)


def proposals(response) -> list[tuple]:
    assert response.status_code == 200, response.text
    keys = ("subject", "attribute", "fact", "said_at", "source", "status")
    return [tuple(p[k] for k in keys) for p in response.json()["proposals"]]


def test_clean_answer_proposes_and_keeps_nothing(client, team):
    team.reply(ANSWER)
    response = client.post(EXTRACT, json=STANDUP)
    assert proposals(response) == [
        ("Ana", "role", "Ana works in research.", "2026-10-12", "chat: standup", "new"),
        ("Launch", "date", "The launch moved to Friday 16 October.", "2026-10-12", "chat: standup", "new"),
    ]
    body = response.json()
    assert body["extractor"] == "qwen3-4b"
    assert body["left_out_secrets"] == 0
    assert [p["known"] for p in body["proposals"]] == [False, False]
    # One call, constrained by the answer's JSON schema, telling today's date and the conversation's.
    [sent] = team.chat_requests
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["schema"]["required"] == ["facts"]
    prompt = sent["messages"][-1]["content"]
    assert "Today is " in prompt and "2026-10-12 (Monday)" in prompt
    assert "[1] 2026-10-12 user: Ana moved to research this week." in prompt
    # Nothing kept.
    assert client.get(MEMORY).json()["count"] == 0


@pytest.mark.parametrize(
    "answer",
    [
        f"```json\n{ANSWER}\n```",
        f"<think>\nThe user mentions Ana. Maybe {{\"facts\": []}}? No.\n</think>\n\n{ANSWER}",
        f"<think>hmm</think>Here you go:\n```json\n{ANSWER}\n```\nAnything else?",
        f"Sure. The facts are: {ANSWER} That is all.",
    ],
    ids=["fenced", "think", "think-fenced-prose", "prose"],
)
def test_answers_wrapped_in_think_fences_or_prose(client, team, answer):
    team.reply(answer)
    assert [p[2] for p in proposals(client.post(EXTRACT, json=STANDUP))] == [
        "Ana works in research.",
        "The launch moved to Friday 16 October.",
    ]
    assert len(team.chat_requests) == 1


def test_unreadable_once_is_retried(client, team):
    team.reply("I am sorry, I cannot do that.")
    team.reply(ANSWER)
    assert len(proposals(client.post(EXTRACT, json=STANDUP))) == 2
    first, second = team.chat_requests
    assert "could not be read" in second["messages"][0]["content"]


def test_unreadable_twice_is_502(client, team):
    team.reply("Ana moved to research, I think.")
    team.reply("<think>I should answer in JSON but")
    response = client.post(EXTRACT, json=STANDUP)
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "EXTRACTOR_UNREADABLE"
    assert "larger chat model" in response.json()["error"]["message"]
    assert len(team.chat_requests) == 2


def test_nothing_durable_is_an_empty_list(client, team):
    team.reply('<think>Only greetings.</think>{"facts": []}')
    response = client.post(EXTRACT, json={"source": "chat", "messages": [{"role": "user", "content": "Hi! How are you?"}]})
    assert response.status_code == 200
    assert response.json()["proposals"] == []


def test_slow_extractor_is_503(client, team):
    put_extractor(client, team.url, timeout=0.5)
    team.reply(ANSWER, delay=3)
    response = client.post(EXTRACT, json=STANDUP)
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "EXTRACTOR_UNAVAILABLE"
    assert "qwen3-4b" in error["message"] and "Eos" in error["message"]


def test_absent_extractor_is_503(client, team):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    put_extractor(client, f"http://127.0.0.1:{port}/v1")
    response = client.post(EXTRACT, json=STANDUP)
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "EXTRACTOR_UNAVAILABLE"


def test_extractor_answering_an_error_is_503(client, team):
    team.reply(status=500)
    response = client.post(EXTRACT, json=STANDUP)
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "EXTRACTOR_UNAVAILABLE"


def test_memory_without_extractor_is_409(client, team):
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "plain"}, "spec": {"kind": "memory", "sources": []}})
    response = client.post("/v1/metis/knowledge-bases/plain/memory/extract", json=STANDUP)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "NO_EXTRACTOR"
    assert "by hand" in response.json()["error"]["message"]
    client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "docs"}, "spec": {"kind": "documents"}})
    response = client.post("/v1/metis/knowledge-bases/docs/memory/extract", json=STANDUP)
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "NOT_A_MEMORY"
    assert team.chat_requests == []


def test_statuses_against_a_memory_with_history(client, team):
    kept = client.post(
        MEMORY,
        json={
            "facts": [
                {"subject": "Ana", "attribute": "role", "fact": "Ana was an intern.", "source": "by hand",
                 "said_at": "2026-01-10"},
                {"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team.", "source": "by hand",
                 "said_at": "2026-09-01"},
                {"subject": "Bruno", "attribute": "city", "fact": "Bruno lives in Recife.", "source": "by hand",
                 "said_at": "2026-11-01"},
                {"subject": "Carla", "attribute": "employer", "fact": "Carla works at Acme.", "source": "by hand",
                 "said_at": "2026-03-01"},
            ]
        },
    )
    assert kept.status_code == 200, kept.text
    ids = {f["fact"]: f["id"] for f in kept.json()["facts"]}
    team.reply(
        facts(
            ("ana", "Role", "Ana works in research.", 1),  # spelt otherwise: the memory's spelling wins
            ("Bruno", "city", "Bruno lives in Lisbon.", 1),  # said before Recife: history straight away
            ("Carla", "employer", "Carla works at Acme", 2),  # the same fact again, said on another day
            ("Dora", "role", "Dora joined as a designer.", 2),
        )
    )
    conversation = {
        "source": "chat: standup",
        "messages": [
            {"role": "user", "content": "Ana moved to research; Bruno is in Lisbon.", "date": "2026-10-12"},
            {"role": "user", "content": "Carla is at Acme; Dora joined as a designer.", "date": "2026-10-13"},
        ],
    }
    body = client.post(EXTRACT, json=conversation).json()
    by_subject = {p["subject"]: p for p in body["proposals"]}
    assert [(p["subject"], p["attribute"], p["status"], p["known"]) for p in body["proposals"]] == [
        ("Ana", "role", "replaces", False),
        ("Bruno", "city", "older", False),
        ("Carla", "employer", "confirms", True),  # known (unticked); kept, it would record 2026-10-13
        ("Dora", "role", "new", False),
    ]
    assert by_subject["Carla"]["same_as"]["id"] == ids["Carla works at Acme."]
    assert by_subject["Carla"]["same_as"]["said_again"] == ["2026-10-13"]
    assert by_subject["Ana"]["replaces"] == {
        "id": ids["Ana leads the data team."], "fact": "Ana leads the data team.", "said_at": "2026-09-01", "source": "by hand",
    }
    assert by_subject["Bruno"]["current"]["fact"] == "Bruno lives in Recife."
    assert by_subject["Dora"]["said_at"] == "2026-10-13"
    # The extractor was told what the memory knows (current facts' subjects and attributes).
    prompt = team.chat_requests[0]["messages"][-1]["content"]
    assert "- Ana: role" in prompt and "- Bruno: city" in prompt and "- Carla: employer" in prompt
    # Still nothing kept: the same four facts, the same current ones.
    listed = client.get(MEMORY, params={"history": "true"}).json()
    assert listed["count"] == 3 and listed["history_count"] == 1


def test_secrets_are_left_out_and_counted(client, team):
    team.reply(
        facts(
            ("Ana", "role", "Ana works in research.", 1),
            ("Ana", "wifi password", "Ana's wifi password is Tr0ub4dor&3xq.", 1),
            ("Deploy", "api key", "The deploy key is AKIAIOSFODNN7EXAMPLE.", 1),
            ("Bruno", "card", "Bruno's card is 4111 1111 1111 1111.", 1),
        )
    )
    response = client.post(EXTRACT, json=STANDUP)
    assert [p[2] for p in proposals(response)] == ["Ana works in research."]
    assert response.json()["left_out_secrets"] == 3
    assert "AKIA" not in response.text and "4111" not in response.text and "Tr0ub4dor" not in response.text


def test_nothing_of_the_conversation_is_stored_or_logged(client, team, home, caplog):
    phrase = "zanzibar-quokka-7731 moved to the lighthouse team"
    caplog.set_level(logging.DEBUG)
    team.reply(facts(("Ana", "team", "Ana joined the lighthouse team.", 1)))
    team.reply("not json")  # the second call: unreadable, twice
    team.reply("still not json")
    conversation = {"source": "chat: secret-plans", "messages": [{"role": "user", "content": f"Ana says {phrase}."}]}
    assert client.post(EXTRACT, json=conversation).status_code == 200
    assert client.post(EXTRACT, json=conversation).status_code == 502
    assert phrase in json.dumps(team.chat_requests)  # the extractor did read it
    for path in home.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert b"zanzibar-quokka" not in data, path
            assert b"lighthouse" not in data, path
    assert "zanzibar-quokka" not in caplog.text
    assert "lighthouse" not in caplog.text


def test_permission_write_content(client, team, key_client):
    viewer = key_client("viewer")
    response = viewer.post(EXTRACT, json=STANDUP)
    assert response.status_code == 403
    assert response.json()["error"]["details"]["permission"] == "knowledge-bases:write-content"
    team.reply(ANSWER)
    assert key_client("editor").post(EXTRACT, json=STANDUP).status_code == 200
    # Another workspace does not see the base.
    assert key_client("admin", workspace="acme").post(EXTRACT, json=STANDUP).status_code == 404


def test_long_conversation_is_read_in_windows(client, team):
    messages = [
        {"role": "user", "content": f"Note {i}: person{i} works on project {i}. " + "filler " * 60, "date": "2026-10-12"}
        for i in range(60)
    ]

    def answer(request):
        first = int(request["messages"][-1]["content"].split("] 2026-10-12 user: Note ")[1].split(":")[0])
        return facts((f"Person{first}", "project", f"Person{first} works on project {first}.", first + 1),
                     ("Ana", "role", "Ana works in research.", 1))

    team.reply(answer, always=True)
    response = client.post(EXTRACT, json={"source": "notes", "messages": messages})
    calls = team.chat_requests
    assert len(calls) == response.json()["windows"] > 1
    # Each window carries its own messages only; every message is read once.
    seen = [line for c in calls for line in c["messages"][-1]["content"].splitlines() if line.startswith("[")]
    assert len(seen) == 60
    subjects = [p[0] for p in proposals(response)]
    assert subjects.count("Ana") == 1  # the same fact from every window: proposed once
    assert len(subjects) == len(calls) + 1


def test_too_long_and_invalid_conversations(client, team):
    huge = [{"role": "user", "content": "word " * 4000} for _ in range(40)]
    response = client.post(EXTRACT, json={"messages": huge})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "CONVERSATION_TOO_LONG"
    for bad, code in (({"messages": []}, "INVALID_CONVERSATION"), ({}, "INVALID_CONVERSATION"),
                      ({"messages": [{"role": "user", "content": "x", "date": "yesterday"}]}, "INVALID_DATE")):
        response = client.post(EXTRACT, json=bad)
        assert response.status_code == 422, bad
        assert response.json()["error"]["code"] == code
    assert team.chat_requests == []


def test_said_at_for_the_whole_conversation(client, team):
    team.reply(facts(("Ana", "role", "Ana works in research.", 1)))
    body = {"source": "chat", "said_at": "2026-10-05", "messages": [{"role": "user", "content": "Ana moved to research."}]}
    assert proposals(client.post(EXTRACT, json=body))[0][3] == "2026-10-05"
