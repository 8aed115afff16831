"""Knowledge bases: their spec, the registry, and the folder each one owns."""

from __future__ import annotations

import builtins
import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_serializer,
    field_validator,
    model_validator,
)

from ..answers import Answer, absent
from ..auth.actor import Actor
from ..auth.roles import MANAGE_BASES, READ
from ..engines import Database, Row
from ..eos.deployments import Deployments, Health
from ..errors import Conflict, Forbidden, Invalid, NotFound, describe
from ..util import NAME_RE, check_name, iso, new_id
from .roots import SourceRoots
from .sources import MAX_PATTERN, MAX_PATTERNS, Rule, check_patterns

# What the document can say of a glob (check_patterns says the rest: no `..` segment): 1 to 500 characters,
# something besides spaces, no control character or backslash.
Pattern = Annotated[str, Field(min_length=1, max_length=MAX_PATTERN, pattern=r"^[^\\\x00-\x1f]*[^\s\\\x00-\x1f][^\\\x00-\x1f]*$")]

# The embedding deployment every new workspace gets (core.py), and so a new base's when its request
# does not say (KnowledgeBases.default_embedding).
WORKSPACE_EMBEDDING = "e5-small"


class DeploymentRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    deployment: str


class Source(BaseModel):
    model_config = ConfigDict(extra="forbid")
    folder: str = Field(description="A folder on the server's machine, synced into the base")
    include: list[Pattern] | None = Field(
        default=None, max_length=MAX_PATTERNS,
        description="Globs of the files to index (relative to the folder: *.md, guide/**); none: all",
    )
    exclude: list[Pattern] | None = Field(
        default=None, max_length=MAX_PATTERNS,
        description="Globs of files or folders to leave out (drafts/**, print.html), besides the default excludes: "
        "hidden names, version control, node_modules, build output, licence files, backups",
    )

    @field_validator("include", "exclude", mode="before")
    @classmethod
    def _patterns(cls, v: Any, info: ValidationInfo) -> Any:
        # Before the schema's own constraints, so that a bad glob is told in words, not as a regex.
        if isinstance(v, list) and all(isinstance(p, str) for p in v):
            return check_patterns(v, str(info.field_name))
        return v

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


class KnowledgeBaseSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["documents", "memory"] = "documents"
    sources: list[Source] = Field(default_factory=list)
    embedding: DeploymentRef | None = None
    extractor: DeploymentRef | None = None
    mcp: McpSpec | None = None

    @model_validator(mode="after")
    def _memory_has_no_sources(self) -> KnowledgeBaseSpec:
        if self.kind == "memory" and self.sources:
            raise ValueError("a memory keeps facts, not documents: leave sources empty")
        return self


class Metadata(BaseModel):
    model_config = ConfigDict(extra="ignore")
    # check_name() refuses others, with its message; the pattern says so in the API's schema.
    name: str = Field(json_schema_extra={"pattern": NAME_RE.pattern})


class KnowledgeBaseRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    metadata: Metadata
    spec: KnowledgeBaseSpec = Field(default_factory=KnowledgeBaseSpec)


def new_base(
    name: str, kind: str = "documents", *, folders: builtins.list[str] | tuple[str, ...] = (),
    include: Sequence[str] = (), exclude: Sequence[str] = (),
    embedding: str | None = None, extractor: str | None = None, mcp_save: str | None = None, no_embedding: bool = False,
) -> dict[str, Any]:
    """A base's create request from a shell's choices (the CLI's options, the console's form), as the API's JSON.

    Blank choices are no choice; what is left is checked where every create is, in `KnowledgeBases.create`.
    `include`/`exclude` are the patterns of every folder given. No embedding named leaves it to the API (the
    workspace's embedding deployment); `no_embedding` says none (`"embedding": null`: keywords only).
    """
    patterns = {key: [p for p in given if p.strip()] for key, given in (("include", include), ("exclude", exclude))}
    sources = [{"folder": f, **{k: v for k, v in patterns.items() if v}} for f in folders if f.strip()]
    spec: dict[str, Any] = {"kind": kind, "sources": sources}
    for role, deployment in (("embedding", embedding), ("extractor", extractor)):
        if deployment and deployment.strip():
            spec[role] = {"deployment": deployment.strip()}
    if no_embedding:
        spec["embedding"] = None
    if mcp_save:
        spec["mcp"] = {"save": mcp_save}
    return {"metadata": {"name": name.strip()}, "spec": spec}


