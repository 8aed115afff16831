"""The steps of the instance's records (`astralyx.db`, or the PostgreSQL database): append, never edit."""

from __future__ import annotations

from . import Step

# The tables as the first release made them (each module created its own); portable SQL.
V1 = """
CREATE TABLE IF NOT EXISTS workspaces (
    name TEXT PRIMARY KEY,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS keys (
    id TEXT PRIMARY KEY,
    workspace TEXT NOT NULL REFERENCES workspaces(name) ON DELETE CASCADE,
    role TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    hash TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at TEXT
);
CREATE TABLE IF NOT EXISTS bases (
    workspace TEXT NOT NULL REFERENCES workspaces(name) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    spec TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (workspace, name)
);
CREATE TABLE IF NOT EXISTS deployments (
    workspace TEXT NOT NULL REFERENCES workspaces(name) ON DELETE CASCADE,
    name TEXT NOT NULL,
    spec TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (workspace, name)
);
CREATE TABLE IF NOT EXISTS model_drafts (
    id TEXT PRIMARY KEY,
    workspace TEXT NOT NULL,
    base TEXT NOT NULL,
    deployment TEXT NOT NULL,
    conversation TEXT,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending',
    save_id TEXT,
    created_at TEXT NOT NULL,
    decided_at TEXT
);
CREATE TABLE IF NOT EXISTS model_saves (
    id TEXT PRIMARY KEY,
    workspace TEXT NOT NULL,
    base TEXT NOT NULL,
    deployment TEXT NOT NULL,
    conversation TEXT,
    title TEXT NOT NULL,
    path TEXT NOT NULL,
    version TEXT NOT NULL,
    confirmed INTEGER NOT NULL DEFAULT 0,
    created_at TEXT NOT NULL,
    undone_at TEXT
);
CREATE INDEX IF NOT EXISTS model_saves_by_base ON model_saves(workspace, base, created_at);
CREATE INDEX IF NOT EXISTS model_drafts_by_base ON model_drafts(workspace, base, created_at);
CREATE TABLE IF NOT EXISTS receipts (
    id TEXT PRIMARY KEY,
    workspace TEXT NOT NULL,
    deployment TEXT NOT NULL,
    signature TEXT NOT NULL,
    document TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS receipts_by_deployment ON receipts(workspace, deployment, created_at);
CREATE INDEX IF NOT EXISTS receipts_by_signature ON receipts(signature);
CREATE TABLE IF NOT EXISTS gateway_exchanges (
    call_id TEXT NOT NULL,
    workspace TEXT NOT NULL,
    deployment TEXT NOT NULL,
    calls TEXT NOT NULL,
    results TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (workspace, deployment, call_id)
);
"""

# A workspace's keys are listed by workspace; the weekly purge of kept exchanges goes by time.
V2 = """
CREATE INDEX IF NOT EXISTS keys_by_workspace ON keys(workspace, created_at);
CREATE INDEX IF NOT EXISTS gateway_exchanges_by_time ON gateway_exchanges(created_at);
"""

STEPS = [
    Step(1, "the tables of the first release", V1),
    Step(2, "keys by workspace, kept exchanges by time", V2),
]
