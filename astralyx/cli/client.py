"""How the CLI reaches the API: a server (ASTRALYX_API + ASTRALYX_TOKEN) or, without one,
the local data directory through the very same app, in process.

Either way every command is an HTTP request to /v1: one code path for the API and the CLI.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import httpx

from ..auth.actor import LOCAL_OWNER_SCOPE_KEY


@dataclass
class ApiError(Exception):
    status: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.message} ({self.code})"


def _local_owner(app: Any, workspace: str) -> Any:
    """Mark in-process requests as the data directory's owner, in a workspace."""

    async def wrapped(scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http":
            scope = {**scope, LOCAL_OWNER_SCOPE_KEY: workspace}
        await app(scope, receive, send)

    return wrapped


class Client:
    def __init__(self, http: Any, *, local: Any = None) -> None:
        self.http = http
        self.local = local  # the Astralyx instance when working on the local data directory

    @classmethod
    def remote(cls, api: str, token: str | None) -> Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return cls(httpx.Client(base_url=api.rstrip("/"), headers=headers, timeout=httpx.Timeout(900, connect=10)))

    @classmethod
    def in_process(cls, core: Any, workspace: str) -> Client:
        from starlette.testclient import TestClient

        from ..server import create_app

        app = _local_owner(create_app(core), workspace)
        http = TestClient(app, base_url="http://astralyx.local/v1", raise_server_exceptions=False)
        return cls(http, local=core)

    @classmethod
    def from_env(cls, home: str | None, workspace: str) -> Client:
        api = os.environ.get("ASTRALYX_API")
        if api:
            return cls.remote(api, os.environ.get("ASTRALYX_TOKEN"))
        from ..config import Settings
        from ..core import Astralyx

        core = Astralyx(Settings.load(home))
        if core.new_admin_key:
            import click

            click.echo(
                f"Created {core.home} with workspace 'default' and an admin key (shown once, "
                f"also in {core.home / 'admin.key'}):\n  {core.new_admin_key}",
                err=True,
            )
        return cls.in_process(core, workspace)

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        url = path if path.startswith("/") else "/" + path
        if self.local is not None:
            url = "/v1" + url if not url.startswith("/v1") else url
            url = "http://astralyx.local" + url
        try:
            response = self.http.request(method, url, **kwargs)
        except httpx.TransportError as e:
            raise ApiError(0, "UNREACHABLE", f"Cannot reach the Astralyx API ({e}): is `astra serve` running?") from None
        return self._answer(response)

    @staticmethod
    def _answer(response: httpx.Response) -> Any:
        if response.status_code >= 400:
            try:
                err = response.json()["error"]
                raise ApiError(response.status_code, err.get("code", "ERROR"), err.get("message", ""))
            except (ValueError, KeyError, TypeError):
                raise ApiError(response.status_code, "ERROR", response.text[:500]) from None
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
