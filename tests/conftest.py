"""Shared fixtures: a real Astralyx in a temporary home, the real app in process."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from astralyx.config import Settings
from astralyx.core import Astralyx
from astralyx.eos.catalog import Models
from astralyx.eos.runtimes.e5onnx import ensure_graph
from astralyx.server import create_app

ADMIN_TOKEN = "test-admin-token"


def run(target, timeout: float = 120):
    """`target()` in a thread; its answer (the test fails if it does not return within `timeout`)."""
    import threading

    answer: list = []
    thread = threading.Thread(target=lambda: answer.append(target()), daemon=True)
    thread.start()
    thread.join(timeout)
    assert answer, "still waiting"
    return answer[0]


@pytest.fixture(scope="session")
def e5_graphs(tmp_path_factory) -> Callable[[str], Path]:
    """The e5 onnxruntime graphs, each built once per test session (a few seconds) on first use."""
    folder = tmp_path_factory.mktemp("e5-graphs")
    models = Models(folder.parent)
    models.folder = folder

    def graph(name: str) -> Path:
        model = models.get(name)
        return ensure_graph(folder, model.name, model.variant or "int8")

    return graph


@pytest.fixture
def home(tmp_path, monkeypatch, e5_graphs, database_url):
    monkeypatch.setenv("ASTRALYX_TOKEN", ADMIN_TOKEN)
    monkeypatch.delenv("ASTRALYX_API", raising=False)
    if database_url:
        monkeypatch.setenv("ASTRALYX_DATABASE_URL", database_url)
    else:
        monkeypatch.delenv("ASTRALYX_DATABASE_URL", raising=False)
    path = tmp_path / "home"
    monkeypatch.setenv("ASTRALYX_HOME", str(path))
    # Every new workspace embeds with the default graph: link the session's copy in (instant,
    # and the same file, so its hash is checked and it is loaded once per session).
    graph = e5_graphs(Models(path).default_embedding().name)
    (path / "models").mkdir(parents=True)
    for file in (graph, graph.with_name(graph.name + ".json")):
        os.link(file, path / "models" / file.name)
    return path


@pytest.fixture
def core(home) -> Iterator[Astralyx]:
    instance = Astralyx(Settings.load(home)).start()
    yield instance
    instance.close()


@pytest.fixture
def other(home, core) -> Iterator[Astralyx]:
    """A second process on the same data directory (and database): another replica, as the domain sees it."""
    instance = Astralyx(Settings.load(home)).start()
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


# -- engines: SQLite (default) and a real PostgreSQL --------------------------------------------
# A test module marked `pytestmark = pytest.mark.engines` runs each of its tests on both engines:
# `home` (and so `core`, `client`, `astra`) then works on a fresh PostgreSQL database.


def pytest_generate_tests(metafunc):
    if "database_url" in metafunc.fixturenames and metafunc.definition.get_closest_marker("engines"):
        metafunc.parametrize("database_url", ["sqlite", "postgres"], indirect=True)


# -- tiers: `make test-fast` runs everything but these (pyproject's markers list them) -----------


def pytest_collection_modifyitems(config, items):
    """Mark the tiers a test belongs to by what it needs: a browser, PostgreSQL, a llama.cpp model."""
    for item in items:
        path = item.path.as_posix()
        if "/tests/console/" in path:
            item.add_marker(pytest.mark.browser)
        callspec = getattr(item, "callspec", None)
        if "postgres_server" in item.fixturenames or (callspec and "postgres" in callspec.params.values()):
            item.add_marker(pytest.mark.postgres)


# -- a native crash names its test ------------------------------------------------------------------
# A segfault in an extension (llama.cpp, sqlite) ends pytest before it reports anything: faulthandler
# (pytest's, on by default) prints the threads' stacks, and this file names the test that was running.
# `make test` prints it when pytest died of a signal; a run that ends normally removes it.
RUNNING = Path(os.environ.get("ASTRALYX_TEST_RUNNING", ".pytest-running") + (
    f"-{os.environ['PYTEST_XDIST_WORKER']}" if "PYTEST_XDIST_WORKER" in os.environ else ""))  # one per xdist worker


def pytest_runtest_logstart(nodeid, location):
    RUNNING.write_text(nodeid + "\n")


def pytest_sessionfinish(session, exitstatus):
    RUNNING.unlink(missing_ok=True)


@pytest.fixture(scope="session")
def postgres_server():
    """One PostgreSQL server for the session (tests/postgres_server.py), stopped at the end."""
    from .postgres_server import PostgresServer

    server = PostgresServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def database_url(request) -> Iterator[str]:
    """"" for SQLite in the data directory, or the URL of a fresh PostgreSQL database."""
    if getattr(request, "param", "sqlite") != "postgres":
        yield ""
        return
    server = request.getfixturevalue("postgres_server")
    with server.database() as url:
        yield url
