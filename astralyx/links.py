"""Where the HTTP API lives, and the addresses of its resources that answers point at.

The app mounts the API at API_ROOT; a draft's save and discard, a model save's note and undo come in
answers (chat, MCP, the API) as these addresses. Written here once, so the domain never spells a URL.
"""

from __future__ import annotations

API_ROOT = "/v1"


def base(name: str) -> str:
    """A knowledge base's address in the API."""
    return f"{API_ROOT}/metis/knowledge-bases/{name}"


def draft(base_name: str, draft_id: str) -> str:
    return f"{base(base_name)}/drafts/{draft_id}"


def saved_note(base_name: str, path: str) -> str:
    return f"{base(base_name)}/saved/{path}"


def model_save_undo(base_name: str, save_id: str) -> str:
    return f"{base(base_name)}/model-saves/{save_id}/undo"
