"""Knowledge bases: their spec, the registry, and the folder each one owns."""

from __future__ import annotations

import builtins
import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from ..auth.actor import Actor
from ..auth.roles import MANAGE_BASES, READ
from ..engines import Database, Row
from ..eos.deployments import Deployments
from ..errors import Conflict, Invalid, NotFound, validation_message
from ..util import NAME_RE, check_name, iso, new_id
from .sources import Rule, check_patterns


class DeploymentRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    deployment: str


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid")
    folder: str = Field(description="A folder on the server's machine, synced into the base")
    include: list[str] | None = Field(
        default=None, description="Globs of the files to index (relative to the folder: *.md, guide/**); none: all"
    )
    exclude: list[str] | None = Field(
        default=None, description="Globs of files or folders to leave out (drafts/**, print.html), besides the "
        "default excludes: hidden names, version control, node_modules, build output, licence files, backups",
    )

    @field_validator("include", "exclude")
    @classmethod
    def _patterns(cls, v: list[str] | None, info: ValidationInfo) -> list[str] | None:
        return check_patterns(v, str(info.field_name))

    def rule(self) -> Rule:
        """Which of the folder's files are indexed (sources.py)."""
        return Rule(self.include, self.exclude)


class McpSpec(BaseModel):
    """How MCP clients (astra mcp, /mcp) may write to the base."""

    model_config = ConfigDict(extra="forbid")
    save: Literal["ask", "on_its_own"] = Field(
        default="ask",
        description="save_to_knowledge from an MCP client: ask the person first (the default), or save on its own "
        "(within SAVE_LIMIT, listed under Saved by models with Undo)",
    )


class BaseSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["documents", "memory"] = "documents"
    sources: list[Source] = Field(default_factory=list)
    embedding: DeploymentRef | None = None
    extractor: DeploymentRef | None = None
    mcp: McpSpec | None = None

    @model_validator(mode="after")
    def _memory_has_no_sources(self) -> BaseSpec:
        if self.kind == "memory" and self.sources:
            raise ValueError("a memory keeps facts, not documents: leave sources empty")
        return self


class Metadata(BaseModel):
    model_config = ConfigDict(extra="ignore")
    # check_name() refuses others, with its message; the pattern says so in the API's schema.
    name: str = Field(json_schema_extra={"pattern": NAME_RE.pattern})


class BaseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metadata: Metadata
    spec: BaseSpec = Field(default_factory=BaseSpec)


def new_base(
    name: str, kind: str = "documents", *, folders: builtins.list[str] | tuple[str, ...] = (),
    include: Sequence[str] = (), exclude: Sequence[str] = (),
    embedding: str | None = None, extractor: str | None = None, mcp_save: str | None = None,
) -> dict[str, Any]:
    """A base's create request from a shell's choices (the CLI's options, the console's form), as the API's JSON.

    Blank choices are no choice; what is left is checked where every create is, in `KnowledgeBases.create`.
    `include`/`exclude` are the patterns of every folder given.
    """
    patterns = {key: [p for p in given if p.strip()] for key, given in (("include", include), ("exclude", exclude))}
    sources = [{"folder": f, **{k: v for k, v in patterns.items() if v}} for f in folders if f.strip()]
    spec: dict[str, Any] = {"kind": kind, "sources": sources}
    for role, deployment in (("embedding", embedding), ("extractor", extractor)):
        if deployment and deployment.strip():
            spec[role] = {"deployment": deployment.strip()}
    if mcp_save:
        spec["mcp"] = {"save": mcp_save}
    return {"metadata": {"name": name.strip()}, "spec": spec}


@dataclass
class KnowledgeBase:
    workspace: str
    name: str
    spec: BaseSpec
    created_at: str
    folder: Path

    @property
    def kind(self) -> str:
        return self.spec.kind

    def to_dict(self) -> dict[str, Any]:
        return {
            "metadata": {"name": self.name, "workspace": self.workspace, "created_at": self.created_at},
            "spec": self.spec.model_dump(mode="json", exclude_none=True),
        }


def parse_request(data: Any) -> BaseRequest:
    try:
        return BaseRequest.model_validate(data)
    except ValidationError as e:
        raise Invalid(validation_message("knowledge base", e), code="INVALID_SPEC") from None


