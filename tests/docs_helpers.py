"""Helpers for tests/test_docs_contract.py: the real app served on a port, the docs' commands run as written."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn
from click.testing import CliRunner

from astralyx.cli import cli
from astralyx.server import create_app


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def served(core) -> Iterator[str]:
    """The real app on 127.0.0.1 (uvicorn in a thread); yields ASTRALYX_API."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(core), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "the app did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(10)


@dataclass
class Curl:
    status: int
    text: str

    def json(self):
        return json.loads(self.text)


def shell(command: str) -> Curl:
    """A doc's curl command, run by bash as a user types it ($ASTRALYX_API and $ASTRALYX_TOKEN from the environment).

    `-w` adds the status on a line of its own, so that what the user sees and the status are both checked.
    """
    assert command.lstrip().startswith("curl ")
    done = subprocess.run(
        ["bash", "-c", command.replace("curl ", "curl -w '\\n%{http_code}' ", 1)],
        capture_output=True, text=True, env=os.environ.copy(), timeout=120,
    )
    body, _, status = done.stdout.rpartition("\n")
    return Curl(int(status), body)


def astra(*args: str, input: str | None = None, ok: bool = True):
    """An `astra` command as the doc types it (click's runner, the same CLI, talking HTTP to the served app)."""
    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    if ok:
        assert result.exit_code == 0, result.output
    return result
