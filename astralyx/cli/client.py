"""How the CLI reaches the API: a server (ASTRALYX_API + ASTRALYX_TOKEN) or, without one,
the local data directory through the very same app, in process.

Either way every command is an HTTP request to /v1: one code path for the API and the CLI.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from ..auth.actor import LOCAL_OWNER_SCOPE_KEY


@dataclass
class ApiError(Exception):
    """An error answer, as the CLI shows it: `code` is the server's (errors.CODES), or the CLI's own UNREACHABLE
    (no server answered, status 0) and ERROR (an answer not in Astralyx's error shape), listed there too."""

    status: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.message} ({self.code})"


def _local_owner(app: Any, workspace: str) -> Any:
    """Mark in-process requests as the data directory's owner, in a workspace."""

    async def wrapped(scope, receive, send):
        if scope["type"] == "http":
            scope = {**scope, LOCAL_OWNER_SCOPE_KEY: workspace}
        await app(scope, receive, send)

    return wrapped


LOCAL_API = "http://astralyx.local/v1"  # the in-process app's address: a name, never a network


def unreachable(e: httpx.TransportError) -> ApiError:
    return ApiError(0, code="UNREACHABLE", message=f"Cannot reach the Astralyx API ({e}): is `astra serve` running?")


class InProcess:
    """httpx over the app in this process (httpx.ASGITransport), driven from the CLI's synchronous code
    through an anyio portal: a thread with an event loop, started on the first request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self._portal: Any = None
        self._exit: Any = None
        self._http: httpx.AsyncClient | None = None

    def _start(self) -> None:
        import atexit

        from anyio.from_thread import start_blocking_portal

        self._exit = start_blocking_portal()
        self._portal = self._exit.__enter__()
        self._http = httpx.AsyncClient(transport=httpx.ASGITransport(app=self.app), base_url=LOCAL_API,
                                       timeout=None)
        atexit.register(self.close)

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        if self._portal is None:
            self._start()
        assert self._http is not None

        async def send() -> httpx.Response:
            assert self._http is not None
            response = await self._http.request(method, url, **kwargs)
            await response.aread()
            return response

        return self._portal.call(send)

    @contextmanager
    def stream(self, method: str, url: str, **kwargs: Any) -> Iterator[httpx.Response]:
        # The in-process answer arrives whole (ASGITransport reads the app's body to its end).
        yield self.request(method, url, **kwargs)

    def close(self) -> None:
        if self._portal is not None:
            if self._http is not None:
                self._portal.call(self._http.aclose)
            self._exit.__exit__(None, None, None)
            self._portal = self._http = None


class Client:
    def __init__(self, http: Any, *, local: Any = None) -> None:
        self.http = http  # httpx.Client (a server) or InProcess (the local data directory)
        self.local = local  # the Astralyx instance when working on the local data directory

    def close(self, *, keep_core: bool = False) -> None:
        """The end of a command: its connections, and the local data directory's core (its threads: the in-process
        app's event loop, the imports' sweep) closed, not left to the process's exit (a test runs many commands)."""
        self.http.close()
        if self.local is not None and not keep_core:
            self.local.close()

    @classmethod
    def remote(cls, api: str, token: str | None) -> Client:
        api = api.rstrip("/")
        if not api.endswith("/v1"):
            # `astra serve` prints the console's address; the API is under /v1.
            api += "/v1"
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return cls(httpx.Client(base_url=api, headers=headers, timeout=httpx.Timeout(900, connect=10)))

    @classmethod
    def in_process(cls, core: Any, workspace: str) -> Client:
        from . import loading

        with loading():
            from ..server import create_app

            core.start()  # httpx.ASGITransport runs no lifespan (a no-op when started already)
            return cls(InProcess(_local_owner(create_app(core), workspace)), local=core)

    @classmethod
    def from_env(cls, home: str | None, workspace: str) -> Client:
        api = os.environ.get("ASTRALYX_API")
        if api:
            return cls.remote(api, os.environ.get("ASTRALYX_TOKEN"))
        from . import loading

        with loading():
            from ..config import Settings
            from ..core import Astralyx

            core = Astralyx(Settings.load(home)).start()  # before in_process: a new admin key is shown first
        if core.new_admin_key:
            import click

            click.echo(
                f"Created {core.home} with workspace 'default' and an admin key (shown once, "
                f"also in {core.home / 'admin.key'}):\n  {core.new_admin_key}",
                err=True,
            )
        return cls.in_process(core, workspace)

    @staticmethod
    def _path(path: str) -> str:
        """Paths are relative to /v1 ("/metis/knowledge-bases"); the base URL of either transport ends in /v1."""
        path = path.removeprefix("/v1") if path.startswith("/v1/") else path
        return path.lstrip("/")

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return self.http.request(method, self._path(path), **kwargs)
        except httpx.TransportError as e:
            raise unreachable(e) from None

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        return self._answer(self._send(method, path, **kwargs))

    def events(self, method: str, path: str, **kwargs: Any) -> Iterator[dict[str, Any]]:
        """The NDJSON lines of a ?progress=true answer, parsed as they come; an error answer raises ApiError."""
        try:
            with self.http.stream(method, self._path(path), **kwargs) as response:
                if response.status_code >= 400:
                    response.read()
                    self._answer(response)
                for line in response.iter_lines():
                    if line.strip():
                        yield json.loads(line)
        except httpx.TransportError as e:
            raise unreachable(e) from None

    @staticmethod
    def _answer(response: httpx.Response) -> Any:
        if response.status_code >= 400:
            try:
                err = response.json()["error"]
                raise ApiError(response.status_code, code=err.get("code", "ERROR"), message=err.get("message", ""))
            except (ValueError, KeyError, TypeError):  # not our error shape (a proxy's page): its text, as it came
                raise ApiError(response.status_code, code="ERROR", message=response.text[:500]) from None
        ctype = response.headers.get("content-type", "")
        if "json" in ctype:
            return response.json()
        return response.text

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> Any:
        return self.request("POST", path, **kw)

    def put(self, path: str, **kw: Any) -> Any:
        return self.request("PUT", path, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self.request("DELETE", path, **kw)