def edited_spec(
    spec: Mapping[str, Any], *, embedding: str | None = None, no_embedding: bool = False, extractor: str | None = None,
    no_extractor: bool = False, sources: Sequence[Mapping[str, Any]] | None = None, mcp_save: str | None = None,
) -> dict[str, Any]:
    """A base's spec (as the API shows it) with a shell's changes (the CLI's options, the console's settings form),
    as PUT …/knowledge-bases/<b> takes it; what is left is checked where every update is, in `KnowledgeBases.update`.

    A deployment named is set, `no_embedding`/`no_extractor` remove it. `sources`, when given, become the base's
    folders: each {"folder", "include"?, "exclude"?}; a folder the base had keeps the patterns these leave out,
    given ones replace them (blank ones dropped: none left, that rule goes). Blank folders are no folder.
    """
    out: dict[str, Any] = json.loads(json.dumps(spec))  # a copy: the caller's `before` stays as it was
    for role, deployment, off in (("embedding", embedding, no_embedding), ("extractor", extractor, no_extractor)):
        if deployment and deployment.strip():
            out[role] = {"deployment": deployment.strip()}
        elif off:
            out.pop(role, None)
    if sources is not None:
        had = {s["folder"]: s for s in out.get("sources") or []}
        out["sources"] = []
        for given in sources:
            folder = str(given.get("folder") or "").strip()
            if not folder:
                continue
            source = dict(had.get(folder) or {}, folder=folder)
            for key in ("include", "exclude"):
                if given.get(key) is not None:
                    patterns = [p for p in given[key] if p.strip()]
                    if patterns:
                        source[key] = patterns
                    else:
                        source.pop(key, None)
            out["sources"].append(source)
    if mcp_save:
        out["mcp"] = {"save": mcp_save}
    return out


def resync_notice(before: Mapping[str, Any], after: Mapping[str, Any]) -> str | None:
    """What the next sync does because a base's spec changed from `before` to `after` (both as the API shows a
    spec), said after an update by the CLI and the console; None when it does nothing new."""
    if after.get("embedding") and after.get("embedding") != before.get("embedding"):
        return "the next sync embeds every passage again"
    if after.get("sources") and after.get("sources") != before.get("sources"):
        return "the next sync indexes what the folders hold now"
    return None


@dataclass
class EmbeddingChoice:
    """How a new base's embedding was chosen: `given` by its request (a deployment, or null), or the
    workspace's `default` (None when there is none ready: the base searches by keywords); said to people."""

    deployment: str | None
    chosen: Literal["given", "default"]
    message: str


class KnowledgeBaseMetadata(Answer):
    name: str
    workspace: str
    created_at: str


class KnowledgeBaseView(Answer):
    """A knowledge base as answered: its name and workspace, its spec (the fields it sets)."""

    metadata: KnowledgeBaseMetadata
    spec: KnowledgeBaseSpec
    embedding_choice: EmbeddingChoice | None = absent("At create: which embedding the base got, and why")

    # No return annotation: the document shows the spec's own schema. Unset (null) fields are left out, as always.
    @field_serializer("spec", mode="plain")
    def _spec(self, spec: KnowledgeBaseSpec):  # type: ignore[no-untyped-def]
        return spec.model_dump(mode="json", exclude_none=True)


@dataclass
class KnowledgeBase:
    workspace: str
    name: str
    spec: KnowledgeBaseSpec
    created_at: str
    folder: Path
    embedding_choice: EmbeddingChoice | None = field(default=None, compare=False)  # at create only

    @property
    def kind(self) -> str:
        return self.spec.kind

    def view(self) -> KnowledgeBaseView:
        metadata = KnowledgeBaseMetadata.model_construct(name=self.name, workspace=self.workspace, created_at=self.created_at)
        return KnowledgeBaseView.model_construct(metadata=metadata, spec=self.spec, embedding_choice=self.embedding_choice)


def parse_request(data: Any) -> KnowledgeBaseRequest:
    try:
        return KnowledgeBaseRequest.model_validate(data)
    except ValidationError as e:
        raise Invalid(describe(e, "knowledge base"), code="INVALID_SPEC") from None


