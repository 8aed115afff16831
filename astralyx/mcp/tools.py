"""The MCP tools as plain Python over the domain: which bases a caller is offered, and what each tool does.

No SDK here (server.py is the shell). What a key may see and do is the API's rule, said once:

- search_knowledge: a base the key may read (knowledge-bases:read), or one a chat deployment the key
  may call searches with its built-in tool, searched then as that tool grants it (eos/tools.py, `offers`:
  the rule the chat gateway follows too);
- save_to_knowledge: a base the key may write to (knowledge-bases:write-content), asking first unless
  the base's spec says `"mcp": {"save": "on_its_own"}`; or through a deployment's save tool, as that
  tool saves (its `confirm`);
- remember, keep_facts, recall: the memory's own rules (write-content to keep, read to recall).

`astra mcp --base a --base b` (or /mcp?base=a&base=b) offers only those bases, whatever the key may do.
Every tool names the base it works on `base` (remember, keep_facts and recall also take `memory`, their old name).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlencode

from ..auth.actor import Actor
from ..auth.roles import DEPLOYMENTS_READ, READ, WRITE_CONTENT
from ..eos import knowledge
from ..eos import tools as tool_specs
from ..eos.tools import SaveMode
from ..errors import Forbidden, Invalid, NotFound
from ..metis.bases import KnowledgeBase
from ..metis.memory.facts import FactIn
from ..metis.search import MAX_RESULTS

if TYPE_CHECKING:
    from ..core import Astralyx


@dataclass(frozen=True)
class Caller:
    """Who calls through MCP, and what the server was told to offer."""

    actor: Actor
    bases: frozenset[str] | None = None  # --base: only these bases
    client: str = "mcp"  # who saves: written as `model:` in a saved note's front matter
    conversation: str | None = None  # the MCP session, named on drafts, saves and receipts
    over_http: bool = False  # limited by /mcp?base=… (the fix is said in the address's terms), not --base


@dataclass(frozen=True)
class OfferedBase:
    """One base as offered to a caller: whether it may be searched (and as whom) and how it saves."""

    base: KnowledgeBase
    reader: Actor | None = None  # None: not searchable by this caller
    save: SaveMode | None = None  # None: this caller may not save to it

    @property
    def name(self) -> str:
        return self.base.name

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.base.kind, "search": self.reader is not None, "save": self.save}


def base_save_mode(base: KnowledgeBase) -> SaveMode:
    """How an MCP client with write permission saves to the base: ask first unless the base says otherwise."""
    return base.spec.mcp.save if base.spec.mcp is not None else "ask"


class McpTools:
    def __init__(self, core: Astralyx) -> None:
        self.core = core

    # -- what is offered -----------------------------------------------------
    def offers(self, caller: Caller) -> list[OfferedBase]:
        actor, core = caller.actor, self.core
        found: dict[str, OfferedBase] = {}
        if actor.can(READ):
            for base in core.bases.list(actor):
                found[base.name] = OfferedBase(base, actor, base_save_mode(base) if actor.can(WRITE_CONTENT) else None)
        if actor.can(DEPLOYMENTS_READ):
            for dep in core.deployments.list(actor):
                for grant in tool_specs.offers(dep, actor):  # what its tools let a caller do, as the gateway does
                    given = core.bases.find(dep.workspace, grant.knowledge_base)
                    if given is None:
                        continue
                    offer = found.get(given.name) or OfferedBase(given)
                    if grant.reader is not None and offer.reader is None:
                        offer = replace(offer, reader=grant.reader)
                    elif grant.save is not None and not actor.can(WRITE_CONTENT):
                        # Two deployments that save differently: the careful one wins.
                        offer = replace(offer, save="ask" if "ask" in (offer.save, grant.save) else grant.save)
                    found[given.name] = offer
        return [found[n] for n in sorted(found) if caller.bases is None or n in caller.bases]

    def offer(self, caller: Caller, name: str | None, need: Literal["search", "save"]) -> OfferedBase:
        """The base a call is about, or the error that says why not (and what would do)."""
        offers = self.offers(caller)
        able = [o for o in offers if (o.reader if need == "search" else o.save) is not None]
        permission = READ if need == "search" else WRITE_CONTENT
        if not name:
            if len(able) == 1:
                return able[0]
            if not able:
                raise self._nothing(caller, permission, need)
            raise Invalid(f"Say which knowledge base: base is one of {', '.join(o.name for o in able)}",
                          code="BASE_REQUIRED", details={"bases": [o.name for o in able]})
        self.check_offered(caller, name)
        for offer in able:
            if offer.name == name:
                return offer
        if self.core.bases.find(caller.actor.workspace, name) is None:
            hint = f": the bases here are {', '.join(o.name for o in offers)}" if offers else ""
            raise NotFound(f"Knowledge base {name!r} not found in workspace {caller.actor.workspace!r}{hint}",
                           code="BASE_NOT_FOUND")
        raise self._denied(caller, permission, f" (and no deployment you may call {need}s {name!r} with its tool)")

    def check_offered(self, caller: Caller, name: str) -> None:
        if caller.bases is not None and name not in caller.bases:
            offered = sorted(caller.bases)
            if caller.over_http:
                address = "/mcp?" + urlencode([("base", b) for b in [*offered, name]])
                how = (f"its address asks for ?base={'&base='.join(offered)}: connect to {address} to offer it too, "
                       f"or, with `astra mcp` relaying to a server, add --base {name}")
            else:
                how = f"it was started with --base; start it with --base {name} to offer it too"
            raise NotFound(f"This MCP server offers only {', '.join(offered)}, not {name!r} ({how})", code="BASE_NOT_OFFERED")

    def _nothing(self, caller: Caller, permission: str, need: str) -> Exception:
        if not caller.actor.can(permission):
            return self._denied(caller, permission, f" (and no deployment you may call {need}s a base with its tool)")
        where = f" among {', '.join(sorted(caller.bases))}" if caller.bases is not None else ""
        return NotFound(f"There is no knowledge base to {need}{where} in workspace {caller.actor.workspace!r}: "
                        "create one (astra metis create NAME)", code="BASE_NOT_FOUND")

    @staticmethod
    def _denied(caller: Caller, permission: str, why: str = "") -> Forbidden:
        actor = caller.actor
        return Forbidden(
            f"This needs the permission {permission}, which the role {actor.role!r} does not have in workspace "
            f"{actor.workspace!r}{why}: ask an admin for a key with it",
            code="PERMISSION_DENIED", details={"permission": permission},
        )

    # -- knowledge -------------------------------------------------------------
    def search(self, caller: Caller, query: str, base: str | None = None, max_results: int = MAX_RESULTS,
               as_of: str | None = None) -> dict[str, Any]:
        offer = self.offer(caller, base, "search")
        assert offer.reader is not None
        return knowledge.search(self.core.search, offer.reader, offer.name, query, max_results=max_results, as_of=as_of)

    def save(self, caller: Caller, offer: OfferedBase, title: str, text: str, *, confirm: bool) -> knowledge.SaveOutcome:
        return knowledge.save(self.core.saves, offer.base, by=caller.client, conversation=caller.conversation,
                              title=title, text=text, confirm=confirm, maker=caller.actor.key_id)

    # -- memory ----------------------------------------------------------------
    def memory(self, caller: Caller, name: str | None, permission: str) -> str:
        """The memory a call is about (the only one offered when not named)."""
        caller.actor.require(permission)
        if name:
            self.check_offered(caller, name)
            self.core.memory.base(caller.actor, name, permission)
            return name
        memories = [o.name for o in self.offers(caller) if o.base.kind == "memory"]
        if len(memories) == 1:
            return memories[0]
        if not memories:
            raise NotFound(f"There is no memory in workspace {caller.actor.workspace!r}: create one "
                           "(astra metis create NAME --kind memory)", code="NO_MEMORY")
        raise Invalid(f"Say which memory: base is one of {', '.join(memories)}", code="BASE_REQUIRED",
                      details={"bases": memories})

    def extract(self, caller: Caller, memory: str | None, messages: list[dict], *, source: str | None,
                said_at: str | None) -> dict[str, Any]:
        name = self.memory(caller, memory, WRITE_CONTENT)
        return self.core.extractor.extract(caller.actor, name, messages, source=source, said_at=said_at).model_dump()

    def keep(self, caller: Caller, memory: str | None, facts: list[FactIn | dict]) -> dict[str, Any]:
        name = self.memory(caller, memory, WRITE_CONTENT)
        return self.core.memory.keep(caller.actor, name, facts).model_dump()

    def recall(self, caller: Caller, memory: str | None = None, subject: str | None = None,
               attribute: str | None = None, as_of: str | None = None, history: bool = False) -> dict[str, Any]:
        name = self.memory(caller, memory, READ)
        answer = self.core.memory.list(caller.actor, name, history=history, as_of=as_of, subject=subject,
                                       attribute=attribute).model_dump()
        if not answer["subjects"]:
            answer["note"] = ("Nothing is known about this in the memory" + (f" as of {as_of}" if as_of else "")
                              + ": say so, and do not make an answer up.")
        return answer

    # -- resources ---------------------------------------------------------------
    def note(self, caller: Caller, base: str, path: str) -> Any:
        """A note of a base by its path inside the base (notes/…, saved/…), for a reader."""
        self.check_offered(caller, base)
        area, _, rest = path.partition("/")
        if area not in ("notes", "saved") or not rest:
            raise NotFound(f"{path!r} is not a note's path: notes/<path>.md or saved/<path>.md", code="NOTE_NOT_FOUND")
        return self.core.notes.read(caller.actor, base, area, rest)
