"""Reading a model's answer, the conversation's dates, windows and the prompt (no model needed)."""

from __future__ import annotations

import json
from datetime import date

import pytest

from astralyx.errors import Invalid
from astralyx.metis.memory import prompt
from astralyx.metis.memory.extract import Unreadable, clean, conversation, parse_answer, windows

FACT = {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "message": 1}
CLEAN = json.dumps({"facts": [FACT]})


@pytest.mark.parametrize(
    "answer",
    [
        CLEAN,
        f"```json\n{CLEAN}\n```",
        f"```\n{CLEAN}\n```",
        f"<think>The user says Ana moved. {{not json}}</think>\n{CLEAN}",
        f"<think>\nhmm\n</think>```json\n{CLEAN}```",
        f"Here are the facts I found:\n{CLEAN}\nLet me know if you need more.",
        f"Sure! ```json\n{CLEAN}\n``` Hope this helps.",
        json.dumps([FACT]),
        json.dumps(FACT),
        f"thinking without an opening tag</think>{CLEAN}",
    ],
)
def test_answers_in_every_wrapping_are_read(answer):
    assert parse_answer(answer) == [FACT]


def test_an_answer_cut_short_keeps_its_complete_facts():
    two = json.dumps({"facts": [FACT, {**FACT, "attribute": "team", "fact": "Ana is in the research team."}]})
    cut = two[:-30]
    assert parse_answer(cut) == [FACT]


def test_nothing_durable_is_an_empty_list():
    assert parse_answer('{"facts": []}') == []
    assert parse_answer("<think>small talk only</think>{\"facts\": []}") == []


@pytest.mark.parametrize("answer", [None, "", "   ", "I could not find any facts.", "<think>{\"facts\": [1]}", '{"answer": 42}'])
def test_unreadable_answers(answer):
    with pytest.raises(Unreadable):
        parse_answer(answer)


def test_conversation_dates_message_over_request_over_now():
    lines = conversation(
        [
            {"role": "system", "content": "You are helpful."},
            {"role": "user", "content": "Ana moved to research.", "date": "2026-10-12"},
            {"role": "assistant", "content": [{"type": "text", "text": "Noted."}]},
            {"role": "tool", "content": "search results"},
            {"role": "user", "content": "The launch moved.", "time": "2026-10-13T09:30:00+02:00", "name": "Bruno"},
            {"role": "user", "content": "   "},
        ],
        said_at="2026-10-11",
    )
    assert [(n.number, n.role, n.name, n.content, n.said_at) for n in lines] == [
        (1, "user", None, "Ana moved to research.", "2026-10-12"),
        (2, "assistant", None, "Noted.", "2026-10-11"),
        (3, "user", "Bruno", "The launch moved.", "2026-10-13T07:30:00Z"),
    ]
    undated = conversation([{"role": "user", "content": "hi"}], now="2026-12-02T10:00:00Z")
    assert undated[0].said_at == "2026-12-02T10:00:00Z"
    # Without said_at, an undated message takes the date of the one before it (the first ones: after).
    around = conversation(
        [{"role": "user", "content": "a"}, {"role": "user", "content": "b", "date": "2026-10-12"},
         {"role": "assistant", "content": "c"}, {"role": "user", "content": "d", "date": "2026-10-14"}],
        now="2026-12-02T10:00:00Z",
    )
    assert [line.said_at for line in around] == ["2026-10-12", "2026-10-12", "2026-10-12", "2026-10-14"]


@pytest.mark.parametrize(
    "messages,code",
    [([], "INVALID_CONVERSATION"), ("hello", "INVALID_CONVERSATION"),
     ([{"role": "system", "content": "x"}], "INVALID_CONVERSATION"),
     ([{"role": "user", "content": "x", "date": "12/10/2026"}], "INVALID_DATE"),  # a bad date: one code wherever it is
     ([42], "INVALID_CONVERSATION")],
)
def test_conversations_that_cannot_be_read_are_422(messages, code):
    with pytest.raises(Invalid) as e:
        conversation(messages)
    assert e.value.code == code


