"""An embedded chat model's worker process: llama.cpp runs apart from the server, as in Ollama and llama.cpp's server.

A crash of the model (a signal, an abort in native code) then ends only its worker: the call in progress
answers 503 DEPLOYMENT_UNAVAILABLE naming the cause, the server's log says what the worker said last,
the next call starts a fresh worker, and the server, its bases and every other deployment go on.

    server side: Worker(deployment, load).call("complete", request) / .stream(request) / .stop()
    the process: python -m astralyx.eos.runtimes.worker (main below), one per loaded deployment

They speak JSON lines: requests on the worker's stdin, answers on the stdout it was started with (its
fd 1 then points at stderr, so nothing llama.cpp prints can break a line). One request at a time, as
one llama.cpp context can only do; a stream the server stops reading is cancelled between tokens. The
worker ends when its stdin closes: the server stopping it, or the server itself gone (no orphans).

    -> {"op": "load", ...}                    <- {"ready": {"context_length": n}} | {"error": ...}
    -> {"op": "complete" | "count", "request"} <- {"result": ...} | {"error": ...} | {"failure": ...}
    -> {"op": "stream", "request"}             <- {"chunk": ...}* then {"end": true} | {"error": ...} | {"failure": ...}
    -> {"op": "cancel"} (during a stream)
"""

from __future__ import annotations

import atexit
import collections
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ...errors import AstralyxError, Unavailable

log = logging.getLogger("astralyx.eos")

STOP_WAIT = 5.0  # seconds a stopped worker has to exit before it is killed
# A debugging hook for tests: a request whose messages hold this text makes the worker crash with a real
# SIGSEGV (before answering; when streaming, after its first chunk), as a fault in llama.cpp would.
CRASH_ENV = "ASTRALYX_WORKER_CRASH_ON"

_live: weakref.WeakSet[Worker] = weakref.WeakSet()


class WorkerFailed(RuntimeError):
    """The engine raised something that is not one of our errors (a bug to read in the server's log)."""


