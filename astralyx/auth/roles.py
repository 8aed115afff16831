"""Roles and the named permissions each grants."""

from __future__ import annotations

READ = "knowledge-bases:read"
WRITE_CONTENT = "knowledge-bases:write-content"
MANAGE_BASES = "knowledge-bases:manage"
DEPLOYMENTS_READ = "deployments:read"
DEPLOYMENTS_CALL = "deployments:call"
DEPLOYMENTS_UPDATE = "deployments:update"
KEYS_MANAGE = "keys:manage"
# Granted only to admins of the instance's own workspace (`default`) and to the
# data directory's owner at the local CLI: workspaces span the whole instance.
WORKSPACES_MANAGE = "workspaces:manage"

INSTANCE_WORKSPACE = "default"

ROLES: dict[str, frozenset[str]] = {
    # An application's key: may call the workspace's deployments (and so, through their
    # built-in tools, search the bases given to them) but not read any base itself.
    "caller": frozenset({DEPLOYMENTS_READ, DEPLOYMENTS_CALL}),
    "viewer": frozenset({READ, DEPLOYMENTS_READ, DEPLOYMENTS_CALL}),
    "editor": frozenset({READ, WRITE_CONTENT, DEPLOYMENTS_READ, DEPLOYMENTS_CALL, DEPLOYMENTS_UPDATE}),
    "admin": frozenset(
        {READ, WRITE_CONTENT, MANAGE_BASES, DEPLOYMENTS_READ, DEPLOYMENTS_CALL, DEPLOYMENTS_UPDATE, KEYS_MANAGE}
    ),
}


def permissions_of(role: str, workspace: str) -> frozenset[str]:
    perms = ROLES[role]
    if role == "admin" and workspace == INSTANCE_WORKSPACE:
        perms = perms | {WORKSPACES_MANAGE}
    return perms
