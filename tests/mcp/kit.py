"""Helpers of the MCP tests: a key of a role, the initialize request."""

from __future__ import annotations

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "curl", "version": "1"}}}


def key(core, role: str, workspace: str = "default") -> str:
    if not core.workspaces.exists(workspace):
        core.workspaces.create(None, workspace)
    return core.keys.create(None, workspace, role)[1]
