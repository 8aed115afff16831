"""Deployments: a named model of a workspace, how it runs, and (for chat) its tools."""

from __future__ import annotations

import builtins
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    StrictBool,
    ValidationError,
    field_serializer,
    field_validator,
)

from ..answers import Answer, absent
from ..auth.actor import Actor
from ..auth.roles import DEPLOYMENTS_CALL, DEPLOYMENTS_READ, DEPLOYMENTS_UPDATE
from ..engines import Database, Row
from ..errors import Invalid, NotFound, describe
from ..util import check_name, iso
from .urls import URL_SCHEMA, check_upstream_url

if TYPE_CHECKING:
    from ..auth import Workspaces
    from .catalog import Models

log = logging.getLogger("astralyx")


class EmbeddedRuntime(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["embedded"] = "embedded"


class UpstreamRuntime(BaseModel):
    """Any OpenAI-compatible server. The API key is named by an environment variable, never stored."""

    model_config = ConfigDict(extra="forbid")
    type: Literal["upstream"] = "upstream"
    url: str = Field(description="Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1",
                     json_schema_extra=URL_SCHEMA)
    model: str | None = Field(default=None, description="The model's name upstream (default: the spec's model)")
    api_key_env: str | None = Field(default=None, description="Environment variable holding the API key")
    timeout: float = Field(default=600.0, description="Seconds to wait for an answer")
    context: int | None = Field(
        default=None, ge=256,
        description="The context window the server gives the model, in tokens: search results are fitted to it "
        "(unset: not known, nothing is fitted)",
    )


class Resources(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cpu: StrictBool = Field(default=True, description="Runs on CPUs only")
    min: int = Field(default=1, ge=0, description="Fewest replicas; 0 scales to zero when idle")
    max: int = Field(default=1, ge=1, description="Most replicas")

    @field_validator("min", "max", mode="before")
    @classmethod
    def _a_number(cls, value: Any) -> Any:
        # As the schema says: a whole number (2.0 is one), not false or "2".
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError("a whole number of replicas")
        return value


def _tool_items(schema: dict[str, Any]) -> None:
    """spec.tools in the API's document: each item a built-in tool, with the rules parse() applies to it."""
    from .tools import FUNCTION_NAME_RE, MAX_DESCRIPTION, ToolSpec

    item = ToolSpec.model_json_schema()
    item["properties"]["name"]["anyOf"][0]["pattern"] = FUNCTION_NAME_RE.pattern
    item["properties"]["description"]["anyOf"][0]["maxLength"] = MAX_DESCRIPTION
    schema["items"] = item


class DeploymentSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = Field(description="Model of the library (astra eos models) or the upstream's model name")
    kind: Literal["chat", "embedding"]
    runtime: EmbeddedRuntime | UpstreamRuntime = Field(default_factory=EmbeddedRuntime, discriminator="type")
    resources: Resources = Field(default_factory=Resources)
    # Checked by eos/tools.py (INVALID_TOOLS, in words); the document shows a tool's shape all the same.
    tools: list[dict[str, Any]] = Field(default_factory=list, json_schema_extra=lambda schema: _tool_items(schema))
    shared_with: list[str] = Field(
        default_factory=list,
        description="Workspaces whose keys may call it, as \"model\": \"<this workspace>/<name>\"; its tools then "
        "search and save to this workspace's bases",
    )

    @property
    def scales_to_zero(self) -> bool:
        """Unloaded after an idle time; woken by the next call through the API, not by the workspace's own
        network (a memory's extractor, a base's embedding). An upstream runs on its own server: never."""
        return self.resources.min == 0 and self.runtime.type == "embedded"


class Health(Answer):
    """Whether a deployment answers (eos/runtimes: `Runtimes.health`)."""

    ok: bool | None = Field(description="Whether it answers (or would, on the next call); null: an upstream not "
                                        "checked yet (a listing calls no upstream: its own GET checks it)")
    detail: str | None = absent()
    scaled_to_zero: bool | None = absent()
    checked_at: str | None = absent("In a listing: when the upstream's status was last seen (a check, or a call)")


class DeploymentMetadata(Answer):
    name: str
    workspace: str
    created_at: str
    updated_at: str


class DeploymentView(Answer):
    """A deployment as people and programs see it (the API, `astra eos`)."""

    metadata: DeploymentMetadata
    spec: DeploymentSpec
    status: Health | None = absent("Whether it answers (not after PUT)")
    warnings: builtins.list[str] | None = absent("E.g. who may search a base through its tools")

    # No return annotation: the document then shows the spec's own fields (an annotation would replace them).
    @field_serializer("spec", mode="wrap")
    def _spec_as_stored(self, spec: DeploymentSpec, handler: SerializerFunctionWrapHandler,  # type: ignore[no-untyped-def]
                        info: SerializationInfo):
        # As it is written (exclude_none): a runtime's unset model, key variable or context is left out, not null.
        return spec.model_dump(mode=info.mode, exclude_none=True)

    def with_status(self, status: Health) -> DeploymentView:
        return self.model_copy(update={"status": status})


class DeploymentList(Answer):
    """The workspace's deployments."""

    deployments: builtins.list[DeploymentView]


class Deployment(BaseModel):
    workspace: str
    name: str
    spec: DeploymentSpec
    created_at: str
    updated_at: str

    def view(self) -> DeploymentView:
        """The deployment as shown (its status is the runtimes' to tell: `with_status`)."""
        # Who may search a base through the deployment, said wherever its tools are shown (eos/tools.py).
        from .tools import tools_warning

        warning = tools_warning(self.name, self.spec.tools)
        metadata = DeploymentMetadata(name=self.name, workspace=self.workspace, created_at=self.created_at,
                                      updated_at=self.updated_at)
        return DeploymentView(metadata=metadata, spec=self.spec, warnings=[warning] if warning else None)


def parse_spec(data: Any) -> DeploymentSpec:
    try:
        return DeploymentSpec.model_validate(data)
    except ValidationError as e:
        raise Invalid(describe(e, "deployment spec"), code="INVALID_SPEC") from None


class Deployments:
    """The registry of deployments. How they run is the runtimes' business (eos/runtimes)."""

    def __init__(self, db: Database, models: Models | None = None, workspaces: Workspaces | None = None,
                 *, allow_link_local_upstreams: bool = False) -> None:
        self.db = db
        self.models = models
        self.workspaces = workspaces
        # The operator's setting: may an upstream's URL be link-local (a cloud's metadata service is)? (eos/urls.py)
        self.allow_link_local_upstreams = allow_link_local_upstreams
        # Called with (workspace, name) after a deployment changed or was deleted (the runtimes drop it).
        self.listeners: list[Callable[[str, str], None]] = []
        # Called with (workspace, spec) before a spec is written: each may refuse it (raise) or
        # return it normalised (spec.tools: astralyx/eos/tools.py, wired in core.py).
        self.validators: list[Callable[[str, DeploymentSpec], DeploymentSpec]] = []

    def put(self, actor: Actor | None, workspace: str, name: str, spec: DeploymentSpec) -> Deployment:
        if actor is not None:
            actor.require(DEPLOYMENTS_UPDATE)
            workspace = actor.workspace
        check_name(name, "Deployment")
        self.check(spec)
        spec = self._check_sharing(workspace, spec)
        for validator in self.validators:
            spec = validator(workspace, spec)
        stamp = iso()
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT INTO deployments(workspace, name, spec, created_at, updated_at) VALUES (?,?,?,?,?) "
                "ON CONFLICT(workspace, name) DO UPDATE SET spec=excluded.spec, updated_at=excluded.updated_at",
                (workspace, name, spec.model_dump_json(exclude_none=True), stamp, stamp),
            )
        self._changed(workspace, name)
        return self.find(workspace, name)  # type: ignore[return-value]

    def check(self, spec: DeploymentSpec) -> None:
        """An embedded deployment must name a library model of its kind that can run here.

        (Whether its file is here yet is health, not validity: `astra eos add` may come after.)
        """
        if spec.resources.min > spec.resources.max:
            raise Invalid("resources.min is larger than resources.max", code="INVALID_SPEC")
        if isinstance(spec.runtime, UpstreamRuntime):
            check_upstream_url(spec.runtime.url, allow_link_local=self.allow_link_local_upstreams)
        if spec.runtime.type != "embedded" or self.models is None:
            return
        model = self.models.resolve(spec.model)
        if model is None:
            raise Invalid(
                f"Model {spec.model!r} is not in the library (`astra eos models` lists it). To use a model another "
                "server runs, give runtime {\"type\": \"upstream\", \"url\": ...}",
                code="UNKNOWN_MODEL",
            )
        if model.engine is None:
            raise Invalid(
                f"{model.name} runs upstream only: give runtime {{\"type\": \"upstream\", \"url\": ...}} "
                f"(e.g. Ollama: `ollama pull {model.upstream_name}`, url http://127.0.0.1:11434/v1)",
                code="UPSTREAM_ONLY",
            )
        if model.kind != spec.kind:
            raise Invalid(f"{model.name} is an {model.kind} model: set kind to {model.kind!r}", code="WRONG_MODEL_KIND")

    def _check_sharing(self, workspace: str, spec: DeploymentSpec) -> DeploymentSpec:
        names = []
        for other in spec.shared_with:
            self._check_share(workspace, other)
            if other not in names:
                names.append(other)
        return spec.model_copy(update={"shared_with": sorted(names)})

    def _check_share(self, workspace: str, other: str) -> None:
        check_name(other, "Workspace")
        if other == workspace:
            raise Invalid(f"{workspace!r} is the deployment's own workspace: share it with another one",
                          code="INVALID_SPEC")
        if self.workspaces is not None and not self.workspaces.exists(other):
            raise Invalid(f"No workspace {other!r} to share with (`astra workspaces` lists them)",
                          code="WORKSPACE_NOT_FOUND")

    def share(self, actor: Actor, name: str, workspace: str, *, stop: bool = False) -> Deployment:
        """Let `workspace`'s keys call the deployment (or stop at once). Its tools then search and save as
        this workspace: the doc's warning, said on the deployment's pages.

        Only `shared_with` changes, read and written in one transaction: the rest of the spec is not checked
        again, so stopping never fails on something else (a tool's base deleted, a URL a later rule refuses)."""
        self.get(actor, name)
        actor.require(DEPLOYMENTS_UPDATE)
        if not stop:
            self._check_share(actor.workspace, workspace)
        with self.db.transaction() as conn:
            row = conn.execute("SELECT spec FROM deployments WHERE workspace=? AND name=?",
                               (actor.workspace, name)).fetchone()
            if row is None:  # pragma: no cover - deleted at the same moment elsewhere
                raise NotFound(f"Deployment {name!r} not found: `astra eos deployments` lists this workspace's")
            spec = json.loads(row["spec"])
            shared = {w for w in spec.get("shared_with") or [] if w != workspace} | (set() if stop else {workspace})
            spec["shared_with"] = sorted(shared)
            conn.execute("UPDATE deployments SET spec=?, updated_at=? WHERE workspace=? AND name=?",
                         (json.dumps(spec, ensure_ascii=False), iso(), actor.workspace, name))
        self._changed(actor.workspace, name)
        return self.find(actor.workspace, name)  # type: ignore[return-value]

    def remove_base_tools(self, workspace: str, base: str) -> builtins.list[str]:
        """A base is gone: its tools leave every deployment of the workspace (logged; the spec no longer lists them).
        Answers the deployments changed."""
        changed = []
        with self.db.transaction() as conn:
            for row in conn.execute("SELECT name, spec FROM deployments WHERE workspace=?", (workspace,)).fetchall():
                spec = json.loads(row["spec"])
                tools = spec.get("tools") or []
                kept = [t for t in tools if not (isinstance(t, dict) and t.get("knowledge_base") == base)]
                if len(kept) == len(tools):
                    continue
                spec["tools"] = kept
                conn.execute("UPDATE deployments SET spec=?, updated_at=? WHERE workspace=? AND name=?",
                             (json.dumps(spec, ensure_ascii=False), iso(), workspace, row["name"]))
                changed.append(row["name"])
        for name in changed:
            log.warning("knowledge base %s/%s was deleted: its tools were removed from deployment %s", workspace, base, name)
            self._changed(workspace, name)
        return changed

    def callable(self, actor: Actor, model: str) -> Deployment:
        """The deployment a caller's `"model"` names: its own workspace's `<name>`, or `<owner>/<name>` shared
        with its workspace. Anything else is not found, so a workspace learns nothing of the others."""
        actor.require(DEPLOYMENTS_CALL)
        owner, _, name = model.rpartition("/")
        dep = None
        if not owner or owner == actor.workspace:
            dep = self.find(actor.workspace, name)
        else:
            shared = self.find(owner, name)
            dep = shared if shared is not None and actor.workspace in shared.spec.shared_with else None
        if dep is None:
            raise NotFound(
                f"No deployment {model!r} in workspace {actor.workspace!r}: \"model\" is a deployment's name, or "
                "<workspace>/<name> for one shared with you (`astra eos deployments` and GET /v1/models list them)",
                code="DEPLOYMENT_NOT_FOUND",
            )
        return dep

    def shared_with_me(self, actor: Actor) -> list[Deployment]:
        """Other workspaces' deployments this one's keys may call."""
        actor.require(DEPLOYMENTS_CALL)
        # Portable SQL (json_each is SQLite's) narrows to specs naming this workspace; the spec says if it is shared.
        rows = self.db.query(
            "SELECT * FROM deployments WHERE workspace != ? AND spec LIKE ? ORDER BY workspace, name",
            (actor.workspace, f"%{json.dumps(actor.workspace)}%"),
        )
        return [dep for dep in map(self._row, rows) if actor.workspace in dep.spec.shared_with]

    def _changed(self, workspace: str, name: str) -> None:
        for listener in self.listeners:
            listener(workspace, name)

    def get(self, actor: Actor, name: str) -> Deployment:
        actor.require(DEPLOYMENTS_READ)
        dep = self.find(actor.workspace, name)
        if dep is None:
            raise NotFound(f"Deployment {name!r} not found: `astra eos deployments` lists this workspace's")
        return dep

    def list(self, actor: Actor) -> builtins.list[Deployment]:
        actor.require(DEPLOYMENTS_READ)
        rows = self.db.query("SELECT * FROM deployments WHERE workspace=? ORDER BY name", (actor.workspace,))
        return [self._row(r) for r in rows]

    def delete(self, actor: Actor, name: str) -> None:
        actor.require(DEPLOYMENTS_UPDATE)
        self.get(actor, name)
        with self.db.transaction() as conn:
            conn.execute("DELETE FROM deployments WHERE workspace=? AND name=?", (actor.workspace, name))
        self._changed(actor.workspace, name)

    def find(self, workspace: str, name: str) -> Deployment | None:
        row = self.db.one("SELECT * FROM deployments WHERE workspace=? AND name=?", (workspace, name))
        return self._row(row) if row else None

    @staticmethod
    def _row(row: Row) -> Deployment:
        return Deployment(
            workspace=row["workspace"],
            name=row["name"],
            spec=DeploymentSpec.model_validate(json.loads(row["spec"])),
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )
