"""Built-in tools of a chat deployment: their spec in `spec.tools`, validation and naming.

    "tools": [
      {"builtin": "search_knowledge", "knowledge_base": "handbook"},
      {"builtin": "save_to_knowledge", "knowledge_base": "handbook"},
      {"builtin": "save_to_knowledge", "knowledge_base": "journal", "confirm": false}
    ]

`confirm` is true by default (ask before saving) and only written when false. The first tool of
each kind is called `search_knowledge` / `save_to_knowledge`; the next ones get the base's name
(`search_journal`, `save_to_journal`), or the `name` given.

What a tool lets its callers do is said once, in `offers` (the chat gateway and MCP both ask it): anyone who
may call the deployment can have its model search the base, as a reader of the deployment's workspace.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..answers import Answer
from ..auth.actor import Actor
from ..auth.roles import DEPLOYMENTS_CALL
from ..errors import Invalid, describe

if TYPE_CHECKING:
    from .deployments import Deployment, Deployments

SEARCH: Final = "search_knowledge"
SAVE: Final = "save_to_knowledge"
BUILTINS = (SEARCH, SAVE)
PREFIX = {SEARCH: "search_", SAVE: "save_to_"}
# What OpenAI-compatible servers accept as a function name.
FUNCTION_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_DESCRIPTION = 1024
SaveMode = Literal["ask", "on_its_own"]  # how a save goes: a draft the person decides on, or saved at once


class ToolSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    builtin: Literal["search_knowledge", "save_to_knowledge"]
    knowledge_base: str = Field(description="A knowledge base of the deployment's workspace")
    confirm: bool = Field(default=True, description="save_to_knowledge: ask the person before saving (default)")
    name: str | None = Field(default=None, description="The tool's name as the model sees it")
    description: str | None = Field(default=None, description="What the model is told about the tool")

    def to_spec(self) -> dict[str, Any]:
        """As written in spec.tools: confirm only when false, name and description only when given."""
        out: dict[str, Any] = {"builtin": self.builtin, "knowledge_base": self.knowledge_base}
        if self.builtin == SAVE and not self.confirm:
            out["confirm"] = False
        if self.name:
            out["name"] = self.name
        if self.description:
            out["description"] = self.description
        return out


class ToolView(Answer):
    """A built-in tool as people see it (astra eos tools, GET …/tools)."""

    name: str = Field(description="The tool's name as the model sees it")
    builtin: str
    knowledge_base: str
    confirm: bool | None = Field(description="save_to_knowledge: ask the person before saving; null for a search")
    function: str = Field(description="What it runs on, e.g. (save_to_knowledge: journal, saves on its own)")
    approval: str | None = None
    description: str = Field(description="What the model is told about the tool")


class ToolListing(Answer):
    """A deployment's built-in tools, and who may search its bases through it."""

    deployment: str
    tools: list[ToolView]
    readable_by_callers: list[str] = Field(description="The bases anyone who may call the deployment can search through it")
    shared_with: list[str] = Field(description="Other workspaces whose keys can have the model search (and save) through it")
    warning: str | None


@dataclass(frozen=True)
class BuiltinTool:
    """A built-in tool as the model sees it: its name, and what it runs on."""

    name: str
    builtin: str
    knowledge_base: str
    confirm: bool
    description: str | None = None

    @property
    def saves_on_its_own(self) -> bool:
        return self.builtin == SAVE and not self.confirm

    @property
    def function(self) -> str:
        """The function column of `astra eos tools`: (save_to_knowledge: journal, saves on its own)."""
        extra = ", saves on its own" if self.saves_on_its_own else ""
        return f"({self.builtin}: {self.knowledge_base}{extra})"

    def view(self) -> ToolView:
        return ToolView(name=self.name, builtin=self.builtin, knowledge_base=self.knowledge_base,
                        confirm=self.confirm if self.builtin == SAVE else None, function=self.function, approval=None,
                        description=self.describe())

    def describe(self) -> str:
        if self.description:
            return self.description
        if self.builtin == SEARCH:
            return (
                f"Search the knowledge base '{self.knowledge_base}' for passages that answer a question. "
                "Use it whenever a question may need what this base knows. Answer from the passages and "
                "cite each one you use as [ref] with its document."
            )
        how = (
            "The note is saved at once."
            if self.saves_on_its_own
            else "The person sees it as a draft and decides whether to save it."
        )
        return (
            f"Save a note to the knowledge base '{self.knowledge_base}' when the person asks to save, keep "
            f"or remember something. {how}"
        )

    def schema(self) -> dict[str, Any]:
        """The OpenAI `tools` entry offered to the model."""
        if self.builtin == SEARCH:
            properties = {"query": {"type": "string", "description": "What to look for, in a few words or a question"}}
            required = ["query"]
        else:
            properties = {
                "title": {"type": "string", "description": "A short title for the note"},
                "text": {"type": "string", "description": "The note itself, in markdown"},
            }
            required = ["title", "text"]
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.describe(),
                "parameters": {"type": "object", "properties": properties, "required": required,
                               "additionalProperties": False},
            },
        }


