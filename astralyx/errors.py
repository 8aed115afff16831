"""Domain errors with stable codes.

Every error the product shows a person carries a code that scripts can rely on
(`FACT_SENSITIVE`, `NOTE_CHANGED`, …) and a message that says what happened and how to
fix it. The code decides the HTTP status: `CODES` below is the one list of codes, each
with its status and meaning (the README's table is checked against it by a test).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import ValidationError

# code: (HTTP status, what it means), by status. Every code raised anywhere is here (tests/test_error_codes.py).
CODES: dict[str, tuple[int, str]] = {
    # 200: a warning in an answer that succeeded (never raised)
    "LARGE_FILE": (200, "A sync's warning: one file gave more passages than large_file_passages"),
    # 400: the request cannot be read as sent
    "BAD_REQUEST": (400, "The request cannot be read as sent"),
    "BAD_FILE_NAME": (400, "An uploaded file has no usable name"),
    "BAD_PATH": (400, "A note or file path leaves the base or has an odd name"),
    "CONFIRM_NAME": (400, "The console asks for the base's name before deleting it"),
    "INVALID_JSON": (400, "The body is not JSON, or nests more than 64 deep"),
    "INVALID_NOTE": (400, "A note's body is not a note (not UTF-8, control characters, wrong shape)"),
    "NOTE_RESERVED": (400, "The path is one the base keeps for itself (e.g. notes/memory/)"),
    "NO_FILE": (400, "The console's upload form was sent without a file"),
    # 401, 403: who is asking
    "UNAUTHORIZED": (401, "No API key was sent"),
    "INVALID_KEY": (401, "The API key is not one this server knows (or it was revoked)"),
    "FORBIDDEN": (403, "The key may not do this"),
    "PERMISSION_DENIED": (403, "The key's role lacks the permission named in details.permission"),
    "CROSS_SITE": (403, "A console form or call came from another site"),
    "SOURCE_NOT_ALLOWED": (403, "A base's source folder is where the server does not let bases read (the data directory, "
                                "or outside source_roots)"),
    "UPSTREAM_NOT_ALLOWED": (403, "An upstream URL points at a link-local or metadata address (allow_link_local_upstreams)"),
    # 404: the thing the address (or an OpenAI request's model) names does not exist
    "NOT_FOUND": (404, "No such address"),
    "BASE_NOT_FOUND": (404, "No knowledge base of that name in the key's workspace"),
    "DEPLOYMENT_NOT_FOUND": (404, "No deployment of that name in the workspace (or shared with it)"),
    "DRAFT_NOT_FOUND": (404, "No draft of that id in the base"),
    "FACT_NOT_FOUND": (404, "No fact of that id in the memory"),
    "IMPORT_NOT_FOUND": (404, "No import of that id in the memory (an ended one is removed after a week)"),
    "FILE_NOT_FOUND": (404, "No uploaded file of that name in the base"),
    "MODEL_NOT_FOUND": (404, "No model (or model family) of that name in the library"),
    "NOTE_NOT_FOUND": (404, "No note at that path"),
    "BASE_NOT_OFFERED": (404, "The MCP server was started without that base (--base)"),
    "NO_MEMORY": (404, "The workspace has no memory base to keep facts in"),
    "RECEIPT_NOT_FOUND": (404, "No receipt of that id"),
    "SAVE_NOT_FOUND": (404, "No model save of that id in the base"),
    "SOURCE_NOT_FOUND": (404, "A base's source folder does not exist on the server's machine"),
    "UNKNOWN_TOOL": (404, "A model called a tool its deployment does not have"),
    # 405
    "METHOD_NOT_ALLOWED": (405, "The address does not take that method (the Allow header lists those it takes)"),
    # 409: the state of things does not allow it
    "CONFLICT": (409, "The request conflicts with the current state"),
    "BASE_EXISTS": (409, "A base of that name exists already"),
    "DEPLOYMENT_EXISTS": (409, "A deployment of that name exists already"),
    "DRAFT_DECIDED": (409, "The draft was saved or discarded already"),
    "MODEL_NOT_GGUF": (409, "The library model is not a GGUF model: add the file under a name of its own"),
    "MODEL_SHIPPED": (409, "The model comes with a package: uninstall the package instead"),
    "NOTE_CHANGED": (409, "The note changed since the version in If-Match"),
    "NOTE_EXISTS": (409, "A note exists at that path (If-None-Match: *)"),
    "NOT_A_DOCUMENTS_BASE": (409, "The operation needs a documents base, and this is a memory"),
    "NOT_A_MEMORY": (409, "The operation needs a memory, and this is a documents base"),
    "NO_EXTRACTOR": (409, "The memory has no extractor deployment"),
    "IMPORT_ENDED": (409, "The import finished, was cancelled or expired: upload the archive again"),
    "SAVE_UNDONE": (409, "The model save was undone already"),
    "WORKSPACE_EXISTS": (409, "A workspace of that name exists already"),
    "SYNC_RUNNING": (409, "A sync of the base is under way (a reindex waits for it to finish)"),
    # 412
    "PRECONDITION_FAILED": (412, "A precondition of the request does not hold"),
    # 413: too much at once
    "TOO_LARGE": (413, "The request body is over the size limit"),
    "FILE_TOO_LARGE": (413, "An uploaded file is over the size limit"),
    "ARCHIVE_TOO_LARGE": (413, "A chat archive (or its conversations.json, unpacked, or its packing ratio) is over the limit"),
    "CONVERSATION_TOO_LONG": (413, "The conversation is too long for the model's context, or for the extractor to read"),
    "NOTE_TOO_LARGE": (413, "A note is over 10,000,000 characters"),
    "EXPORT_TOO_LARGE": (413, "An archive to import unpacks to more than an import takes (bytes or members)"),
    # 415
    "UNSUPPORTED_MEDIA_TYPE": (415, "The body's content type is not one the route takes"),
    # 422: the request reads, but what it asks for is not valid
    "INVALID": (422, "A parameter is not valid (the message names it)"),
    "ARCHIVE_INVALID": (422, "A chat archive is not a ChatGPT or Claude export that can be read (or looks hostile)"),
    "BASE_REQUIRED": (422, "A tool call must say which knowledge base"),
    "FACT_SENSITIVE": (422, "A fact holds a secret (a password, a key, a card number…) and is not kept"),
    "INDEX_FAILED": (422, "A file could not be read into the index"),
    "EXPORT_INVALID": (422, "An archive to import is not one Astralyx wrote, or is damaged or unsafe (links, devices, "
                            "paths out of the base)"),
    "EXPORT_VERSION": (422, "An archive to import is of a newer format version than this Astralyx reads: upgrade it"),
    "INVALID_ARGUMENTS": (422, "A tool call's arguments are not valid"),
    "INVALID_CHAT_FORMAT": (422, "The chat format is not one the engine knows"),
    "INVALID_CONVERSATION": (422, "The conversation to extract facts from is not valid"),
    "INVALID_DATE": (422, "A date is not in a documented form, or out of range"),
    "INVALID_FACT": (422, "A fact (or the batch of facts) is not valid"),
    "INVALID_NAME": (422, "A name of a base, deployment, workspace or model is not valid"),
    "INVALID_QUERY": (422, "A search request is not valid"),
    "INVALID_REQUEST": (422, "The request's body is not valid (the message names the field)"),
    "INVALID_ROLE": (422, "The role is not one of caller, viewer, editor, admin"),
    "INVALID_SCHEMA": (422, "A JSON schema for structured output cannot be used"),
    "INVALID_SPEC": (422, "A base's or deployment's spec is not valid"),
    "INVALID_STATE": (422, "An MCP request_state is not one this server gave"),
    "INVALID_TOOLS": (422, "A deployment's tools are not valid"),
    "INVALID_UPSTREAM_URL": (422, "An upstream's URL is not an http(s) base URL that parses (the message says why)"),
    "MODEL_FILE_MISSING": (422, "The model file named does not exist on the server's machine"),
    "MODEL_NEEDS_FILE": (422, "The model can only be added from a file"),
    "NOT_GGUF": (422, "The file is not a GGUF file"),
    "NOTHING_CHOSEN": (422, "An import was started without conversations chosen, or none matches the choice"),
    "TOOL_BASE_NOT_FOUND": (422, "A deployment's tool names a base that does not exist"),
    "TOOL_NAME_TAKEN": (422, "A request's tool has the name of a built-in tool"),
    "TOO_MANY_FACTS": (422, "Too many facts at once"),
    "UNKNOWN_MODEL": (422, "The model named in a spec is not in the library (give an upstream URL, or add its file)"),
    "UNREADABLE_FILE": (422, "An uploaded file cannot be read as its type says"),
    "UNSUPPORTED_FILE_TYPE": (422, "An uploaded file's type is not one a base reads"),
    "UPSTREAM_ONLY": (422, "The model runs upstream only: give a server's URL"),
    "WORKSPACE_NOT_FOUND": (422, "The workspace named in the body does not exist"),
    "WRONG_DEPLOYMENT_KIND": (422, "The deployment is of the other kind (chat where embedding is needed, or the reverse)"),
    "WRONG_MODEL_KIND": (422, "The model is of the other kind than the spec says"),
    # 429: too often
    "RATE_LIMITED": (429, "Too many requests"),
    "DRAFT_LIMIT": (429, "The base's hourly limit of drafts is reached"),
    "SAVE_LIMIT": (429, "The base's hourly limit of model saves is reached"),
    # 500, 501: the server
    "INTERNAL": (500, "A failure the server did not foresee; its log says what"),
    "SYNC_FAILED": (500, "A sync stopped on an error the server did not foresee; its log says what"),
    "ENGINE_ERROR": (500, "The embedded engine failed (the cause of an unavailable extractor)"),
    "SEARCH_FAILED": (500, "A knowledge tool's search failed on the server; its log says what (a tool result: the model "
                           "answers without the base)"),
    "SAVE_FAILED": (500, "A knowledge tool could not write its note on the server; its log says what (a tool result: "
                         "nothing was saved)"),
    "ERROR": (500, "CLI only: the server answered an error not in Astralyx's shape (a proxy's page, say); the CLI shows "
                   "its status and text"),
    "MCP_NOT_INSTALLED": (501, "The MCP server needs the mcp extra"),
    # 502, 503: what the server depends on
    "BAD_GATEWAY": (502, "An upstream answered badly"),
    "EXTRACTOR_UNREADABLE": (502, "The extractor model did not answer with facts"),
    "MODEL_HUB_ERROR": (502, "The model hub could not be reached or answered badly"),
    "UPSTREAM_ERROR": (502, "An upstream server answered with an error"),
    "UNAVAILABLE": (503, "A service the request needs is unavailable"),
    "DEPLOYMENT_SCALED_TO_ZERO": (503, "The deployment is scaled to zero and not started"),
    "DEPLOYMENT_UNAVAILABLE": (503, "The deployment does not answer"),
    "EMBEDDING_UNAVAILABLE": (503, "The base's embedding deployment does not answer"),
    "EXTRACTOR_UNAVAILABLE": (503, "The memory's extractor deployment does not answer"),
    "MODEL_HUB_UNREACHABLE": (503, "The model hub cannot be reached: download the file elsewhere and add it"),
    "MCP_NOT_RUNNING": (503, "/mcp was called before the server's MCP sessions started (serve the app with astra serve)"),
    "TOOL_UNAVAILABLE": (503, "A built-in tool cannot run on this edge server (a tool result, not an HTTP answer)"),
    "MODEL_PACKAGE_MISSING": (503, "The package that ships the model is not installed"),
    "SYNC_LOST": (503, "CLI only: the server restarted and the sync the CLI followed stopped with it (run it again)"),
    "SYNC_CANCELLED": (503, "The sync was stopped (its base was deleted, or the server is stopping)"),
    "UNREACHABLE": (503, "CLI only: the API at ASTRALYX_API cannot be reached (is `astra serve` running there?)"),
    "DATABASE_BUSY": (503, "PostgreSQL has no free connection in time, or is restarting: try again after Retry-After"),
    "NO_VECTOR_EXTENSION": (503, "PostgreSQL lacks the vector extension and the role may not create it (start stops)"),
    "INDEX_CLOSED": (503, "The base's index was closed meanwhile (the base deleted, or its index rebuilt): try again"),
}

def table() -> str:
    """The README's table of codes (between its `error codes` markers; a test keeps the two the same)."""
    rows = sorted(CODES.items(), key=lambda item: (item[1][0], item[0]))
    return "\n".join(["| Status | Code | Meaning |", "|-------:|------|---------|",
                      *(f"| {status} | `{code}` | {meaning} |" for code, (status, meaning) in rows)])