class KnowledgeBases:
    def __init__(self, db: Database, home: Path, deployments: Deployments) -> None:
        self.db = db
        self.root = home / "bases"
        self.deployments = deployments
        # Called with the base before its folder goes (indexes close their files, caches drop).
        self.on_delete: list[Callable[[KnowledgeBase], None]] = []

    def folder(self, workspace: str, name: str) -> Path:
        return self.root / workspace / name

    def create(self, actor: Actor, request: BaseRequest) -> KnowledgeBase:
        actor.require(MANAGE_BASES)
        name = check_name(request.metadata.name, "Knowledge base")
        self._check_deployments(actor.workspace, request.spec)
        with self.db.transaction() as conn:
            if conn.execute(
                "SELECT 1 FROM bases WHERE workspace=? AND name=?", (actor.workspace, name)
            ).fetchone():
                raise Conflict(
                    f"A knowledge base named {name!r} exists already in this workspace: choose another name",
                    code="BASE_EXISTS",
                )
            conn.execute(
                "INSERT INTO bases(workspace, name, kind, spec, created_at) VALUES (?,?,?,?,?)",
                (actor.workspace, name, request.spec.kind, request.spec.model_dump_json(exclude_none=True), iso()),
            )
            self.folder(actor.workspace, name).mkdir(parents=True, exist_ok=True)
        return self.get(actor, name)

    def update(self, actor: Actor, name: str, spec: BaseSpec) -> KnowledgeBase:
        actor.require(MANAGE_BASES)
        base = self.get(actor, name)
        if spec.kind != base.kind:
            raise Invalid("A base's kind cannot change: create a new base", code="INVALID_SPEC")
        self._check_deployments(actor.workspace, spec)
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE bases SET spec=? WHERE workspace=? AND name=?",
                (spec.model_dump_json(exclude_none=True), actor.workspace, name),
            )
        return self.get(actor, name)

    def _check_deployments(self, workspace: str, spec: BaseSpec) -> None:
        for role, ref, kind in (("embedding", spec.embedding, "embedding"), ("extractor", spec.extractor, "chat")):
            if ref is None:
                continue
            dep = self.deployments.find(workspace, ref.deployment)
            if dep is None:
                raise Invalid(
                    f"spec.{role}.deployment: no deployment named {ref.deployment!r} in this workspace "
                    f"(`astra eos deployments` lists them; deploy one first)",
                    code="DEPLOYMENT_NOT_FOUND",
                )
            if dep.spec.kind != kind:
                raise Invalid(
                    f"spec.{role}.deployment: {ref.deployment!r} is a {dep.spec.kind} deployment; "
                    f"the {role} must be a {kind} deployment",
                    code="WRONG_DEPLOYMENT_KIND",
                )

    def get(self, actor: Actor, name: str) -> KnowledgeBase:
        actor.require(READ)
        base = self.find(actor.workspace, name)
        if base is None:
            raise NotFound(
                f"Knowledge base {name!r} not found in this workspace: `astra metis bases` lists them",
                code="BASE_NOT_FOUND",
            )
        return base

    def find(self, workspace: str, name: str) -> KnowledgeBase | None:
        row = self.db.one("SELECT * FROM bases WHERE workspace=? AND name=?", (workspace, name))
        return self._row(row) if row else None

    def list(self, actor: Actor) -> builtins.list[KnowledgeBase]:
        actor.require(READ)
        rows = self.db.query("SELECT * FROM bases WHERE workspace=? ORDER BY name", (actor.workspace,))
        return [self._row(r) for r in rows]

    def all(self) -> builtins.list[KnowledgeBase]:
        return [self._row(r) for r in self.db.query("SELECT * FROM bases ORDER BY workspace, name")]

    def delete(self, actor: Actor, name: str) -> None:
        """Delete the base, its folder and index: every document, note and fact."""
        actor.require(MANAGE_BASES)
        base = self.get(actor, name)
        for hook in self.on_delete:
            hook(base)
        # Move the folder aside first so a crash never leaves a half-deleted base in place.
        trash = self.root / ".trash" / new_id("del")
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM bases WHERE workspace=? AND name=?", (actor.workspace, name))
            if base.folder.exists():
                trash.parent.mkdir(parents=True, exist_ok=True)
                base.folder.rename(trash)
        shutil.rmtree(trash, ignore_errors=True)

    def purge_trash(self) -> None:
        shutil.rmtree(self.root / ".trash", ignore_errors=True)

    def _row(self, row: Row) -> KnowledgeBase:
        return KnowledgeBase(
            workspace=row["workspace"],
            name=row["name"],
            spec=BaseSpec.model_validate(json.loads(row["spec"])),
            created_at=row["created_at"],
            folder=self.folder(row["workspace"], row["name"]),
        )
