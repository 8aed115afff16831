"""Small real chat archives in ChatGPT's and Claude's export formats, and an extractor that reads them.

The archives are what the vendors write: a zip with conversations.json (and, for ChatGPT, other files
beside it); ChatGPT's conversations are trees of message nodes (an edited message is a branch), Claude's
are lists of chat messages with text or content blocks.
"""

from __future__ import annotations

import io
import json
import time
import zipfile
from datetime import UTC, datetime


def ts(day: str) -> float:
    """Unix seconds of 'YYYY-MM-DD HH:MM' (UTC), as ChatGPT writes create_time."""
    return datetime.fromisoformat(day).replace(tzinfo=UTC).timestamp()


def chatgpt_conversation(cid: str, title: str, day: str, messages: list[tuple[str, str]], *,
                         edited: tuple[int, str] | None = None) -> dict:
    """A conversation as ChatGPT exports it: a system node, then the messages (role, text), one a minute.

    edited=(i, text): message i was first sent as `text` and then edited: the first version is a branch
    off the same parent that current_node does not lead to (it must not be read).
    """
    start = ts(day)
    mapping: dict[str, dict] = {"root": {"id": "root", "message": None, "parent": None, "children": ["sys"]}}
    mapping["sys"] = {"id": "sys", "parent": "root", "children": [], "message": {
        "id": "sys", "author": {"role": "system"}, "create_time": None,
        "content": {"content_type": "text", "parts": [""]}, "metadata": {"is_visually_hidden_from_conversation": True}}}
    parent = "sys"
    for i, (role, text) in enumerate(messages):
        node = f"{cid}-m{i}"
        mapping[node] = {"id": node, "parent": parent, "children": [], "message": {
            "id": node, "author": {"role": role}, "create_time": start + 60 * i,
            "content": {"content_type": "text", "parts": [text]}, "metadata": {}}}
        if edited is not None and edited[0] == i:
            old = f"{cid}-m{i}-first"
            mapping[old] = {"id": old, "parent": parent, "children": [], "message": {
                "id": old, "author": {"role": role}, "create_time": start + 60 * i - 30,
                "content": {"content_type": "text", "parts": [edited[1]]}, "metadata": {}}}
            mapping[parent]["children"].append(old)
        mapping[parent]["children"].append(node)
        parent = node
    # A tool's output and an image part: not what was said.
    tool = f"{cid}-tool"
    mapping[tool] = {"id": tool, "parent": parent, "children": [], "message": {
        "id": tool, "author": {"role": "tool"}, "create_time": start + 3000,
        "content": {"content_type": "execution_output", "text": "TOOL OUTPUT"}, "metadata": {}}}
    mapping[parent]["children"].append(tool)
    return {"id": cid, "conversation_id": cid, "title": title, "create_time": start, "update_time": start + 600,
            "mapping": mapping, "current_node": parent}


def claude_conversation(uuid: str, name: str, day: str, messages: list[tuple[str, str]], *, blocks: bool = False) -> dict:
    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    chat = []
    for i, (sender, text) in enumerate(messages):
        at = start.replace(minute=i).isoformat().replace("+00:00", ".123456Z")
        item: dict = {"uuid": f"{uuid}-{i}", "sender": sender, "created_at": at, "updated_at": at,
                      "attachments": [], "files": []}
        if blocks:
            item["text"] = ""
            item["content"] = [{"type": "text", "text": text}, {"type": "tool_use", "name": "web_search", "input": {}}]
        else:
            item["text"] = text
        chat.append(item)
    return {"uuid": uuid, "name": name, "created_at": start.isoformat().replace("+00:00", ".000000Z"),
            "updated_at": start.isoformat(), "account": {"uuid": "acc"}, "chat_messages": chat}


def zipped(conversations: list[dict], *, folder: str = "", extra: dict[str, bytes] | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{folder}conversations.json", json.dumps(conversations))
        z.writestr(f"{folder}user.json", json.dumps({"id": "user-1"}))
        for name, data in (extra or {}).items():
            z.writestr(name, data)
    return out.getvalue()


CHATGPT = [
    chatgpt_conversation("c-standup", "Team standup", "2026-10-12 09:00",
                         [("user", "Ana moved to research this week."), ("assistant", "Noted: Ana works in research now.")],
                         edited=(0, "Ana moved to marketing this week.")),
    chatgpt_conversation("c-march", "Planning in March", "2026-03-01 10:00",
                         [("user", "Ana leads the data team."), ("assistant", "Got it.")]),
    chatgpt_conversation("c-empty", "Empty chat", "2026-05-05 10:00", []),
    chatgpt_conversation("c-pt", "Reunião em São Paulo", "2026-06-15 10:00",
                         [("user", "Bruno mora em Recife agora."), ("assistant", "Anotado.")]),
]

CLAUDE = [
    claude_conversation("u-1", "Launch planning", "2026-09-01 08:00",
                        [("human", "The launch moved to Friday 16 October."), ("assistant", "Noted.")], blocks=True),
    claude_conversation("u-2", "Ana's new role", "2026-09-20 08:00",
                        [("human", "Ana leads the platform team now."), ("assistant", "Noted.")]),
]

# What the scripted extractor finds: a phrase of a message → the fact it proposes (message 1: the user's).
RULES = {
    "Ana moved to research": ("Ana", "role", "Ana works in research."),
    "Ana moved to marketing": ("Ana", "role", "Ana works in marketing."),
    "Ana leads the data team": ("Ana", "role", "Ana leads the data team."),
    "Ana leads the platform team": ("Ana", "role", "Ana leads the platform team."),
    "Bruno mora em Recife": ("Bruno", "cidade", "Bruno mora em Recife."),
    "launch moved to Friday": ("Launch", "date", "The launch is on Friday 16 October."),
}


def extractor_answer(request: dict) -> str:
    """The scripted extractor: the facts of RULES whose phrase is in the conversation it was sent."""
    text = request["messages"][-1]["content"].split("The conversation, one message a line:", 1)[-1]
    facts = [{"subject": s, "attribute": a, "fact": f, "message": 1} for phrase, (s, a, f) in RULES.items() if phrase in text]
    if "my password is" in text:
        facts.append({"subject": "Wifi", "attribute": "password", "fact": "The wifi password is sunflower42.", "message": 1})
    return json.dumps({"facts": facts})


URL = "/v1/metis/knowledge-bases/team/imports"


def upload(client, data: bytes, name: str = "chatgpt-export.zip"):
    return client.post(URL, files={"archive": (name, data, "application/zip")})


def wait_for(client, job_id: str, until=lambda job: job["state"] != "running") -> dict:
    """Follow the job as the CLI does until `until` holds (the deadline only stops a hung test)."""
    deadline = time.monotonic() + 60
    while True:
        job = client.get(f"{URL}/{job_id}").json()
        if until(job) or time.monotonic() > deadline:
            return job
        time.sleep(0.05)


def facts_kept(client) -> list[str]:
    memory = client.get("/v1/metis/knowledge-bases/team/memory", params={"history": "true"}).json()
    return sorted(f["fact"] for g in memory["subjects"] for f in g["facts"])


def imports_folder(core):
    return core.bases.find("default", "team").folder / ".imports"