def parse(raw: Any) -> list[ToolSpec]:
    """spec.tools as ToolSpecs, or 422 INVALID_TOOLS saying what is wrong."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise Invalid("spec.tools must be a list of tools", code="INVALID_TOOLS")
    specs = []
    for i, item in enumerate(raw):
        try:
            specs.append(ToolSpec.model_validate(item))
        except ValidationError as e:
            raise Invalid(
                f"spec.tools[{i}] is not valid: " + describe(e)
                + ' (a built-in tool is {"builtin": "search_knowledge" or "save_to_knowledge", "knowledge_base": "..."})',
                code="INVALID_TOOLS",
            ) from None
        spec = specs[-1]
        if spec.name is not None and not FUNCTION_NAME_RE.match(spec.name):
            raise Invalid(f"spec.tools[{i}].name {spec.name!r}: use letters, digits, '_' or '-' (at most 64)",
                          code="INVALID_TOOLS")
        if spec.description is not None and len(spec.description) > MAX_DESCRIPTION:
            raise Invalid(f"spec.tools[{i}].description is longer than {MAX_DESCRIPTION} characters", code="INVALID_TOOLS")
    return specs


def resolve(specs: list[ToolSpec]) -> list[BuiltinTool]:
    """Name every tool: given names first, then the first of each kind, then <prefix><base>."""
    taken = {s.name for s in specs if s.name}
    if len(taken) != len([s for s in specs if s.name]):
        raise Invalid("spec.tools: two tools have the same name: give each a different `name`", code="TOOL_NAME_TAKEN")
    tools = []
    for spec in specs:
        name = spec.name
        if name is None:
            name = spec.builtin if spec.builtin not in taken else PREFIX[spec.builtin] + spec.knowledge_base
            if name in taken:
                raise Invalid(
                    f"spec.tools: {spec.builtin} on {spec.knowledge_base!r} would be called {name!r}, which another "
                    "tool has: give it a `name`",
                    code="TOOL_NAME_TAKEN",
                )
            taken.add(name)
        tools.append(BuiltinTool(name, spec.builtin, spec.knowledge_base, spec.confirm, spec.description))
    return tools


def builtin_tools(raw: Any) -> list[BuiltinTool]:
    return resolve(parse(raw))


@dataclass(frozen=True)
class ToolGrant:
    """What a deployment's built-in tool lets anyone who may call the deployment do with its base.

    The tool is what grants it (the tools doc: "anyone who may call the deployment can have its model search the
    base", even without knowledge-bases:read; said again where tools are added, `readable_warning`): a search runs
    as a reader of the deployment's workspace, not as the caller; a save saves as the tool says (`confirm`).
    """

    tool: BuiltinTool
    workspace: str  # the deployment's, where the base is

    @property
    def knowledge_base(self) -> str:
        return self.tool.knowledge_base

    @property
    def reader(self) -> Actor | None:
        """Whom a search through the tool runs as; None: the tool does not search."""
        return Actor.of(self.workspace, "viewer") if self.tool.builtin == SEARCH else None

    @property
    def save(self) -> SaveMode | None:
        """How a save through the tool goes; None: the tool does not save."""
        if self.tool.builtin != SAVE:
            return None
        return "on_its_own" if self.tool.saves_on_its_own else "ask"


def offers(deployment: Deployment, actor: Actor) -> list[ToolGrant]:
    """What a deployment's built-in tools grant `actor`, its caller: nothing to one who may not call deployments,
    nor through an embedding deployment (which takes no tools)."""
    if deployment.spec.kind != "chat" or not actor.can(DEPLOYMENTS_CALL):
        return []
    return [ToolGrant(tool, deployment.workspace) for tool in builtin_tools(deployment.spec.tools)]


def validate(workspace: str, kind: str, raw: Any, base_exists: Callable[[str, str], bool]) -> list[dict[str, Any]]:
    """spec.tools checked for a deployment of `workspace`, returned as they are to be written."""
    specs = parse(raw)
    if specs and kind != "chat":
        raise Invalid("spec.tools: only a chat deployment takes tools", code="INVALID_TOOLS")
    seen = set()
    for spec in specs:
        key = (spec.builtin, spec.knowledge_base)
        if key in seen:
            raise Invalid(f"spec.tools: {spec.builtin} on {spec.knowledge_base!r} is given twice", code="INVALID_TOOLS")
        seen.add(key)
        if not base_exists(workspace, spec.knowledge_base):
            raise Invalid(
                f"spec.tools: no knowledge base named {spec.knowledge_base!r} in workspace {workspace!r} "
                "(the base must be of the deployment's own workspace; `astra metis bases` lists them)",
                code="TOOL_BASE_NOT_FOUND",
            )
    resolve(specs)
    return [s.to_spec() for s in specs]


def readable_warning(deployment: str, bases: list[str]) -> str | None:
    """What giving bases to a deployment means, said where tools are added."""
    if not bases:
        return None
    names = ", ".join(bases)
    return (
        f"Anyone who may call {deployment} (people of the workspace, API keys, workspaces it is shared with) can have "
        f"its model search {names} through it, even without permission to read {'it' if len(bases) == 1 else 'them'}."
    )


def tools_warning(deployment: str, raw: Any) -> str | None:
    """The readable-by-callers warning for spec.tools as stored (None without a search tool)."""
    searched = sorted({b for t in raw or [] if isinstance(t, dict) and t.get("builtin") == SEARCH
                       and isinstance(b := t.get("knowledge_base"), str)})
    return readable_warning(deployment, searched)


def spec_validator(find_base: Callable[[str, str], Any]) -> Callable[[str, Any], Any]:
    """A Deployments validator: spec.tools checked against the workspace's bases and normalised."""

    def check(workspace: str, spec: Any) -> Any:
        tools = validate(workspace, spec.kind, spec.tools, lambda w, b: find_base(w, b) is not None)
        return spec.model_copy(update={"tools": tools})

    return check


def listing(deployment: Deployment) -> ToolListing:
    """A deployment's built-in tools as people see them (astra eos tools, GET …/tools)."""
    tools = builtin_tools(deployment.spec.tools)
    searched = sorted({t.knowledge_base for t in tools if t.builtin == SEARCH})
    return ToolListing(deployment=deployment.name, tools=[t.view() for t in tools], readable_by_callers=searched,
                       shared_with=list(deployment.spec.shared_with), warning=readable_warning(deployment.name, searched))


def set_knowledge(actor: Actor, deployments: Deployments, name: str, base: str, *, search: bool, save: bool,
                  confirm: bool = True) -> Deployment:
    """Give a deployment a base's tools (search, save, how it saves), or none: the base's tools removed.

    Other bases' tools are kept as they are; a tool the base keeps keeps its name and description.
    """
    from ..auth.roles import DEPLOYMENTS_UPDATE

    actor.require(DEPLOYMENTS_UPDATE)
    dep = deployments.get(actor, name)
    current = parse(dep.spec.tools)
    wanted = {SEARCH: search, SAVE: save}
    out: list[ToolSpec] = []
    kept = set()
    for spec in current:
        if spec.knowledge_base != base:
            out.append(spec)
        elif wanted[spec.builtin] and spec.builtin not in kept:
            kept.add(spec.builtin)
            out.append(spec.model_copy(update={"confirm": confirm}) if spec.builtin == SAVE else spec)
    for builtin in (SEARCH, SAVE):
        if wanted[builtin] and builtin not in kept:
            out.append(ToolSpec(builtin=builtin, knowledge_base=base, confirm=confirm if builtin == SAVE else True))
    changed = dep.spec.model_copy(update={"tools": [s.to_spec() for s in out]})
    return deployments.put(actor, actor.workspace, name, changed)