class Worker:
    """The server's side of one worker process: started on demand, again after it died; one request at a time."""

    def __init__(self, deployment: str, load: dict[str, Any]) -> None:
        self.deployment = deployment
        self.load = load
        self.context_length: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._last_words: collections.deque[str] = collections.deque(maxlen=20)
        self._stderr: threading.Thread | None = None
        self._lock = threading.Lock()  # one request at a time: one llama.cpp context
        self._closed = False
        _live.add(self)

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    # -- calls ------------------------------------------------------------------------
    def start(self) -> None:
        """Start the worker now (loading the model), rather than at the first call."""
        with self._lock:
            self._ensure()

    def call(self, op: str, request: dict[str, Any]) -> Any:
        with self._lock:
            try:
                proc = self._ensure()
                self._send(proc, {"op": op, "request": request})
                return self._answer(proc, self._read(proc))
            finally:
                self._stop_if_closed()

    def stream(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        with self._lock:
            ended = False
            try:
                proc = self._ensure()
                self._send(proc, {"op": "stream", "request": request})
                while True:
                    message = self._read(proc)
                    if "chunk" in message:
                        yield message["chunk"]
                        continue
                    ended = True
                    if message.get("end"):
                        return
                    self._answer(proc, message)  # raises the error it carries
            finally:
                if not ended:  # the reader stopped early (a client gone) or the worker died
                    self._cancel()
                self._stop_if_closed()

    def close(self) -> None:
        """Stop the worker: now when it is idle, else once the call in progress has its answer."""
        self._closed = True
        if self._lock.acquire(blocking=False):
            try:
                self._stop()
            finally:
                self._lock.release()

    # -- the process ------------------------------------------------------------------
    def _ensure(self) -> subprocess.Popen[bytes]:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            return proc
        if proc is not None:  # died between calls (killed, out of memory): no call lost, start again
            log.warning("deployment %s: the model's worker process had died (%s): starting a new one",
                        self.deployment, self._cause(proc))
            self._reap()
        return self._spawn()

    def _spawn(self) -> subprocess.Popen[bytes]:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[3])  # the folder astralyx is imported from, whatever the cwd
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
        proc = subprocess.Popen(
            [sys.executable, "-m", "astralyx.eos.runtimes.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
            start_new_session=True,  # a Ctrl-C at the server's terminal is the server's to handle, not the worker's
        )
        self._proc = proc
        self._last_words.clear()
        assert proc.stderr is not None
        self._stderr = threading.Thread(target=self._listen, args=(proc.stderr,), daemon=True,
                                        name=f"worker-stderr-{self.deployment}")
        self._stderr.start()
        self._send(proc, {"op": "load", **self.load})
        ready = self._read(proc, loading=True)
        if "ready" not in ready:
            self._stop()
            if "error" in ready:
                self._answer(proc, ready)
            failure = ready.get("failure") or {}
            raise Unavailable(
                f"Deployment {self.deployment!r}: the model could not be loaded ({failure.get('type', 'Error')}: "
                f"{failure.get('message', '')}): is its file a whole GGUF? `astra eos add` fetches it again",
                code="DEPLOYMENT_UNAVAILABLE", details={"deployment": self.deployment},
            )
        self.context_length = ready["ready"].get("context_length")
        log.info("deployment %s: the model's worker process (pid %d) is ready", self.deployment, proc.pid)
        return proc

    def _listen(self, stream: IO[bytes]) -> None:
        """What the worker says on stderr: into the server's log, the last lines kept to explain a death."""
        for raw in stream:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                self._last_words.append(line)
                log.info("deployment %s worker: %s", self.deployment, line)

    def _send(self, proc: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
            proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            raise self._died(proc) from None

    def _read(self, proc: subprocess.Popen[bytes], *, loading: bool = False) -> dict[str, Any]:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise self._died(proc, loading=loading)
        message: dict[str, Any] = json.loads(line)
        return message

    def _answer(self, proc: subprocess.Popen[bytes], message: dict[str, Any]) -> Any:
        if "result" in message:
            return message["result"]
        if "error" in message:
            error = message["error"]
            raise AstralyxError(error["message"], code=error["code"], details=error.get("details"))
        failure = message.get("failure") or {}
        raise WorkerFailed(f"{failure.get('type', 'Error')}: {failure.get('message', '')} (in the model's worker process)")

    def _died(self, proc: subprocess.Popen[bytes], *, loading: bool = False) -> Unavailable:
        """The worker is gone (its pipes closed): what the call in progress answers."""
        try:
            proc.wait(timeout=STOP_WAIT)
        except subprocess.TimeoutExpired:  # its pipes closed, yet it lives: end it
            proc.kill()
            proc.wait()
        if self._stderr is not None:
            self._stderr.join(timeout=STOP_WAIT)  # its last words, for the log and the message
        cause = self._cause(proc)
        doing = "loading the model" if loading else "answering"
        log.error("deployment %s: the model's worker process (pid %d) died (%s) while %s; its last words: %s",
                  self.deployment, proc.pid, cause, doing, " | ".join(self._last_words) or "(none)")
        self._reap()
        return Unavailable(
            f"Deployment {self.deployment!r}: the model's worker process died ({cause}) while {doing}. The server goes "
            "on, and the next call starts the model again; if it keeps dying, the server's log has what it said last",
            code="DEPLOYMENT_UNAVAILABLE",
            details={"deployment": self.deployment, "cause": cause},
        )

    @staticmethod
    def _cause(proc: subprocess.Popen[bytes]) -> str:
        code = proc.poll()
        if code is None:
            return "still running"
        if code < 0:
            try:
                return f"signal {signal.Signals(-code).name}"
            except ValueError:
                return f"signal {-code}"
        return f"exit status {code}"

    def _cancel(self) -> None:
        """A stream the server stopped reading: the worker stops generating; its last messages are read away."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        try:
            self._send(proc, {"op": "cancel"})
            while True:
                message = self._read(proc)
                if "chunk" not in message:
                    return
        except Unavailable:
            return

    def _stop_if_closed(self) -> None:
        if self._closed:
            self._stop()

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            try:
                assert proc.stdin is not None
                proc.stdin.close()  # the worker ends when its stdin does
            except OSError:
                pass
            try:
                proc.wait(timeout=STOP_WAIT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.info("deployment %s: the model's worker process (pid %d) stopped", self.deployment, proc.pid)
        self._close_pipes(proc)

    def _reap(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            self._close_pipes(proc)

    @staticmethod
    def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            try:
                if pipe is not None:
                    pipe.close()
            except OSError:
                pass


@atexit.register
def _stop_all() -> None:
    """A server that exits without closing its core leaves no worker behind."""
    for worker in list(_live):
        worker._closed = True
        worker._stop()


# -- the worker process ---------------------------------------------------------------


def _crash_if_asked(request: dict[str, Any]) -> None:
    marker = os.environ.get(CRASH_ENV)
    if marker and marker in json.dumps(request.get("messages"), ensure_ascii=False):
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file for a crash on purpose
        except (ImportError, ValueError, OSError):
            pass
        os.kill(os.getpid(), signal.SIGSEGV)


def main() -> None:
    answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # whatever else is printed (llama.cpp's own lines) goes to stderr, never into an answer
    sys.stdout = sys.stderr
    import faulthandler

    faulthandler.enable()  # a crash says where it happened, on stderr: the server's log

    inbox: queue.Queue[dict[str, Any]] = queue.Queue()

    def read() -> None:
        for line in sys.stdin.buffer:
            inbox.put(json.loads(line))
        os._exit(0)  # stdin closed: the server stopped this worker, or is gone itself

    threading.Thread(target=read, daemon=True).start()

    def say(message: dict[str, Any]) -> None:
        answers.write(json.dumps(message, ensure_ascii=False) + "\n")
        answers.flush()

    def failed(e: BaseException) -> dict[str, Any]:
        if isinstance(e, AstralyxError):
            return e.to_dict()
        logging.getLogger("astralyx.eos.worker").exception("the engine failed")
        return {"failure": {"type": type(e).__name__, "message": str(e)[:500]}}

    from .llama import LlamaEngine

    load = inbox.get()
    try:
        engine = LlamaEngine(load["name"], load["path"], chat_format=load.get("chat_format") or "chatml",
                             context=int(load.get("context") or 4096), threads=load.get("threads"))
    except Exception as e:  # noqa: BLE001 - said to the server, which answers the call with it
        say(failed(e))
        return
    say({"ready": {"context_length": engine.context_length}})
    while True:
        message = inbox.get()
        op, request = message.get("op"), message.get("request") or {}
        if op == "cancel":  # a stream that had ended already
            continue
        try:
            if op == "complete":
                _crash_if_asked(request)
                say({"result": engine.complete(request)})
            elif op == "count":
                say({"result": engine.count_tokens(request)})
            elif op == "stream":
                first = True
                for chunk in engine.stream(request):
                    say({"chunk": chunk})
                    if first:
                        first = False
                        _crash_if_asked(request)
                    if not inbox.empty() and inbox.get_nowait().get("op") == "cancel":
                        break
                say({"end": True})
            else:
                say({"failure": {"type": "ValueError", "message": f"unknown op {op!r}"}})
        except Exception as e:  # noqa: BLE001 - every failure is an answer: the worker goes on
            say(failed(e))


if __name__ == "__main__":
    main()
