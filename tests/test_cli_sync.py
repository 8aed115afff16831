"""`astra metis sync` against a server: it follows the base's job, survives a dropped connection,
exits 0 only when the job finished, and `--no-wait` starts it and returns."""

from __future__ import annotations

import socket
import threading
import time

from click.testing import CliRunner

from astralyx.cli import cli
from tests.conftest import ADMIN_TOKEN
from tests.docs_helpers import free_port, served

from .metis.kit import ConceptEmbedder, PacedEmbedder, folder, make_base, wait_for


class Proxy:
    """A TCP proxy in front of the server whose connections can be cut (a network drop)."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = free_port()
        self.open: list[socket.socket] = []
        self.listener: socket.socket | None = None
        self.accepting = threading.Event()
        self.listen()

    def listen(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen()
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self.open += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def drop(self) -> None:
        """Every connection cut and new ones refused, until `listen()` again."""
        assert self.listener is not None
        self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked on it (close alone would not)
        self.listener.close()
        for s in self.open:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass
        self.open.clear()


def run(args: list[str], env: dict[str, str], out: dict | None = None):
    result = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)
    if out is not None:
        out["result"] = result
    return result


def test_sync_follows_the_job_through_a_dropped_connection_and_no_wait_returns(core, tmp_path):
    embedder = PacedEmbedder()
    make_base(core, "handbook", embedder=embedder, sources=[folder(tmp_path, 200)])
    with served(core) as api:
        host, port = api.removeprefix("http://").removesuffix("/v1").split(":")
        proxy = Proxy((host, int(port)))
        env = {"ASTRALYX_API": f"http://127.0.0.1:{proxy.port}/v1", "ASTRALYX_TOKEN": ADMIN_TOKEN}

        started = run(["metis", "sync", "handbook", "--no-wait"], env)
        assert started.exit_code == 0, started.output
        assert "sync of handbook started (job " in started.output and "`astra metis sync handbook` follows it" in started.output
        wait_for(embedder.waiting.is_set)

        out: dict = {}
        follower = threading.Thread(target=run, args=(["metis", "sync", "handbook"], env, out))
        follower.start()
        time.sleep(1.2)  # it polls the job
        proxy.drop()
        embedder.step()
        time.sleep(1.5)  # it cannot reach the server meanwhile, and keeps trying
        assert follower.is_alive()
        proxy.listen()
        embedder.finish()
        follower.join(60)
        result = out["result"]
        assert result.exit_code == 0, result.output
        assert "reconnecting to the job" in result.output and "reconnected: following the job again" in result.output
        assert "synced handbook: 200 added, 0 changed, 0 unchanged, 0 removed — 200 document(s), 200 passage(s)" \
            in result.output

        again = run(["metis", "sync", "handbook", "--no-wait", "--json"], env)
        assert again.exit_code == 0 and '"state"' in again.output


def test_sync_exits_1_when_the_job_failed(core, tmp_path):
    class Broken(ConceptEmbedder):
        def embed_passages(self, texts):
            raise RuntimeError("the embedding model fell over")

    make_base(core, "kb", embedder=Broken(), sources=[folder(tmp_path, 2)])
    with served(core) as api:
        env = {"ASTRALYX_API": api, "ASTRALYX_TOKEN": ADMIN_TOKEN}
        result = run(["metis", "sync", "kb"], env)
        assert result.exit_code == 1
        assert "SYNC_FAILED" in result.output and "fell over" in result.output
        refused = run(["metis", "sync", "nope"], env)
        assert refused.exit_code == 1 and "BASE_NOT_FOUND" in refused.output


def test_reindex_during_a_sync_is_refused_with_what_runs(core, tmp_path):
    embedder = PacedEmbedder()
    make_base(core, "hb", embedder=embedder, sources=[folder(tmp_path, 200)])
    with served(core) as api:
        env = {"ASTRALYX_API": api, "ASTRALYX_TOKEN": ADMIN_TOKEN}
        assert run(["metis", "sync", "hb", "--no-wait"], env).exit_code == 0
        wait_for(embedder.waiting.is_set)
        refused = run(["metis", "reindex", "hb"], env)
        assert refused.exit_code == 1 and "SYNC_RUNNING" in refused.output and "64 of 200 passages" in refused.output
        embedder.finish()
        done = run(["metis", "sync", "hb"], env)  # joins the one running (or finds it done) and reports
        assert done.exit_code == 0 and "synced hb:" in done.output
