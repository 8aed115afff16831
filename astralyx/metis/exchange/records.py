"""The records a base takes along: its model saves (what Saved by models lists, with undo).

A model save is a row of the records (astralyx.db or PostgreSQL) naming a note of saved/ and the version the
model wrote; it moves with the note, so the list, each save's state (as saved, changed, deleted, undone) and
its undo are the same after an import. What stays: drafts (waiting on a person of this instance, for the key
whose chat made them, and expiring), receipts (signed with this instance's key, about its deployments' calls)
and sync jobs (this instance's work).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ...engines import Database
from ...util import new_id
from ..bases import KnowledgeBase
from ..notes import check_path
from .archive import invalid

ID = r"^s_[0-9a-f]{16}$"


class SaveRecord(BaseModel):
    """One model save, as it travels (the base it belongs to is the one it is imported with)."""

    model_config = ConfigDict(extra="ignore")
    id: str = Field(pattern=ID)
    deployment: str = Field(max_length=500)
    conversation: str | None = Field(default=None, max_length=10_000)
    title: str = Field(max_length=1000)
    path: str  # inside saved/
    version: str = Field(pattern=r"^[0-9a-f]{64}$")
    confirmed: bool
    created_at: str = Field(max_length=64)
    undone_at: str | None = Field(default=None, max_length=64)


_RECORDS = TypeAdapter(list[SaveRecord])


def saves_of(db: Database, base: KnowledgeBase) -> list[dict[str, Any]]:
    """The base's model saves, oldest first (the order they were made in, ties too)."""
    rows = db.query(
        "SELECT * FROM model_saves WHERE workspace=? AND base=? ORDER BY created_at, rowid", (base.workspace, base.name)
    )
    return [SaveRecord(id=r["id"], deployment=r["deployment"], conversation=r["conversation"], title=r["title"],
                       path=r["path"], version=r["version"], confirmed=bool(r["confirmed"]), created_at=r["created_at"],
                       undone_at=r["undone_at"]).model_dump() for r in rows]


def read_saves(data: bytes) -> list[SaveRecord]:
    try:
        saves = _RECORDS.validate_python(json.loads(data))
    except (ValueError, ValidationError) as e:
        raise invalid(f"model-saves.json is not a list of model saves ({str(e).splitlines()[0]})") from None
    for save in saves:
        try:
            check_path(save.path)
        except Exception:
            raise invalid(f"model-saves.json: {save.path!r} is not a note's path") from None
    return saves


def add_saves(db: Database, base: KnowledgeBase, saves: list[SaveRecord]) -> int:
    """Insert the saves for the base, in their order; a save keeps its id unless this instance has it already
    (the same base imported twice under two names)."""
    with db.transaction() as conn:
        for save in saves:
            taken = conn.execute("SELECT 1 FROM model_saves WHERE id=?", (save.id,)).fetchone()
            conn.execute(
                "INSERT INTO model_saves(id, workspace, base, deployment, conversation, title, path, version, confirmed, "
                "created_at, undone_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (new_id("s") if taken else save.id, base.workspace, base.name, save.deployment, save.conversation,
                 save.title, save.path, save.version, int(save.confirmed), save.created_at, save.undone_at),
            )
    return len(saves)