def error_body(code: str, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The one error shape, whoever answers (the API, the console's scripts, a tool's result to a model, MCP):
    {"error": {"code", "message"[, "details"]}}. `code` is one of CODES (tests/test_error_codes.py checks every one given)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = dict(details)
    return {"error": error}


def status_of(code: str, default: int = 400) -> int:
    """The HTTP status of a code (`default` for one the list does not have: a test keeps that from happening)."""
    entry = CODES.get(code)
    return entry[0] if entry else default


class AstralyxError(Exception):
    status: int = 400
    code: str = "BAD_REQUEST"
    retry_after: int | None = None  # seconds, sent as Retry-After

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        # One status per code, wherever the error is raised and whichever class raises it.
        self.status = status_of(self.code, type(self).status)
        self.details = details or {}

    def to_dict(self) -> dict[str, Any]:
        return error_body(self.code, self.message, self.details)


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


class DatabaseBusy(Unavailable):
    """No database connection in time, or the database refuses or drops them (too many clients, restarting)."""

    code = "DATABASE_BUSY"
    retry_after = 2


Problem = tuple[str, str]  # a field's place (spec.tools[0].name; "" for the whole value) and what is wrong with it


def field_path(loc: Iterable[str | int]) -> str:
    """A field's place as one writes it, in every answer (API, console, MCP, CLI): spec.tools[0].name."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def problems(error: ValidationError | Iterable[Mapping[str, Any]], *, under: str | None = None) -> list[Problem]:
    """Each problem of a pydantic validation error (or of its `errors()`), at its field's place; `under`: a first
    part of a place that is left out (FastAPI's "body")."""
    errors = error if isinstance(error, Iterable) else error.errors()
    out = []
    for err in errors:
        loc = tuple(err["loc"])
        out.append((field_path(loc[1:] if under is not None and loc[:1] == (under,) else loc), str(err["msg"])))
    return out


def describe(error: ValidationError | Iterable[Problem], what: str | None = None, *, whole: str | None = None) -> str:
    """A validation error said once for every shell: "The deployment spec is not valid: tools[0].name: Field required".

    Without `what`, only the problems ("tools[0].name: …; kind: …"). A problem of the whole value is named
    `whole` (by default `what`), or said alone.
    """
    found = list(error) if isinstance(error, Iterable) else problems(error)
    whole = what if whole is None else whole
    said = "; ".join(f"{where or whole}: {msg}" if where or whole else msg for where, msg in found)
    return f"The {what} is not valid: {said}" if what else said
