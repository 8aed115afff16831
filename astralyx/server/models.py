"""The API's request and response bodies, as pydantic models: /v1/openapi.json documents every field.

A body that does not fit its model gets 422 with the model's error code (`invalid`: what it is and
which code), e.g. a search without a query is INVALID_QUERY, the same code and status the domain
gives for a blank one. The rules themselves stay in the domain's models where it has them (a base's
spec, a fact, a deployment's spec): these reuse them, so each rule is written once.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.json_schema import JsonDict
from pydantic_core import PydanticCustomError

from ..eos.deploy import DeployRequest
from ..eos.deployments import DeploymentSpec
from ..eos.gateway import ChatRequest
from ..errors import describe
from ..metis.bases import KnowledgeBaseRequest, KnowledgeBaseSpec
from ..metis.memory.facts import DATE_SCHEMA, ONE_LINE, FactIn
from ..metis.memory.service import MAX_BATCH
from ..metis.search import MAX_QUERY_CHARS, MAX_RESULTS
from ..util import NAME_RE
from .body import surrogate_problem

# What the domain checks, said in the schema too (the domain's check and message stay the one rule).
NAME: JsonDict = {"pattern": NAME_RE.pattern, "maxLength": 64}
DATE: JsonDict = DATE_SCHEMA
DATE_PARAM: JsonDict = {"anyOf": [{"type": "string", "format": "date"}, {"type": "string", "format": "date-time"}]}
TEXT: JsonDict = {"pattern": r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"}  # a note: tabs and line breaks, no other control


class Body(BaseModel):
    """A request body; `invalid` names it in the error message and gives the error code.

    Its fields take what the document says, as JSON Schema reads it: `false` is no integer, `1` no boolean,
    `"3"` no number (strict), and `2.0` is the integer 2 (the domain's nested models, a fact or a spec, keep
    their own rules).
    """

    invalid: ClassVar[tuple[str, str]] = ("request", "INVALID_REQUEST")
    model_config = ConfigDict(strict=True)

    @model_validator(mode="before")
    @classmethod
    def _as_json_reads(cls, data: Any) -> Any:
        # Every string of every body, nested models included (this runs first, on the body as sent).
        problem = surrogate_problem(data)
        if problem:
            raise PydanticCustomError("lone_surrogate", "{problem}", {"problem": problem})
        if isinstance(data, dict):
            whole = {name for name, field in cls.model_fields.items() if _takes_int(field.annotation)}
            data = {k: int(v) if k in whole and isinstance(v, float) and v.is_integer() else v for k, v in data.items()}
        return data

    @classmethod
    def describe(cls, problems: list[tuple[str, str]], body: Any) -> str:
        """The message for a body that does not fit: each field (spec.tools[0].name) and what is wrong."""
        return describe(problems, cls.invalid[0], whole="body")


def _takes_int(annotation: Any) -> bool:
    """An integer field (`int`, `int | None`): JSON's 2.0 is one."""
    return annotation is int or (int in get_args(annotation) and float not in get_args(annotation))


# -- errors ------------------------------------------------------------------------------------------
class ErrorDetail(BaseModel):
    code: str = Field(description="A stable code (the README lists them, astralyx/errors.py CODES)", examples=["BASE_NOT_FOUND"])
    message: str = Field(description="What happened and how to fix it")
    details: dict[str, Any] | None = Field(default=None, description="More about it, e.g. the permission missing")


class ErrorBody(BaseModel):
    error: ErrorDetail


# -- knowledge bases ---------------------------------------------------------------------------------
class BaseIn(KnowledgeBaseRequest, Body):
    invalid = ("knowledge base", "INVALID_SPEC")


class BaseUpdate(Body):
    """A base's new spec (its name is the address's; metadata may repeat it)."""

    invalid = ("knowledge base", "INVALID_SPEC")
    model_config = ConfigDict(extra="forbid")
    metadata: dict[str, Any] | None = None
    spec: KnowledgeBaseSpec = Field(default_factory=KnowledgeBaseSpec)


class SearchIn(Body):
    invalid = ("search", "INVALID_QUERY")
    model_config = ConfigDict(extra="forbid")
    # A query blank or too long, max_results below 1: the search's own check (metis/search.py) says so; the schema
    # only describes it.
    query: str = Field(description="The words or question to search for",
                       json_schema_extra={"pattern": r"\S", "maxLength": MAX_QUERY_CHARS})
    max_results: int = Field(default=MAX_RESULTS, description=f"At most this many passages (at most {MAX_RESULTS})",
                             json_schema_extra={"minimum": 1})
    as_of: str | None = Field(default=None, description="What held on this date (memory bases): 2026-09-30, or a date-time",
                              examples=["2026-09-30"], json_schema_extra=DATE)


