"""The scripted server itself speaks the protocol the official client expects."""

from openai import OpenAI


def test_openai_client_talks_to_scripted_server(scripted_openai):
    scripted_openai.reply("hello there")
    scripted_openai.reply(tool_calls=[("search_knowledge", {"query": "leave"})])
    client = OpenAI(base_url=scripted_openai.url, api_key="x")
    first = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert first.choices[0].message.content == "hello there"
    stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
    args = "".join(
        c.choices[0].delta.tool_calls[0].function.arguments or ""
        for c in stream
        if c.choices and c.choices[0].delta.tool_calls
    )
    assert args == '{"query": "leave"}'
    assert [r["messages"][0]["content"] for r in scripted_openai.chat_requests] == ["hi", "hi"]