class KnowledgeBases:
    def __init__(self, db: Database, home: Path, deployments: Deployments, *, source_roots: SourceRoots | None = None,
                 health: Callable[[str, str], Health] | None = None) -> None:
        self.db = db
        self.root = home / "bases"
        self.deployments = deployments
        # Where folder sources may lie (metis/roots.py): checked at create, update and every sync.
        self.source_roots = source_roots or SourceRoots(home)
        # Called with the base before its folder goes (indexes close their files, caches drop).
        self.on_delete: list[Callable[[KnowledgeBase], None]] = []
        # (workspace, deployment) -> can it run here now (ok, detail): the runtimes' health (core.py).
        self.health = health

    def folder(self, workspace: str, name: str) -> Path:
        return self.root / workspace / name

    def create(self, actor: Actor, request: KnowledgeBaseRequest, *, default_embedding: bool = False) -> KnowledgeBase:
        """A new base, as the request says. default_embedding (the API's create): a request that does not
        mention `spec.embedding` gets the workspace's (`default_embedding`); `"embedding": null` is none."""
        actor.require(MANAGE_BASES)
        name = check_name(request.metadata.name, "Knowledge base")
        spec = request.spec
        if default_embedding and "embedding" not in spec.model_fields_set:
            choice = self.default_embedding(actor.workspace)
            if choice.deployment is not None:
                spec = spec.model_copy(update={"embedding": DeploymentRef(deployment=choice.deployment)})
                request = request.model_copy(update={"spec": spec})
        elif spec.embedding is not None:
            choice = EmbeddingChoice(spec.embedding.deployment, "given", f"embeds with {spec.embedding.deployment}")
        else:
            choice = EmbeddingChoice(None, "given", "no embedding: the base searches by keywords")
        self._check_deployments(actor.workspace, request.spec)
        self._check_sources(actor, request.spec)
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
        base = self.get(actor, name)
        base.embedding_choice = choice
        return base

    def default_embedding(self, workspace: str) -> EmbeddingChoice:
        """The embedding of a base whose request does not say: the workspace's `e5-small` (each workspace
        gets one), else its only embedding deployment, if it can run here now; else none (keywords)."""
        # The workspace's own choice, whoever creates the base (naming a deployment needs no more either).
        mine = [d for d in self.deployments.list(Actor.local_owner(workspace)) if d.spec.kind == "embedding"]
        pick = next((d for d in mine if d.name == WORKSPACE_EMBEDDING), mine[0] if len(mine) == 1 else None)
        keywords = "the base searches by keywords"
        if pick is None:
            why = "several embedding deployments and none is the default" if mine else "no embedding deployment"
            return EmbeddingChoice(None, "default", f"{keywords}: the workspace has {why} (name one in spec.embedding)")
        health = self.health(workspace, pick.name) if self.health else Health(ok=True)
        if not health.ok:
            return EmbeddingChoice(None, "default", f"{keywords}: {pick.name} is not ready ({health.detail})")
        return EmbeddingChoice(pick.name, "default", f"embeds with {pick.name}, the workspace's embedding deployment "
                               "(\"embedding\": null for keywords only)")

    def update(self, actor: Actor, name: str, spec: KnowledgeBaseSpec) -> KnowledgeBase:
        actor.require(MANAGE_BASES)
        base = self.get(actor, name)
        if spec.kind != base.kind:
            raise Invalid("A base's kind cannot change: create a new base", code="INVALID_SPEC")
        self._check_deployments(actor.workspace, spec)
        self._check_sources(actor, spec, kept=[s.folder for s in base.spec.sources])
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE bases SET spec=? WHERE workspace=? AND name=?",
                (spec.model_dump_json(exclude_none=True), actor.workspace, name),
            )
        return self.get(actor, name)

    def _check_sources(self, actor: Actor, spec: KnowledgeBaseSpec, kept: Sequence[str] = ()) -> None:
        """Each folder where the operator lets a base read (metis/roots.py). When no roots are set, the local owner
        (no key) names any folder outside the data directory, and an update may keep the folders the base had."""
        for source in spec.sources:
            self.source_roots.check(source.folder, free=actor.key_id is None or source.folder in kept)

    def refused_sources(self, base: KnowledgeBase) -> tuple[KnowledgeBase, Forbidden | None]:
        """The base as a sync may read it now (without the folders it may no longer read), and why the first of
        those is refused (None when every folder is still allowed)."""
        kept, refused = [], None
        for source in base.spec.sources:
            try:
                self.source_roots.check_sync([source.folder])
                kept.append(source)
            except Forbidden as e:
                refused = refused or e
        if refused is None:
            return base, None
        return replace(base, spec=base.spec.model_copy(update={"sources": kept})), refused

    def _check_deployments(self, workspace: str, spec: KnowledgeBaseSpec) -> None:
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

    def delete(self, actor: Actor, name: str) -> builtins.list[str]:
        """Delete the base, its folder and index: every document, note and fact. The tools that name it go from the
        workspace's deployments (a deployment never keeps a tool on a base that is gone): answers those changed."""
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
        return self.deployments.remove_base_tools(actor.workspace, name)

    def purge_trash(self) -> None:
        shutil.rmtree(self.root / ".trash", ignore_errors=True)

    def _row(self, row: Row) -> KnowledgeBase:
        return KnowledgeBase(
            workspace=row["workspace"],
            name=row["name"],
            spec=KnowledgeBaseSpec.model_validate(json.loads(row["spec"])),
            created_at=row["created_at"],
            folder=self.folder(row["workspace"], row["name"]),
        )