# -- memory ------------------------------------------------------------------------------------------
class FactsIn(Body):
    invalid = ("facts", "INVALID_FACT")
    model_config = ConfigDict(extra="forbid")
    facts: list[FactIn] = Field(min_length=1, json_schema_extra={"maxItems": MAX_BATCH},
                                description=f"Kept as one step, all or nothing (at most {MAX_BATCH})")

    @classmethod
    def describe(cls, problems: list[tuple[str, str]], body: Any) -> str:
        # As the domain says it (memory/service.py): "The fact …" for one, "The facts[2] …" in a batch.
        facts = body.get("facts") if isinstance(body, dict) else None
        match = re.match(r"facts\[(\d+)\]\.?", problems[0][0])
        if not isinstance(facts, list) or match is None:
            return super().describe(problems, body)
        what = "fact" if len(facts) == 1 else f"facts[{match.group(1)}]"
        mine = [(where[match.end():], msg) for where, msg in problems if where.startswith(match.group())]
        return describe(mine, what)


class Correction(Body):
    invalid = ("correction", "INVALID_FACT")
    model_config = ConfigDict(extra="forbid", json_schema_extra={"minProperties": 1})
    # null is taken as not given; the schema asks for what changes (at least one field of it).
    fact: str | None = Field(default=None, description="The corrected sentence", json_schema_extra={"type": "string", **ONE_LINE})
    said_at: str | None = Field(default=None, json_schema_extra=DATE_PARAM)
    source: str | None = Field(default=None, json_schema_extra={"type": "string", **ONE_LINE})


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str = Field(examples=["user"])
    content: Any = Field(default=None, description="The message's text")
    date: str | None = Field(default=None, description="When it was said: 2026-10-12 or a date-time", json_schema_extra=DATE)


class ConversationIn(Body):
    invalid = ("conversation", "INVALID_CONVERSATION")
    source: str | None = Field(default=None, description="Where the conversation comes from, kept with each fact")
    said_at: str | None = Field(default=None, description="When it was said, for messages without a date",
                                json_schema_extra=DATE)
    messages: list[Message] = Field(description="The conversation, oldest first")


# -- saves and drafts --------------------------------------------------------------------------------
class DraftEdit(Body):
    invalid = ("draft", "INVALID_REQUEST")
    model_config = ConfigDict(extra="forbid")
    title: str | None = None
    text: str | None = None


# -- deployments -------------------------------------------------------------------------------------
class DeploymentIn(Body):
    """{"spec": {...}}; the bare spec is taken too."""

    invalid = ("deployment spec", "INVALID_SPEC")
    model_config = ConfigDict(extra="forbid")
    spec: DeploymentSpec

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, data: Any) -> Any:
        return {"spec": data} if isinstance(data, dict) and "spec" not in data else data


class DeployIn(DeployRequest, Body):
    invalid = ("deployment", "INVALID_SPEC")
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(default=None, min_length=1, description="Deployment name (default: from the model's)",
                             json_schema_extra=NAME)
    replace: bool = Field(default=False, description="A deployment of that name exists: replace it, keeping its tools "
                          "and sharing (else 409 DEPLOYMENT_EXISTS)")


class KnowledgeTools(Body):
    invalid = ("tools", "INVALID_REQUEST")
    model_config = ConfigDict(extra="forbid", strict=True)
    search: bool = False
    save: bool = False
    confirm: bool = Field(default=True, description="Ask before saving: the model's saves wait as drafts")


class AddModel(Body):
    invalid = ("model", "INVALID_REQUEST")
    model_config = ConfigDict(extra="forbid")
    file: str | None = Field(default=None, description="A GGUF file on the server's machine")
    chat_format: str | None = Field(default=None, description="llama.cpp's chat format, when the file does not say")


# -- the OpenAI-compatible gateway -------------------------------------------------------------------
class EmbeddingsIn(Body):
    invalid = ("embeddings request", "INVALID_REQUEST")
    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, description="An embedding deployment of the workspace", examples=["e5-small"])
    input: str | Annotated[list[str], Field(min_length=1)] = Field(description="A text or a list of texts")
    encoding_format: Literal["float", "base64"] | None = None
    input_type: Literal["query", "passage", "document"] | None = Field(
        default=None, description="The e5 prefix: query (the default) or passage")
    dimensions: int | None = Field(default=None, ge=1, description="Cut each vector to this many dimensions")


class ChatIn(ChatRequest, Body):
    """OpenAI's chat completion request; the fields the gateway reads are named, the rest go to the model."""

    invalid = ("chat completion request", "INVALID_REQUEST")
    model_config = ConfigDict(extra="allow")


# -- answers -----------------------------------------------------------------------------------------
# What routes answer that the domain has no model of. Metis's answers are the domain's own models (metis/search.py's
# SearchResult, memory/service.py's KeptFacts, …), declared by the routes as their return type: filtered by them.
class Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


# Eos's answers are the domain's too (eos/deployments.py's DeploymentView and Health, catalog.py's LibraryEntry,
# tools.py's ToolListing, receipts.py's Receipt and Verdict), declared by the routes as response_model.
class Deleted(BaseModel):
    """What was deleted."""

    deleted: str


class WhoAmI(BaseModel):
    """Who the key is: its workspace, role and permissions."""

    workspace: str
    role: str
    key_id: str | None
    permissions: list[str]
