"""Notes numbered in a row (a chat saved turn by turn) are read in context: a note beside others found moves
up, and the answer shows a short one with the notes just before and after it, each turn once."""

from __future__ import annotations

from astralyx.metis.cues import cues
from astralyx.metis.search import BUDGET_CHARS, Hit, boost

from .kit import make_base, owner

URL = "/v1/metis/knowledge-bases/{}/search"


def hit(key: str, score: float, kind: str = "notes") -> Hit:
    return Hit(chunk_id=0, document=f"{kind}:chat/{key}", title=key, where=key, text=key, kind=kind, key=key, score=score)


def test_a_note_beside_a_strong_hit_moves_up():
    hits = [hit("notes/t1.md", 0.030), hit("notes/t7.md", 0.020), hit("notes/t2.md", 0.015)]
    order = [h.key for h in boost(hits, cues("anything"), 0.5)]
    assert order == ["notes/t1.md", "notes/t2.md", "notes/t7.md"]  # t2: 0.015 + 0.5 × 0.030 > 0.020
    plain = [hit("docs/t1.md", 0.030, "docs"), hit("docs/t7.md", 0.020, "docs"), hit("docs/t2.md", 0.015, "docs")]
    assert [h.key for h in boost(plain, cues("anything"), 0.5)] == ["docs/t1.md", "docs/t7.md", "docs/t2.md"]


def test_a_chat_turn_is_answered_with_the_turns_around_it(core, client):
    make_base(core, "chat")
    turns = [
        "Ana: Morning! How was the weekend?",
        "Bruno: Quiet. Have you read any good books lately? I need a recommendation.",
        "Ana: Yes, Dune, twice.",
        "Bruno: Thanks, I will look for it.",
        "Ana: See you at lunch.",
    ]
    for i, text in enumerate(turns, start=1):
        core.notes.write(owner(), "chat", "notes", f"turn-{i}.md", text)
    body = client.post(URL.format("chat"), json={"query": "good books recommendation"}).json()
    first = body["results"][0]
    assert first["document"] == "notes:chat/turn-2.md"
    assert first["text"] == "\n".join(turns[0:4])  # two turns each side (there is none before turn 1), in order
    shown = "\n".join(r["text"] for r in body["results"])
    for text in turns:
        assert shown.count(text) <= 1  # each turn once
    assert sum(len(r["text"]) for r in body["results"]) <= BUDGET_CHARS


def test_a_long_note_is_answered_alone(core, client):
    make_base(core, "long")
    long = "Budget" + " figures and more figures" * 20  # past CONTEXT_CHARS, one passage
    core.notes.write(owner(), "long", "notes", "part-1.md", "Budget: the intro.")
    core.notes.write(owner(), "long", "notes", "part-2.md", long)
    body = client.post(URL.format("long"), json={"query": "budget figures"}).json()
    assert [r["text"] for r in body["results"]] == [long, "Budget: the intro."]  # no context added


def test_a_line_said_twice_around_a_turn_is_shown_once(core, client):
    make_base(core, "thanks")
    for i, text in enumerate(["Ana: Thanks!", "Bruno: the budget is approved", "Ana: Thanks!"], start=1):
        core.notes.write(owner(), "thanks", "notes", f"turn-{i}.md", text)
    body = client.post(URL.format("thanks"), json={"query": "budget approved"}).json()
    assert body["results"][0]["text"] == "Ana: Thanks!\nBruno: the budget is approved"


def test_the_context_is_a_stretch_of_the_conversation_without_gaps(core, client):
    make_base(core, "gap")
    for i, text in [(1, "Ana: lunch?"), (2, "Bruno: the budget is approved"), (4, "Ana: great news")]:
        core.notes.write(owner(), "gap", "notes", f"turn-{i}.md", text)
    body = client.post(URL.format("gap"), json={"query": "budget approved"}).json()
    assert body["results"][0]["text"] == "Ana: lunch?\nBruno: the budget is approved"  # turn 3 is missing: not 4


def test_zero_padded_numbers_are_neighbours_too(core, client):
    make_base(core, "padded")
    for i, text in [(9, "Ana: lunch?"), (10, "Bruno: the budget is approved"), (11, "Ana: great news")]:
        core.notes.write(owner(), "padded", "notes", f"turn-{i:03d}.md", text)
    body = client.post(URL.format("padded"), json={"query": "budget approved"}).json()
    assert body["results"][0]["text"] == "Ana: lunch?\nBruno: the budget is approved\nAna: great news"
