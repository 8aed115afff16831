"""Helpers shared by test modules: an error's code and message, a replica of the server."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from .conftest import ADMIN_TOKEN
from .postgres_server import free_port


def error(response, status, code):
    assert response.status_code == status, response.text
    assert response.json()["error"]["code"] == code, response.text
    return response.json()["error"]["message"]


class Replica:
    def __init__(self, home: Path, database: str) -> None:
        self.port = free_port()
        env = {**os.environ, "ASTRALYX_HOME": str(home), "ASTRALYX_TOKEN": ADMIN_TOKEN, "ASTRALYX_DATABASE_URL": database}
        env.pop("ASTRALYX_API", None)
        self.log = home.parent / f"replica-{self.port}.log"
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from astralyx.cli import cli; cli()", "serve", "--port", str(self.port)],
            env=env, stdout=self.log.open("wb"), stderr=subprocess.STDOUT,
        )
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=60,
                                 headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})

    def wait(self) -> Replica:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log.read_text()
            try:
                if self.http.get("/v1/keys").status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise AssertionError("the replica did not start: " + self.log.read_text())

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.http.close()
