"""What /v1/openapi.json says each route answers: its errors (in the one error shape) and its streams.

Every route may answer 400 INVALID_JSON, 401, 403, 413 TOO_LARGE, 415 (a JSON body not sent as JSON),
422 (a body or parameter not valid) and 500 INTERNAL: the app declares those once (COMMON). A route
adds what it answers besides, e.g. `responses=errors(404, 409)`. The statuses' meanings come from errors.CODES.
"""

from __future__ import annotations

from typing import Any

from ..errors import CODES
from .models import ErrorBody

COMMON = (400, 401, 403, 413, 415, 422, 500)


def _description(status: int) -> str:
    codes = sorted(code for code, (s, _) in CODES.items() if s == status)
    return "An error: " + ", ".join(codes) if codes else "An error"


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` of a route that may answer these statuses (besides COMMON), in the error shape."""
    return {status: {"model": ErrorBody, "description": _description(status)} for status in statuses}


def ok(model: type, *statuses: int, status: int = 200) -> dict[int | str, dict[str, Any]]:
    """responses= of a route that answers `model` (its description in the document; the route declares the model as
    its return type, which filters the answer), and may answer these error statuses."""
    return {status: {"model": model, "description": model.__doc__ or "The answer"}, **errors(*statuses)}


def common() -> dict[int | str, dict[str, Any]]:
    return errors(*COMMON)


def ndjson_answer(description: str) -> dict[str, Any]:
    """A 200 that is JSON, or with ?progress=true a stream of NDJSON lines."""
    return {"content": {"application/json": {}, "application/x-ndjson": {"schema": {"type": "string"}}},
            "description": description}


def sse_answer(description: str) -> dict[str, Any]:
    """A 200 that is JSON, or with "stream": true server-sent events."""
    return {"content": {"application/json": {}, "text/event-stream": {"schema": {"type": "string"}}},
            "description": description}
