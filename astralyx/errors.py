"""Domain errors with stable codes.

Every error the product shows a person carries a code that scripts can rely on
(`FACT_SENSITIVE`, `NOTE_CHANGED`, …), an HTTP status for the API, and a message
that says what happened and how to fix it.
"""

from __future__ import annotations

from typing import Any


class AstralyxError(Exception):
    status: int = 400
    code: str = "BAD_REQUEST"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.details = details or {}

    def to_dict(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error}


class BadRequest(AstralyxError):
    status, code = 400, "BAD_REQUEST"


class Unauthorized(AstralyxError):
    status, code = 401, "UNAUTHORIZED"


class Forbidden(AstralyxError):
    status, code = 403, "FORBIDDEN"


class NotFound(AstralyxError):
    status, code = 404, "NOT_FOUND"


class Conflict(AstralyxError):
    status, code = 409, "CONFLICT"


class PreconditionFailed(AstralyxError):
    status, code = 412, "PRECONDITION_FAILED"


class TooLarge(AstralyxError):
    status, code = 413, "TOO_LARGE"


class Invalid(AstralyxError):
    status, code = 422, "INVALID"


class RateLimited(AstralyxError):
    status, code = 429, "RATE_LIMITED"


class BadGateway(AstralyxError):
    status, code = 502, "BAD_GATEWAY"


class Unavailable(AstralyxError):
    status, code = 503, "UNAVAILABLE"


def validation_message(what: str, e: Any) -> str:
    """A pydantic ValidationError as one sentence that names each field: "The deployment spec is not valid: …"."""
    parts = []
    for err in e.errors():
        loc = ".".join(str(p) for p in err["loc"]) or what
        parts.append(f"{loc}: {err['msg']}")
    return f"The {what} is not valid: " + "; ".join(parts)
