"""Notes models save: drafts the person decides on, saves on the model's own with Undo, and the limit.

- Ask before saving (the default): the model's note becomes a draft; nothing is written until the
  person chooses Save (…/drafts/<id>/save) or Discard.
- Save on its own: the note is written at once to the base's saved/ folder and listed as a model
  save, which knowledge-bases:write-content may undo (409 NOTE_CHANGED if someone changed it since,
  unless forced).
- At most 30 saves an hour per base from models (SAVE_LIMIT): a model cannot flood a base.
- Who decides on a draft: knowledge-bases:write-content, or the person whose chat made it (the key that
  called; a caller or viewer may save or discard their own draft, as the chat's card offers, but only as
  the model wrote it: an edited title or text needs write-content, else 403 PERMISSION_DENIED). Those
  without write-content see only their own drafts.
- At most 30 drafts an hour per base (DRAFT_LIMIT), and a draft nobody decides on expires
  (after `draft_expiry_days`, 14 by default): a prompt-injected document cannot fill a person's
  review queue. Expired drafts are not shown, and are purged at start.
"""

from __future__ import annotations

import builtins
import json
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import Field

from .. import links
from ..answers import Answer
from ..auth.actor import Actor
from ..auth.roles import DEPLOYMENTS_CALL, READ, WRITE_CONTENT
from ..engines import Database, Row
from ..errors import Conflict, Forbidden, Invalid, NotFound, RateLimited
from ..locks import Locks
from ..util import iso, new_id, now, sha256
from .bases import KnowledgeBase, KnowledgeBases
from .notes import Notes

SAVES_PER_HOUR = 30
DRAFTS_PER_HOUR = 30
DRAFT_DAYS = 14
MAX_TITLE = 200
MAX_TEXT = 50_000


class DraftView(Answer):
    """A note a model proposed, awaiting the person's choice (or as it was decided)."""

    id: str
    knowledge_base: str
    title: str
    text: str
    deployment: str = Field(description="The chat deployment whose model proposed it")
    conversation: str | None
    status: str = Field(description="pending | saved | discarded")
    created_at: str
    expires_at: str | None = Field(description="When a pending draft goes, undecided")
    save: str = Field(description="POST here to keep it")
    discard: str = Field(description="POST here to discard it")
    save_id: str | None = Field(description="Once saved: its model save")


class ModelSaveView(Answer):
    """A note a model saved on its own, and whether it is still as saved."""

    id: str
    knowledge_base: str
    note: str = Field(description="Its path in the base: saved/<path>")
    title: str
    link: str
    deployment: str
    conversation: str | None
    saved_at: str
    asked_first: bool = Field(description="Saved from a draft the person chose to save")
    state: str = Field(description="as_saved | changed | deleted | undone")
    as_saved: bool
    undone_at: str | None
    undo: str | None = Field(description="POST here to undo it (null once undone)")
    message: str


class DraftList(Answer):
    knowledge_base: str
    drafts: list[DraftView]
    expire_after_days: int = Field(description="How long a draft waits for a decision")
    drafts_per_hour: int = Field(description="How many drafts models may propose to the base in an hour")


class ModelSaveList(Answer):
    knowledge_base: str
    saves: list[ModelSaveView]


class SavedDraft(Answer):
    draft: DraftView
    save: ModelSaveView


class DiscardedDraft(Answer):
    draft: DraftView


@dataclass
class Draft:
    id: str
    workspace: str
    knowledge_base: str
    deployment: str
    conversation: str | None
    title: str
    text: str
    status: str
    created_at: str
    save_id: str | None = None
    expires_at: str | None = None  # when a pending draft goes, undecided
    made_by: str | None = None  # the key whose chat made it (None: the local owner, or a draft from before)

    def view(self) -> DraftView:
        address = links.draft(self.knowledge_base, self.id)
        return DraftView.model_construct(
            id=self.id, knowledge_base=self.knowledge_base, title=self.title, text=self.text, deployment=self.deployment,
            conversation=self.conversation, status=self.status, created_at=self.created_at, expires_at=self.expires_at,
            save=f"{address}/save", discard=f"{address}/discard", save_id=self.save_id,
        )

    def to_dict(self) -> dict[str, Any]:
        return self.view().model_dump()


