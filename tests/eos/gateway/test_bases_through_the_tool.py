"""A documents base (an uploaded file, and a folder source) and a memory base, searched through the tool."""

from __future__ import annotations

import json

import pytest

from .conftest import openai_for, put_deployment


@pytest.fixture(autouse=True)
def _source_roots(monkeypatch, tmp_path):
    """API keys name folder sources here: the operator allows the test's folder (metis/roots.py)."""
    monkeypatch.setenv("ASTRALYX_SOURCE_ROOTS", str(tmp_path))

LEAVE = "# Leave policy\n\n## Vacation\n\nEach person has 25 vacation days a year.\n\n## Parental leave\n\nSixteen weeks.\n"


def search_through_the_tool(client, scripted_openai, base: str, query: str) -> dict:
    put_deployment(client, "chat", scripted_openai.url, [{"builtin": "search_knowledge", "knowledge_base": base}])
    scripted_openai.reply(tool_calls=[("search_knowledge", {"query": query})])
    scripted_openai.reply("Answer [1].")
    answer = openai_for(client).chat.completions.create(model="chat", messages=[{"role": "user", "content": query}])
    assert answer.choices[0].message.content == "Answer [1]."
    return json.loads(scripted_openai.chat_requests[-1]["messages"][-1]["content"])


def test_an_uploaded_document_is_found_and_cited(client, scripted_openai):
    assert client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "handbook"}}).status_code == 201
    r = client.post("/v1/metis/knowledge-bases/handbook/files", files={"file": ("leave.md", LEAVE, "text/markdown")})
    assert r.status_code == 201, r.text
    result = search_through_the_tool(client, scripted_openai, "handbook", "vacation days")
    first = result["results"][0]
    assert first["ref"] == 1 and first["document"].endswith("leave.md") and first["title"] == "Leave policy"
    assert first["where"].startswith("Leave policy › Vacation › line ")
    assert "25 vacation days" in first["text"]
    assert result["note"].startswith("Answer from these passages")
    assert len(result["results"]) <= 8 and sum(len(p["text"]) for p in result["results"]) <= 6500


def test_a_folder_source_is_found(client, scripted_openai, tmp_path):
    folder = tmp_path / "handbook-src"
    folder.mkdir()
    (folder / "leave.md").write_text(LEAVE)
    r = client.post("/v1/metis/knowledge-bases",
                    json={"metadata": {"name": "handbook"}, "spec": {"sources": [{"folder": str(folder)}]}})
    assert r.status_code == 201, r.text
    assert client.post("/v1/metis/knowledge-bases/handbook/sync").status_code == 200
    result = search_through_the_tool(client, scripted_openai, "handbook", "parental leave weeks")
    assert any("Sixteen weeks" in p["text"] for p in result["results"])


def test_a_memory_base_is_searched_current_facts_first(client, scripted_openai):
    r = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "team"}, "spec": {"kind": "memory"}})
    assert r.status_code == 201, r.text
    r = client.post("/v1/metis/knowledge-bases/team/memory", json={"facts": [
        {"subject": "Ana", "attribute": "role", "fact": "Ana leads the data team.", "source": "chat: reorg",
         "said_at": "2026-09-01T10:00:00Z"},
        {"subject": "Ana", "attribute": "role", "fact": "Ana works in research.", "source": "chat: standup",
         "said_at": "2026-10-12T10:00:00Z"},
    ]})
    assert r.status_code == 200, r.text
    result = search_through_the_tool(client, scripted_openai, "team", "What is Ana's role?")
    assert result["knowledge_base"] == "team"
    texts = [p["text"] for p in result["results"]]
    assert any("research" in t for t in texts)
    assert "research" in texts[0]  # what holds now comes first
    assert list(result["results"][0]) == ["ref", "document", "title", "where", "text"]
