"""Who is asking: a workspace, a role, and the permissions that follow."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import Forbidden
from .roles import permissions_of

# Set in the ASGI scope by the local CLI's in-process client (never reachable from the
# network): the data directory's owner acting in a workspace.
LOCAL_OWNER_SCOPE_KEY = "astralyx.local_owner"


@dataclass(frozen=True)
class Actor:
    workspace: str
    role: str
    key_id: str | None = None  # None: the data directory's owner at the local CLI
    permissions: frozenset[str] = field(default=frozenset())

    @classmethod
    def of(cls, workspace: str, role: str, key_id: str | None = None) -> Actor:
        return cls(workspace, role, key_id, permissions_of(role, workspace))

    @classmethod
    def local_owner(cls, workspace: str) -> Actor:
        """The person at the machine's own CLI: may do everything in every workspace."""
        from .roles import ROLES, WORKSPACES_MANAGE

        return cls(workspace, "admin", None, ROLES["admin"] | {WORKSPACES_MANAGE})

    def can(self, permission: str) -> bool:
        return permission in self.permissions

    def require(self, permission: str) -> None:
        if permission not in self.permissions:
            raise Forbidden(
                f"This needs the permission {permission}, which the role {self.role!r} "
                f"does not have in workspace {self.workspace!r}: ask an admin for a key with it",
                code="PERMISSION_DENIED",
                details={"permission": permission},
            )