@dataclass
class ModelSave:
    id: str
    workspace: str
    knowledge_base: str
    deployment: str
    conversation: str | None
    title: str
    path: str  # inside saved/
    version: str
    confirmed: bool
    created_at: str
    undone_at: str | None
    state: str = "as_saved"  # as_saved | changed | deleted | undone

    @property
    def link(self) -> str:
        return links.saved_note(self.knowledge_base, self.path)

    @property
    def undo(self) -> str:
        return links.model_save_undo(self.knowledge_base, self.id)

    def view(self) -> ModelSaveView:
        return ModelSaveView.model_construct(
            id=self.id, knowledge_base=self.knowledge_base, note=f"saved/{self.path}", title=self.title, link=self.link,
            deployment=self.deployment, conversation=self.conversation, saved_at=self.created_at,
            asked_first=self.confirmed, state=self.state, as_saved=self.state == "as_saved", undone_at=self.undone_at,
            undo=self.undo if self.state != "undone" else None, message=f"Saved to {self.knowledge_base}: {self.title}",
        )

    def to_dict(self) -> dict[str, Any]:
        return self.view().model_dump()


def slugify(title: str) -> str:
    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode().lower()
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")[:60].strip("-")
    return slug or "note"


def _yaml_str(value: str) -> str:
    # JSON strings are valid YAML double-quoted scalars: the front matter reads as the doc shows.
    return json.dumps(value, ensure_ascii=False)


def note_text(title: str, text: str, *, date: str, conversation: str | None, model: str) -> str:
    front = "\n".join(
        [
            "---",
            f"title: {_yaml_str(title)}",
            f"date: {_yaml_str(date)}",
            'source: "model"',
            f"conversation: {_yaml_str(conversation or '')}",
            f"model: {_yaml_str(model)}",
            "---",
        ]
    )
    body = text.strip()
    if not body.startswith("# "):
        body = f"# {title}\n\n{body}"
    return f"{front}\n\n{body}\n"


def check_note(title: Any, text: Any) -> tuple[str, str]:
    """A model's title and text, or Invalid saying what is missing (told to the model)."""
    if not isinstance(title, str) or not title.strip():
        raise Invalid("title is missing: give the note a short title", code="INVALID_ARGUMENTS")
    if not isinstance(text, str) or not text.strip():
        raise Invalid("text is missing: give the note's text", code="INVALID_ARGUMENTS")
    title = " ".join(title.split())
    if len(title) > MAX_TITLE:
        raise Invalid(f"title is longer than {MAX_TITLE} characters: shorten it", code="INVALID_ARGUMENTS")
    if len(text) > MAX_TEXT:
        raise Invalid(f"text is longer than {MAX_TEXT} characters: save less at once", code="INVALID_ARGUMENTS")
    return title, text


