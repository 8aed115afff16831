"""Workspaces and API keys. Keys are stored as SHA-256 hashes, never in clear."""

from __future__ import annotations

import builtins
import secrets
from collections.abc import Callable
from typing import cast

from pydantic import Field

from ..answers import Answer, absent
from ..engines import Database, Row
from ..errors import Conflict, Invalid, NotFound, Unauthorized
from ..util import check_name, iso, new_id, sha256
from .actor import Actor
from .roles import KEYS_MANAGE, ROLES, WORKSPACES_MANAGE


class Key(Answer):
    """An API key as shown: never the key itself (only its hash is kept)."""

    id: str
    workspace: str
    role: str
    name: str
    created_at: str
    last_used_at: str | None = Field(description="To the minute")
    revoked_at: str | None


class Workspace(Answer):
    name: str
    created_at: str | None = absent("Listed; not in the answer to its creation")


class Workspaces:
    def __init__(self, db: Database) -> None:
        self.db = db
        # Called with the name of each new workspace (e.g. to give it the default deployments).
        self.on_create: list[Callable[[str], None]] = []

    def create(self, actor: Actor | None, name: str) -> Workspace:
        if actor is not None:
            actor.require(WORKSPACES_MANAGE)
        check_name(name, "Workspace")
        with self.db.transaction() as conn:
            if conn.execute("SELECT 1 FROM workspaces WHERE name=?", (name,)).fetchone():
                raise Conflict(f"Workspace {name!r} exists already", code="WORKSPACE_EXISTS")
            conn.execute("INSERT INTO workspaces(name, created_at) VALUES (?, ?)", (name, iso()))
        for hook in self.on_create:
            hook(name)
        return Workspace(name=name)

    def list(self, actor: Actor) -> builtins.list[Workspace]:
        if actor.can(WORKSPACES_MANAGE):
            rows = self.db.query("SELECT name, created_at FROM workspaces ORDER BY name")
        else:
            rows = self.db.query("SELECT name, created_at FROM workspaces WHERE name=?", (actor.workspace,))
        return [Workspace(name=r["name"], created_at=r["created_at"]) for r in rows]

    def exists(self, name: str) -> bool:
        return self.db.one("SELECT 1 FROM workspaces WHERE name=?", (name,)) is not None


class Keys:
    def __init__(self, db: Database) -> None:
        self.db = db

    def _check_can_manage(self, actor: Actor | None, workspace: str) -> None:
        if actor is None:
            return
        if workspace != actor.workspace:
            actor.require(WORKSPACES_MANAGE)
        else:
            actor.require(KEYS_MANAGE)

    def create(
        self, actor: Actor | None, workspace: str, role: str, name: str = "", token: str | None = None
    ) -> tuple[Key, str]:
        """A new key; the token is returned once and only its hash is kept."""
        self._check_can_manage(actor, workspace)
        if role not in ROLES:
            raise Invalid(f"Role {role!r} does not exist: choose one of {', '.join(ROLES)}", code="INVALID_ROLE")
        if not self.db.one("SELECT 1 FROM workspaces WHERE name=?", (workspace,)):
            raise NotFound(
                f"Workspace {workspace!r} does not exist: create it first (astra workspaces create {workspace})"
            )
        token = token or "ax_" + secrets.token_urlsafe(32)
        key = Key(id=new_id("k", 6), workspace=workspace, role=role, name=name, created_at=iso(), last_used_at=None,
                  revoked_at=None)
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO keys(id, workspace, role, name, hash, created_at) VALUES (?,?,?,?,?,?)",
                (key.id, workspace, role, name, sha256(token), key.created_at),
            )
        return key, token

    def list(self, actor: Actor, workspace: str | None = None) -> builtins.list[Key]:
        workspace = workspace or actor.workspace
        self._check_can_manage(actor, workspace)
        rows = self.db.query("SELECT * FROM keys WHERE workspace=? ORDER BY created_at, id", (workspace,))
        return [self._key(r) for r in rows]

    def revoke(self, actor: Actor, key_id: str) -> Key:
        row = self.db.one("SELECT * FROM keys WHERE id=?", (key_id,))
        if row is None or (row["workspace"] != actor.workspace and not actor.can(WORKSPACES_MANAGE)):
            raise NotFound(f"Key {key_id!r} not found: `astra keys list` shows the keys of a workspace")
        self._check_can_manage(actor, row["workspace"])
        with self.db.transaction() as conn:
            conn.execute("UPDATE keys SET revoked_at=? WHERE id=? AND revoked_at IS NULL", (iso(), key_id))
        return self._key(cast(Row, self.db.one("SELECT * FROM keys WHERE id=?", (key_id,))))

    def authenticate(self, token: str) -> Actor:
        row = self.db.one("SELECT * FROM keys WHERE hash=?", (sha256(token),))
        if row is None or row["revoked_at"] is not None:
            raise Unauthorized(
                "This API key is not valid (unknown or revoked): use a key from `astra keys create`",
                code="INVALID_KEY",
            )
        stamp = iso()
        # Record use at most once a minute: a write per request would contend with real writers.
        if (row["last_used_at"] or "")[:16] != stamp[:16]:
            self.db.execute("UPDATE keys SET last_used_at=? WHERE id=?", (stamp, row["id"]))
        return Actor.of(row["workspace"], row["role"], row["id"])

    def count(self) -> int:
        return int(self.db.scalar("SELECT count(*) FROM keys"))

    @staticmethod
    def _key(row: Row) -> Key:
        return Key(id=row["id"], workspace=row["workspace"], role=row["role"], name=row["name"],
                   created_at=row["created_at"], last_used_at=row["last_used_at"], revoked_at=row["revoked_at"])
