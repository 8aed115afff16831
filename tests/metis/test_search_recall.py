"""Ranking rules for recall (issue 32): the keyword ranking's first places in the fusion, a second keyword pass with
the words a chat's first hits share, and the other turns found of the same chat shown beside the nearest hit."""

from __future__ import annotations

from astralyx.metis import search as search_module
from astralyx.metis.expand import feedback_terms
from astralyx.metis.search import BUDGET_CHARS, KEYWORD_PLACES, fusing, rrf

from .kit import make_base, owner

URL = "/v1/metis/knowledge-bases/{}/search"


def test_the_keyword_ranking_counts_for_its_first_places_when_fused_with_vectors():
    keywords = list(range(100, 100 + KEYWORD_PLACES + 5))  # passage 100 first … 114 fifteenth
    vectors = [1, 2, 3, 113]  # 113: thirteenth by keywords, fourth by vectors
    order = [cid for cid, _ in rrf(fusing(keywords, vectors))]
    assert order.index(3) < order.index(113)  # without the rule 113 (1/73 + 1/64) outranked 3 (1/63)
    assert [cid for cid, _ in rrf([keywords, vectors])].index(113) < [cid for cid, _ in rrf([keywords, vectors])].index(3)
    assert 114 not in dict(rrf(fusing(keywords, vectors)))  # past the first places, keywords alone bring nothing
    assert fusing(keywords, []) == [keywords]  # a base without vectors: the whole keyword ranking
    assert fusing([], vectors) == [vectors]


def test_the_words_the_first_hits_share():
    texts = [
        "Mel (8 May 2023): The kids and I made bowls in the pottery class, clay everywhere.",
        "Mel (8 May 2023): The kids want more clay and glaze next week.",
        "Ana (9 May 2023): Bowls! The glaze must be lovely.",
    ]
    # "clay", "glaze", "bowls" are in two of them; "kids" and "pottery" are the question's (by stem: "potteries");
    # "the", "and", "must" are common words; the speakers' names and dates are who said it, not what.
    assert feedback_terms(texts, "Mel kids potteries") == ["bowls", "clay", "glaze"]
    assert feedback_terms(texts[:1], "Mel kids") == []  # one text shares nothing


def test_a_turn_sharing_the_words_of_the_first_hits_moves_up(core, client, monkeypatch):
    make_base(core, "chat")
    turns = {
        1: "Mel: The kids and I made bowls in the pottery class, clay everywhere.",
        2: "Mel: The kids want more clay and glaze next week at pottery.",
        10: "Mel: Honestly the kids loved playing with the clay for hours and hours yesterday.",
        20: "Mel: The kids went to school.",
    }
    for n, text in turns.items():
        core.notes.write(owner(), "chat", "notes", f"turn-{n}.md", text)

    def order():
        body = client.post(URL.format("chat"), json={"query": "What did Mel do in the pottery class with the kids?"})
        assert body.status_code == 200, body.text
        return [r["document"].removeprefix("notes:chat/") for r in body.json()["results"]]

    assert order() == ["turn-1.md", "turn-10.md", "turn-20.md"]  # turn 10 shares "clay" with turns 1 and 2
    monkeypatch.setattr(search_module, "FEEDBACK_WEIGHT", 0.0)
    assert order() == ["turn-1.md", "turn-20.md", "turn-10.md"]  # by the question's words alone: the shorter first


def test_another_turn_found_of_the_same_chat_is_shown_beside_the_nearest_hit(core, client):
    make_base(core, "far")
    turns = {
        1: "Ana: Morning!",
        2: "Bruno: the budget is approved",
        3: "Ana: Great news.",
        4: "Bruno: Lunch at noon?",
        5: "Ana: Sure.",
        11: "Ana: So in the end the budget was approved by the board after all.",
        12: "Bruno: Indeed.",
    }
    for n, text in turns.items():
        core.notes.write(owner(), "far", "notes", f"turn-{n}.md", text)
    body = client.post(URL.format("far"), json={"query": "budget approved", "max_results": 1}).json()
    assert len(body["results"]) == 1
    first = body["results"][0]
    assert first["document"] == "notes:far/turn-2.md"
    # two turns each side, then a gap ("…"), then the other turn found (its own context is not added)
    assert first["text"] == "\n".join([turns[1], turns[2], turns[3], turns[4], "…", turns[11]])
    # each line's own note, in the order of the lines (the hit's own is its document)
    assert first["with_documents"] == [f"notes:far/turn-{n}.md" for n in (1, 3, 4, 11)]
    assert len(first["text"]) <= BUDGET_CHARS
