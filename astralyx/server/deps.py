"""Request dependencies: the instance and the actor (who is asking).

`get_core` and `get_actor` do no I/O, so they are `async`: FastAPI runs a plain `def` dependency
in its thread pool, a hop between threads per dependency per request. `authenticate` looks the
key up in astralyx.db, so it stays a `def` (answering recent keys from memory was measured: no
gain within noise, and a key revoked by another process would still work for a while)."""

from __future__ import annotations

from fastapi import Request

from ..auth.actor import LOCAL_OWNER_SCOPE_KEY, Actor
from ..core import Astralyx
from ..errors import Unauthorized


def _core(request: Request) -> Astralyx:
    return request.app.state.core


async def get_core(request: Request) -> Astralyx:
    return _core(request)


def authenticate(request: Request) -> Actor:
    local_workspace = request.scope.get(LOCAL_OWNER_SCOPE_KEY)
    if local_workspace:
        actor = Actor.local_owner(local_workspace)
    else:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized(
                "Missing API key: send the header 'Authorization: Bearer <key>' "
                "(a key comes from `astra keys create`, or <home>/admin.key)",
                code="UNAUTHORIZED",
            )
        actor = _core(request).keys.authenticate(token.strip())
    request.state.actor = actor
    return actor


async def get_actor(request: Request) -> Actor:
    actor = getattr(request.state, "actor", None)
    return actor if actor is not None else authenticate(request)
