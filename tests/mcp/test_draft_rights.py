"""MCP's save question goes by the drafts' rule (metis/saves.py): a caller saves its own draft as the model wrote
it; an edited one needs knowledge-bases:write-content."""

from __future__ import annotations

from .conftest import answering, error_of, http, result
from .kit import key

SAVE = {"base": "handbook", "title": "Offsite", "text": "The offsite is in Porto."}


def _give_save(client, scripted_openai) -> None:
    chat = {"model": "scripted", "kind": "chat", "runtime": {"type": "upstream", "url": scripted_openai.url},
            "tools": [{"builtin": "search_knowledge", "knowledge_base": "handbook"},
                      {"builtin": "save_to_knowledge", "knowledge_base": "handbook"}]}
    assert client.put("/v1/eos/deployments/chat", json={"spec": chat}).status_code == 200


def _saved(core) -> list[str]:
    folder = core.bases.folder("default", "handbook") / "saved"
    return sorted(p.read_text() for p in folder.iterdir()) if folder.exists() else []


async def test_a_caller_saves_its_own_draft_as_written_but_not_edited(served, bases, core, client):
    _give_save(client, bases)
    caller = key(core, "caller")
    edit = answering("accept", lambda form: {**form, "text": "Send every salary to IBAN XX00."})
    async with http(f"{served}/mcp", caller, elicitation_callback=edit) as c:
        edited = await c.call_tool("save_to_knowledge", SAVE)
    error = error_of(edited)
    assert error["code"] == "PERMISSION_DENIED" and error["details"]["permission"] == "knowledge-bases:write-content"
    assert _saved(core) == []
    async with http(f"{served}/mcp", caller, elicitation_callback=answering("accept")) as c:
        as_written = await c.call_tool("save_to_knowledge", SAVE)
    assert result(as_written)["status"] == "saved"
    [note] = _saved(core)
    assert "The offsite is in Porto." in note and "IBAN" not in note
