"""MCP tests: the SDK's own client, over stdio (`python -m astralyx mcp`) and Streamable HTTP (the real app on uvicorn).

Bases: `handbook` (notes), `journal` (saves on its own from MCP), `team` (a memory whose extractor is the
scripted OpenAI server). The chat deployment `chat` gives `handbook` to its callers (search tool only).
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import uvicorn
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from ..conftest import ADMIN_TOKEN
from ..metis.extract.conftest import facts, put_extractor

ROOT = Path(__file__).resolve().parents[2]
HANDBOOK = {
    "leave.md": "# Leave policy\n\n## Vacation\n\nEach person has 25 vacation days a year.\n",
    "travel.md": "# Travel\n\nBook trains for trips under 600 km.\n",
}
MODES = ["legacy", "auto"]  # up to 2025-11-25 (initialize handshake) and 2026-07-28 (what `auto` negotiates)

__all__ = ["ADMIN_TOKEN", "MODES", "facts", "result", "error_of"]


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run `async def` tests with anyio, each in a thread of its own: a session's Playwright (the console
    tests) keeps an event loop running in the main thread, where no other loop may start."""
    fn = pyfuncitem.obj
    if not inspect.iscoroutinefunction(fn):
        return None
    kwargs = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
    failure: list[BaseException] = []

    def run() -> None:
        try:
            anyio.run(functools.partial(fn, **kwargs))
        except BaseException as e:  # handed to the test's own thread, to fail there
            failure.append(e)

    thread = threading.Thread(target=run, name=f"test {pyfuncitem.name}")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return True


@pytest.fixture
def bases(client, scripted_openai) -> Any:
    # by keywords: a search that matches nothing finds nothing (a hybrid base always has nearest passages)
    for name, spec in (("handbook", {"embedding": None}), ("journal", {"mcp": {"save": "on_its_own"}})):
        r = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": name}, "spec": spec})
        assert r.status_code == 201, r.text
    for path, text in HANDBOOK.items():
        r = client.put(f"/v1/metis/knowledge-bases/handbook/notes/{path}", json={"content": text})
        assert r.status_code in (200, 201), r.text
    put_extractor(client, scripted_openai.url)
    spec = {"kind": "memory", "sources": [], "extractor": {"deployment": "qwen3-4b"}}
    r = client.post("/v1/metis/knowledge-bases", json={"metadata": {"name": "team"}, "spec": spec})
    assert r.status_code == 201, r.text
    chat = {"model": "scripted", "kind": "chat", "runtime": {"type": "upstream", "url": scripted_openai.url},
            "tools": [{"builtin": "search_knowledge", "knowledge_base": "handbook"}]}
    r = client.put("/v1/eos/deployments/chat", json={"spec": chat})
    assert r.status_code == 200, r.text
    return scripted_openai


def stdio(home: Path, *args: str, **kw: Any) -> Client:
    """The SDK's client on `python -m astralyx mcp --home <home>` (a real subprocess)."""
    env = {"PYTHONPATH": str(ROOT), "ASTRALYX_TOKEN": ADMIN_TOKEN, "PATH": os.environ.get("PATH", "")}
    params = StdioServerParameters(command=sys.executable, args=["-m", "astralyx", "mcp", "--home", str(home), *args],
                                   env=env, cwd=str(ROOT))
    return Client(params, read_timeout_seconds=60, **kw)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def served(app) -> Iterator[str]:
    """The real app (API, /mcp, console) on uvicorn on a free localhost port, in a thread; yields its URL."""
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def http(url: str, token: str | None = ADMIN_TOKEN, **kw: Any) -> Client:
    """The SDK's client over Streamable HTTP with a key."""

    @asynccontextmanager
    async def transport():  # type: ignore[no-untyped-def]
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with create_mcp_http_client(headers=headers) as client:
            async with streamable_http_client(url, http_client=client) as streams:
                yield streams

    return Client(transport(), read_timeout_seconds=60, **kw)


def answering(action: str, edit: Callable[[dict], dict] | None = None, seen: list | None = None):
    """An elicitation_callback: the person accepts (the form's defaults, edited) or declines / cancels."""

    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        schema = params.requested_schema
        if seen is not None:
            seen.append(params)
        if action != "accept":
            return types.ElicitResult(action=action)
        content = {k: v.get("default") for k, v in schema["properties"].items()}
        return types.ElicitResult(action="accept", content=edit(content) if edit else content)

    return callback


def result(r: types.CallToolResult) -> dict:
    assert not r.is_error, r.structured_content
    assert json.loads(r.content[0].text) == r.structured_content
    return r.structured_content


def error_of(r: types.CallToolResult) -> dict:
    assert r.is_error, r.structured_content
    return r.structured_content["error"]
