"""The `astra` CLI end to end: locally on a data directory, and against a running server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time

import httpx
import pytest
import uvicorn

from astralyx.server import create_app

from .conftest import ADMIN_TOKEN


def test_bases_and_notes_locally(astra, home, tmp_path):
    assert "created memory base team" in astra("metis", "create", "team", "--kind", "memory").output
    astra("metis", "create", "handbook")
    table = astra("metis", "bases").output
    assert "NAME" in table and "team" in table and "memory" in table and "handbook" in table
    listed = json.loads(astra("metis", "bases", "--json").output)
    assert [b["metadata"]["name"] for b in listed["knowledge_bases"]] == ["handbook", "team"]

    source = tmp_path / "leave.md"
    source.write_text("---\ntitle: Leave policy\n---\n\nEach person has 25 vacation days a year.\n")
    assert "wrote leave.md" in astra("metis", "note", "handbook", "leave.md", "--write", str(source)).output
    assert (home / "bases/default/handbook/notes/leave.md").read_text() == source.read_text()
    assert "Leave policy" in astra("metis", "notes", "handbook").output
    assert astra("metis", "note", "handbook", "leave.md").output == source.read_text()
    refused = astra("metis", "note", "handbook", "../escape.md", "--write", str(source), ok=False)
    assert refused.exit_code == 1 and "BAD_PATH" in refused.output

    assert "deleted handbook" in astra("metis", "delete", "handbook", "--yes").output
    assert not (home / "bases/default/handbook").exists()
    missing = astra("metis", "delete", "handbook", "--yes", ok=False)
    assert missing.exit_code == 1 and "not found" in missing.output and "BASE_NOT_FOUND" in missing.output


def test_note_edit_uses_the_editor(astra, home, monkeypatch):
    astra("metis", "create", "handbook")
    monkeypatch.setattr("click.edit", lambda text, extension: (text or "") + "Written in the editor.\n")
    assert "saved plans.md" in astra("metis", "note", "handbook", "plans.md", "--edit").output
    assert (home / "bases/default/handbook/notes/plans.md").read_text() == "Written in the editor.\n"


def test_workspaces_and_keys(astra):
    assert "created workspace acme" in astra("workspaces", "create", "acme").output
    assert "acme" in astra("workspaces", "list").output
    created = astra("keys", "create", "--workspace", "acme", "--role", "viewer", "--name", "ci").output
    assert "shown once" in created
    key_id = created.split()[2]
    listed = json.loads(astra("keys", "list", "--workspace", "acme", "--json").output)["keys"]
    assert [(k["id"], k["role"], k["name"]) for k in listed] == [(key_id, "viewer", "ci")]
    assert f"revoked {key_id}" in astra("keys", "revoke", key_id).output
    bad = astra("keys", "create", "--workspace", "nope", "--role", "viewer", ok=False)
    assert bad.exit_code == 1 and "does not exist" in bad.output


def test_local_workspace_option(astra):
    astra("workspaces", "create", "acme")
    astra("-w", "acme", "metis", "create", "private")
    assert "private" in astra("-w", "acme", "metis", "bases").output
    assert "private" not in astra("metis", "bases").output


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_against_a_server(core, astra, monkeypatch, tmp_path):
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(core), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        monkeypatch.setenv("ASTRALYX_API", f"http://127.0.0.1:{port}/v1")
        monkeypatch.setenv("ASTRALYX_TOKEN", ADMIN_TOKEN)
        monkeypatch.setenv("ASTRALYX_HOME", str(tmp_path / "unused"))
        astra("metis", "create", "remote-base")
        assert core.bases.find("default", "remote-base") is not None
        assert not (tmp_path / "unused").exists()
        monkeypatch.setenv("ASTRALYX_TOKEN", "wrong")
        refused = astra("metis", "bases", ok=False)
        assert refused.exit_code == 1 and "INVALID_KEY" in refused.output
    finally:
        server.should_exit = True
        thread.join(5)


def test_astra_serve_starts_and_bootstraps(tmp_path):
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("ASTRALYX_TOKEN", "ASTRALYX_API", "ASTRALYX_HOME")}
    home = tmp_path / "served"
    proc = subprocess.Popen(
        [sys.executable, "-m", "astralyx", "serve", "--port", str(port), "--home", str(home)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/openapi.json").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.2)
        key = (home / "admin.key").read_text().strip()
        headers = {"Authorization": f"Bearer {key}"}
        assert httpx.get(f"http://127.0.0.1:{port}/v1/whoami", headers=headers).json()["role"] == "admin"
        assert httpx.get(f"http://127.0.0.1:{port}/v1/metis/knowledge-bases").status_code == 401
    finally:
        proc.terminate()
        output = proc.communicate(timeout=20)[0]
    assert key in output  # printed once, at creation


def test_a_local_command_leaves_no_thread_behind(astra):
    # Each command on the local data directory runs the app in process (an event loop in a thread of its own) over
    # a started core (the imports' sweep): both end with the command, not with the process (before: ≈30 threads
    # alive after a test module of commands, hiding which test a native crash hit).
    import threading

    def ours() -> set[int]:
        return {t.ident for t in threading.enumerate() if t.name.startswith(("asyncio-portal", "astralyx-imports-sweep"))}

    before = ours()
    astra("metis", "create", "handbook")
    for _ in range(3):
        assert "handbook" in astra("metis", "bases").output
    assert ours() <= before


def test_an_interrupted_command_leaves_its_core_to_the_ending_process(home):
    # Ctrl-C: the command ends at once; closing the core would wait for its jobs (an import's conversation may take
    # minutes with the extractor), which continue at the next start anyway.
    import threading

    import click

    from astralyx.cli import cli
    from astralyx.cli.state import State

    def sweeps() -> int:
        return sum(t.name == "astralyx-imports-sweep" and t.is_alive() for t in threading.enumerate())

    before = sweeps()
    state = State(None, "default")
    with pytest.raises(KeyboardInterrupt), click.Context(cli, obj=state):
        client = state.client
        assert client.get("/metis/knowledge-bases")["knowledge_bases"] == []
        raise KeyboardInterrupt
    assert sweeps() == before + 1  # left running: the process is ending
    client.local.close()
    with click.Context(cli, obj=state):
        state.client.get("/metis/knowledge-bases")
    assert sweeps() == before  # a command that ends closes what it opened
