"""Shared fixtures: a real Astralyx in a temporary home, the real app in process."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from starlette.testclient import TestClient

from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.server import create_app

ADMIN_TOKEN = "test-admin-token"


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ASTRALYX_TOKEN", ADMIN_TOKEN)
    monkeypatch.delenv("ASTRALYX_API", raising=False)
    path = tmp_path / "home"
    monkeypatch.setenv("ASTRALYX_HOME", str(path))
    return path


@pytest.fixture
def core(home) -> Iterator[Astralyx]:
    instance = Astralyx(Settings.load(home))
    yield instance
    instance.close()


@pytest.fixture
def app(core):
    return create_app(core)


@pytest.fixture
def client(app) -> Iterator[TestClient]:
    """The admin of workspace `default`, over HTTP to the real app."""
    with TestClient(app, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as c:
        yield c


@pytest.fixture
def anon(app) -> TestClient:
    return TestClient(app)


@pytest.fixture
def key_client(app, core) -> Callable[..., TestClient]:
    """A client for a new key: key_client("viewer", workspace="acme")."""

    def make(role: str, workspace: str = "default") -> TestClient:
        if not core.workspaces.exists(workspace):
            core.workspaces.create(None, workspace)
        _, token = core.keys.create(None, workspace, role)
        return TestClient(app, headers={"Authorization": f"Bearer {token}"})

    return make


@pytest.fixture
def astra(home):
    """Run the `astra` CLI on the temporary home (no ASTRALYX_API: the local data directory)."""
    from click.testing import CliRunner

    from astralyx.cli import cli

    runner = CliRunner()

    def run(*args: str, input: str | None = None, ok: bool = True):
        result = runner.invoke(cli, list(args), input=input, catch_exceptions=False)
        if ok:
            assert result.exit_code == 0, result.output
        return result

    return run


@pytest.fixture
def scripted_openai():
    """A scripted OpenAI-compatible server on 127.0.0.1 (see tests/scripted_openai.py)."""
    from .scripted_openai import ScriptedOpenAI

    with ScriptedOpenAI() as server:
        yield server