class Saves:
    def __init__(
        self,
        db: Database,
        bases: KnowledgeBases,
        notes: Notes,
        per_hour: int = SAVES_PER_HOUR,
        *,
        drafts_per_hour: int = DRAFTS_PER_HOUR,
        draft_days: int = DRAFT_DAYS,
        locks: Locks,
    ) -> None:
        self.db = db
        self.locks = locks
        self.bases = bases
        self.notes = notes
        self.per_hour = per_hour
        self.drafts_per_hour = drafts_per_hour
        self.draft_days = draft_days

    def _expired_before(self) -> str:
        return iso(now() - timedelta(days=self.draft_days))

    def purge_expired_drafts(self) -> int:
        """Remove the drafts older than draft_days, decided or not (at start). Answers how many."""
        with self.db.transaction() as conn:
            return int(conn.execute("DELETE FROM model_drafts WHERE created_at<?", (self._expired_before(),)).rowcount)

    def forget_base(self, base: KnowledgeBase) -> None:
        """A deleted base takes its drafts and saves along: a new base of that name starts with none."""
        with self.db.transaction() as conn:
            for table in ("model_drafts", "model_saves"):
                conn.execute(f"DELETE FROM {table} WHERE workspace=? AND base=?", (base.workspace, base.name))

    # -- drafts (ask before saving) ----------------------------------------
    def propose(self, base: KnowledgeBase, deployment: str, conversation: str | None, title: Any, text: Any,
                *, made_by: str | None = None) -> Draft:
        """A draft for the person to save or discard, within the per-base limit (DRAFT_LIMIT); nothing
        is written to the base. `made_by`: the key whose chat made it (that person may decide on it)."""
        title, text = check_note(title, text)
        since = iso(now() - timedelta(hours=1))
        # The base's folder lock, as for saves: the count and the insert are one step across processes.
        with self.locks.folder(base.folder):
            count = self.db.scalar(
                "SELECT count(*) AS n FROM model_drafts WHERE workspace=? AND base=? AND created_at>?",
                (base.workspace, base.name, since),
            )
            if count >= self.drafts_per_hour:
                raise RateLimited(
                    f"{base.name} has had {count} drafts from models in the last hour, the most allowed "
                    f"({self.drafts_per_hour} an hour per base): no draft was made. Tell the person, or try again later.",
                    code="DRAFT_LIMIT",
                )
            draft = Draft(new_id("d"), base.workspace, base.name, deployment, conversation, title, text, "pending", iso(),
                          made_by=made_by)
            with self.db.transaction() as conn:
                conn.execute("DELETE FROM model_drafts WHERE created_at<?", (self._expired_before(),))
                conn.execute(
                    "INSERT INTO model_drafts(id, workspace, base, deployment, conversation, title, text, status, "
                    "created_at, made_by) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (draft.id, draft.workspace, draft.knowledge_base, draft.deployment, conversation, title, text,
                     "pending", draft.created_at, made_by),
                )
        return self._expiring(draft)

    def drafts(self, actor: Actor, base_name: str) -> list[Draft]:
        """The base's drafts awaiting a decision, newest first (expired ones are gone): all of them for those who
        may write to the base, else the ones the actor's own chats made."""
        actor.require(DEPLOYMENTS_CALL)
        base = self.bases.get(actor, base_name)
        rows = self.db.query(
            "SELECT * FROM model_drafts WHERE workspace=? AND base=? AND status='pending' AND created_at>=? "
            "ORDER BY created_at DESC, rowid DESC",
            (base.workspace, base.name, self._expired_before()),
        )
        drafts = [self._expiring(self._draft(r)) for r in rows]
        return drafts if actor.can(WRITE_CONTENT) else [d for d in drafts if self._mine(actor, d)]

    @staticmethod
    def _mine(actor: Actor, draft: Draft) -> bool:
        """Made by this key's chat (the local owner has no key, and write-content anyway)."""
        return actor.key_id is not None and actor.key_id == draft.made_by

    def _require_decide(self, actor: Actor, draft: Draft, *, edited: bool) -> None:
        """write-content decides on any draft; its maker on their own, as the model wrote it."""
        if actor.can(WRITE_CONTENT) or (self._mine(actor, draft) and not edited):
            return
        why = ("saving a draft with another title or text" if self._mine(actor, draft)
               else "deciding on a draft another person's chat made")
        raise Forbidden(
            f"{why[0].upper()}{why[1:]} needs the permission {WRITE_CONTENT}, which the role {actor.role!r} does not "
            f"have in workspace {actor.workspace!r}: save or discard it as it is, or ask someone who may write to "
            f"{draft.knowledge_base}",
            code="PERMISSION_DENIED", details={"permission": WRITE_CONTENT},
        )

    @staticmethod
    def _changes(draft: Draft, title: str | None, text: str | None) -> tuple[str, str, bool]:
        """The title and text to keep, checked, and whether they differ from the draft's."""
        title, text = check_note(title if title is not None else draft.title, text if text is not None else draft.text)
        return title, text, (title, text) != (draft.title, draft.text)

    def draft_rules(self) -> dict[str, int]:
        return {"expire_after_days": self.draft_days, "drafts_per_hour": self.drafts_per_hour}

    def _expiring(self, draft: Draft) -> Draft:
        if draft.status == "pending":
            created = datetime.fromisoformat(draft.created_at.replace("Z", "+00:00"))
            draft.expires_at = iso(created + timedelta(days=self.draft_days))
        return draft

    def draft(self, actor: Actor, base_name: str, draft_id: str) -> Draft:
        """A draft, for its maker (the person chatting: the card is theirs, even without permission to read the
        base) or for those who may read the base."""
        draft = self._find(actor, base_name, draft_id)
        if not (self._mine(actor, draft) or actor.can(READ)):
            actor.require(READ)
        return draft

    def _find(self, actor: Actor, base_name: str, draft_id: str) -> Draft:
        actor.require(DEPLOYMENTS_CALL)
        row = self.db.one(
            "SELECT * FROM model_drafts WHERE id=? AND workspace=? AND base=?", (draft_id, actor.workspace, base_name)
        )
        if row is None or row["created_at"] < self._expired_before():
            raise NotFound(f"Draft {draft_id!r} not found in {base_name}: draft ids come in the chat response "
                           f"(astralyx.drafts), and a draft expires after {self.draft_days} days", code="DRAFT_NOT_FOUND")
        return self._expiring(self._draft(row))

    def save_draft(self, actor: Actor, base_name: str, draft_id: str,
                   title: str | None = None, text: str | None = None) -> tuple[Draft, ModelSave]:
        """Save the draft (optionally edited by the person: write-content) to the base's saved/ folder."""
        draft = self._find(actor, base_name, draft_id)
        title, text, edited = self._changes(draft, title, text)
        self._require_decide(actor, draft, edited=edited)
        self._check_pending(draft)
        base = self._base(draft.workspace, base_name)
        save = self._write(base, draft.deployment, draft.conversation, title, text, confirmed=True)
        with self.db.transaction() as conn:
            cur = conn.execute(
                "UPDATE model_drafts SET status='saved', decided_at=?, save_id=?, title=?, text=? "
                "WHERE id=? AND status='pending'",
                (iso(), save.id, title, text, draft.id),
            )
            if cur.rowcount == 0:  # pragma: no cover - decided at the same moment elsewhere
                raise Conflict("This draft was decided on meanwhile", code="DRAFT_DECIDED")
        return self._find(actor, base_name, draft_id), save

    def edit_draft(self, actor: Actor, base_name: str, draft_id: str,
                   title: str | None = None, text: str | None = None) -> Draft:
        """Change a pending draft's title or text before deciding (the card's Edit): write-content, since what
        it writes is then saved (its maker may save only the model's own words)."""
        draft = self._find(actor, base_name, draft_id)
        title, text, edited = self._changes(draft, title, text)
        self._require_decide(actor, draft, edited=edited)
        self._check_pending(draft)
        with self.db.transaction() as conn:
            conn.execute("UPDATE model_drafts SET title=?, text=? WHERE id=? AND status='pending'", (title, text, draft.id))
        return self._find(actor, base_name, draft_id)

    def discard_draft(self, actor: Actor, base_name: str, draft_id: str) -> Draft:
        draft = self._find(actor, base_name, draft_id)
        self._require_decide(actor, draft, edited=False)
        self._check_pending(draft)
        with self.db.transaction() as conn:
            conn.execute("UPDATE model_drafts SET status='discarded', decided_at=? WHERE id=? AND status='pending'",
                         (iso(), draft.id))
        return self._find(actor, base_name, draft_id)

    @staticmethod
    def _check_pending(draft: Draft) -> None:
        if draft.status != "pending":
            raise Conflict(f"Draft {draft.id} was {draft.status} already", code="DRAFT_DECIDED")

    # -- saves on the model's own -----------------------------------------
    def save_now(self, base: KnowledgeBase, deployment: str, conversation: str | None, title: Any, text: Any) -> ModelSave:
        """Write the note at once, within the per-base limit (SAVE_LIMIT: nothing written)."""
        title, text = check_note(title, text)
        since = iso(now() - timedelta(hours=1))
        with self.locks.folder(base.folder):
            count = self.db.scalar(
                "SELECT count(*) AS n FROM model_saves WHERE workspace=? AND base=? AND confirmed=0 AND created_at>?",
                (base.workspace, base.name, since),
            )
            if count >= self.per_hour:
                raise RateLimited(
                    f"{base.name} has had {count} saves from models in the last hour, the most allowed "
                    f"({self.per_hour} an hour per base): nothing was saved. Ask the person whether to keep it "
                    "some other way, or try again later.",
                    code="SAVE_LIMIT",
                )
            return self._write(base, deployment, conversation, title, text, confirmed=False)

    def _write(self, base: KnowledgeBase, deployment: str, conversation: str | None, title: str, text: str,
               *, confirmed: bool) -> ModelSave:
        stamp = iso()
        content = note_text(title, text, date=stamp, conversation=conversation, model=deployment)
        slug = slugify(title)
        with self.locks.folder(base.folder):
            path = f"{slug}.md"
            n = 1
            while self.notes.resolve(base, "saved", path).exists():
                n += 1
                path = f"{slug}-{n}.md"
            note, _ = self.notes.write_in(base, "saved", path, content, None, create_only=True)
            save = ModelSave(new_id("s"), base.workspace, base.name, deployment, conversation, title, path,
                             note.version, confirmed, stamp, None)
            with self.db.transaction() as conn:
                conn.execute(
                    "INSERT INTO model_saves(id, workspace, base, deployment, conversation, title, path, version, "
                    "confirmed, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (save.id, save.workspace, save.knowledge_base, deployment, conversation, title, path, note.version,
                     int(confirmed), stamp),
                )
        return save

    # -- listing and undo --------------------------------------------------
    def list(self, actor: Actor, base_name: str) -> builtins.list[ModelSave]:
        base = self.bases.get(actor, base_name)
        actor.require(READ)
        rows = self.db.query(
            "SELECT * FROM model_saves WHERE workspace=? AND base=? ORDER BY created_at DESC, rowid DESC",
            (base.workspace, base.name),
        )
        return [self._with_state(base, self._save(r)) for r in rows]

    def get(self, actor: Actor, base_name: str, save_id: str) -> ModelSave:
        base = self.bases.get(actor, base_name)
        row = self.db.one("SELECT * FROM model_saves WHERE id=? AND workspace=? AND base=?",
                          (save_id, base.workspace, base.name))
        if row is None:
            raise NotFound(f"No model save {save_id!r} in {base_name}: `GET …/{base_name}/model-saves` lists them",
                           code="SAVE_NOT_FOUND")
        return self._with_state(base, self._save(row))

    def undo(self, actor: Actor, base_name: str, save_id: str, *, force: bool = False) -> ModelSave:
        """Remove the saved note; if it changed since the save, only with force (else 409 NOTE_CHANGED)."""
        actor.require(WRITE_CONTENT)
        base = self.bases.get(actor, base_name)
        with self.locks.folder(base.folder):
            save = self.get(actor, base_name, save_id)
            if save.state == "undone":
                raise Conflict(f"Save {save_id} was undone already ({save.undone_at})", code="SAVE_UNDONE")
            if save.state == "changed" and not force:
                raise Conflict(
                    f"saved/{save.path} was changed since the model saved it: undo removes it with those changes. "
                    "Read it first, or undo with ?force=true",
                    code="NOTE_CHANGED",
                    details={"note": f"saved/{save.path}", "saved_version": save.version},
                )
            if save.state != "deleted":
                self.notes.delete_in(base, "saved", save.path)
            with self.db.transaction() as conn:
                conn.execute("UPDATE model_saves SET undone_at=? WHERE id=?", (iso(), save_id))
        return self.get(actor, base_name, save_id)

    # -- rows --------------------------------------------------------------
    def _base(self, workspace: str, name: str) -> KnowledgeBase:
        base = self.bases.find(workspace, name)
        if base is None:
            raise NotFound(f"Knowledge base {name!r} no longer exists", code="BASE_NOT_FOUND")
        return base

    def _with_state(self, base: KnowledgeBase, save: ModelSave) -> ModelSave:
        if save.undone_at:
            save.state = "undone"
            return save
        file = self.notes.resolve(base, "saved", save.path)
        try:
            version = sha256(file.read_bytes())
        except FileNotFoundError:
            save.state = "deleted"
            return save
        save.state = "as_saved" if version == save.version else "changed"
        return save

    @staticmethod
    def _save(row: Row) -> ModelSave:
        return ModelSave(
            row["id"], row["workspace"], row["base"], row["deployment"], row["conversation"], row["title"], row["path"],
            row["version"], bool(row["confirmed"]), row["created_at"], row["undone_at"],
        )

    @staticmethod
    def _draft(row: Row) -> Draft:
        return Draft(
            row["id"], row["workspace"], row["base"], row["deployment"], row["conversation"], row["title"], row["text"],
            row["status"], row["created_at"], row["save_id"], made_by=row["made_by"],
        )
