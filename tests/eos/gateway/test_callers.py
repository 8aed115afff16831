"""Who searches through a deployment: anyone who may call it, even without reading the base."""

from __future__ import annotations

import json

from .conftest import openai_for


def test_a_caller_key_searches_through_the_deployment_but_not_directly(chat, key_client):
    caller = key_client("caller")
    # The caller cannot read the base itself…
    direct = caller.post("/v1/metis/knowledge-bases/handbook/search", json={"query": "vacation days"})
    assert direct.status_code == 403 and "knowledge-bases:read" in direct.json()["error"]["message"]
    assert caller.get("/v1/metis/knowledge-bases").status_code == 403
    # …but its deployment's model can, as the doc warns.
    chat.reply(tool_calls=[("search_knowledge", {"query": "vacation days"})])
    chat.reply("You have 25 vacation days a year [1].")
    answer = openai_for(caller).chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "How many vacation days do I have?"}]
    )
    assert answer.choices[0].message.content == "You have 25 vacation days a year [1]."
    tool_message = next(m for m in chat.chat_requests[1]["messages"] if m["role"] == "tool")
    result = json.loads(tool_message["content"])
    assert result["knowledge_base"] == "handbook"
    assert "25 vacation days" in result["results"][0]["text"]
