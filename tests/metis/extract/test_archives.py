"""Reading the vendors' exports: what is a message, which branch, which dates; the filters a person chooses by."""

from __future__ import annotations

import json

import pytest

from astralyx.errors import AstralyxError
from astralyx.metis.memory.archives import choose, read_archive

from .archives_kit import CHATGPT, CLAUDE, chatgpt_conversation, claude_conversation, zipped


def test_chatgpt_reads_the_branch_seen_last_and_only_the_text_said():
    conv = chatgpt_conversation("c1", "Edits", "2026-04-01 08:00",
                                [("user", "Meu gerente é o Carlos."), ("assistant", "Entendido.")],
                                edited=(0, "Meu gerente é o Pedro."))
    last = conv["current_node"]
    # An image beside the text (multimodal), and custom instructions: the text part only, no instructions.
    conv["mapping"][last]["message"]["content"] = {
        "content_type": "multimodal_text", "parts": [{"content_type": "image_asset_pointer", "asset_pointer": "file-1"},
                                                     "Entendido, Carlos."]}
    conv["mapping"]["sys"]["message"] = {"id": "sys", "author": {"role": "user"}, "create_time": None,
                                         "content": {"content_type": "user_editable_context", "user_profile": "I am Ana"}}
    (read,) = read_archive(zipped([conv])).conversations
    assert [(m.role, m.text) for m in read.messages] == [("user", "Meu gerente é o Carlos."), ("assistant", "Entendido, Carlos.")]
    assert read.messages[0].time == "2026-04-01T08:00:00Z" and read.created_at == "2026-04-01T08:00:00Z"

    # Without current_node: from the root, the latest child each time (the edit, not the first version).
    del conv["current_node"]
    (read,) = read_archive(json.dumps([conv]).encode()).conversations
    assert read.messages[0].text == "Meu gerente é o Carlos."


def test_claude_reads_text_or_content_blocks_never_attachments():
    conv = claude_conversation("u1", "Docs", "2026-05-02 09:00", [("human", "Ana runs the Lisbon office."), ("assistant", "OK")])
    conv["chat_messages"][0]["attachments"] = [{"file_name": "notes.txt", "extracted_content": "Bruno's PIN is 1234"}]
    blocks = claude_conversation("u2", "", "2026-05-03 09:00", [("human", "法务部的负责人是王伟。")], blocks=True)
    archive = read_archive(zipped([conv, blocks]))
    assert archive.format == "claude"
    docs, chinese = archive.conversations
    assert [m.text for m in docs.messages] == ["Ana runs the Lisbon office.", "OK"]
    assert "PIN" not in json.dumps(docs.to_dict())
    assert chinese.title == "(untitled)" and chinese.messages[0].text == "法务部的负责人是王伟。"
    assert docs.messages[0].time == "2026-05-02T09:00:00Z"


def test_the_same_id_twice_is_told_apart_and_empty_conversations_are_never_chosen():
    archive = read_archive(zipped([CHATGPT[0], CHATGPT[0], CHATGPT[2]]))
    assert [c.id for c in archive.conversations] == ["c-empty", "c-standup", "c-standup~"]
    assert [c.id for c in choose(archive.conversations)] == ["c-standup", "c-standup~"]


@pytest.mark.parametrize("kwargs, chosen", [
    ({"since": "2026-09-20"}, ["u-2"]),
    ({"until": "2026-09-01"}, ["u-1"]),
    ({"title": "LAUNCH"}, ["u-1"]),
    ({"title": "ana?s*"}, ["u-2"]),
    ({"ids": ["u-2"], "since": "2026-09-01"}, ["u-2"]),
    ({"title": "launch", "since": "2026-09-02"}, []),
])
def test_filters(kwargs, chosen):
    archive = read_archive(json.dumps(CLAUDE).encode())
    assert [c.id for c in choose(archive.conversations, **kwargs)] == chosen


def test_a_date_that_is_not_one_is_refused():
    with pytest.raises(AstralyxError) as e:
        choose([], since="March")
    assert (e.value.status, e.value.code) == (422, "INVALID_DATE")