def test_one_window_when_it_fits_and_several_when_not():
    messages = [{"role": "user", "content": f"message number {i} " + "x" * 80} for i in range(30)]
    lines = conversation(messages, said_at="2026-10-12")
    assert windows(lines, 100_000) == [lines]
    parts = windows(lines, 1000)
    assert len(parts) > 1
    assert [line for part in parts for line in part] == lines
    assert all(sum(len(prompt.render_line(x)) + 1 for x in part) <= 1000 for part in parts)
    # One message longer than a window is cut, keeping its number and date.
    long = conversation([{"role": "user", "content": "y" * 5000, "date": "2026-10-12"}])
    pieces = windows(long, 1000)
    assert len(pieces) > 1 and {p[0].number for p in pieces} == {1}
    assert "".join(p[0].content for p in pieces) == "y" * 5000


def test_clean_dates_from_the_cited_message_dedupes_and_leaves_secrets_out():
    lines = conversation(
        [
            {"role": "user", "content": "Ana moved to research.", "date": "2026-10-12"},
            {"role": "user", "content": "The launch is Friday.", "date": "2026-10-13"},
        ]
    )
    raw = [
        {"subject": " Ana ", "attribute": "Role", "fact": "Ana works in research", "message": 1},
        {"subject": "Ana", "attribute": "role", "fact": "ana works in research.", "message": 1},  # the same again
        {"subject": "Launch", "attribute": "date", "fact": "The launch is on Friday 16 October.", "message": 2},
        {"subject": "Launch", "attribute": "date", "fact": "Said somewhere.", "message": 99},  # no such message
        {"subject": "Ana", "attribute": "password", "fact": "Ana's password is hunter2xyz.", "message": 1},
        {"subject": "Wifi", "attribute": "password", "fact": "Tr0ub4dor&3xq", "message": 1},  # a secret only together
        {"subject": "Front door", "attribute": "door code", "fact": "It is 4417.", "message": 1},
        {"subject": "Ana", "attribute": "bank", "fact": "Ana's IBAN is DE89 3704 0044 0532 0130 00.", "message": 1},
        {"subject": "Ana", "attribute": "password manager", "fact": "Ana's password manager is Bitwarden.", "message": 2},
        {"subject": "", "attribute": "role", "fact": "Nobody.", "message": 1},
    ]
    out = clean(raw, lines, source="chat: standup")
    assert out.facts == [
        {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "said_at": "2026-10-12",
         "source": "chat: standup"},
        {"subject": "Launch", "attribute": "date", "fact": "The launch is on Friday 16 October.", "said_at": "2026-10-13",
         "source": "chat: standup"},
        {"subject": "Launch", "attribute": "date", "fact": "Said somewhere.", "said_at": "2026-10-13", "source": "chat: standup"},
        {"subject": "Ana", "attribute": "password manager", "fact": "Ana's password manager is Bitwarden.",
         "said_at": "2026-10-13", "source": "chat: standup"},
    ]
    assert out.left_out_secrets == 4
    assert out.dropped == 1


def test_prompt_tells_dates_speakers_and_what_the_memory_knows():
    lines = conversation([{"role": "user", "content": "I moved to research yesterday.", "date": "2026-10-12", "name": "Ana"}])
    messages = prompt.messages(lines, today=date(2026, 12, 2), known={"Ana": ["role", "city"], "Launch": ["date"]})
    system, user = messages[0]["content"], messages[1]["content"]
    assert "yesterday" in system and '"I"' in system
    assert "Today is 2026-12-02 (Wednesday)." in user
    assert "2026-10-12 (Monday)" in user
    assert "Speakers: Ana." in user
    assert "- Ana: city, role" in user and "- Launch: date" in user
    assert "[1] 2026-10-12 Ana (user): I moved to research yesterday." in user
    assert prompt.RESPONSE_FORMAT["type"] == "json_schema"
