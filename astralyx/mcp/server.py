"""The MCP server: the tools of tools.py on the official `mcp` SDK, for stdio (`astra mcp`) and HTTP (/mcp).

A thin shell. For each call it finds the caller (stdio: the data directory's owner; HTTP: the key's
actor, set by http.py), checks the arguments against the tool's schema, runs the domain in a thread,
asks the person through MCP elicitation where a tool needs a choice, and answers a CallToolResult:
the answer as JSON text and structured content, `isError` with {"error": {"code", "message"}} for
our stable codes, and the call's signed receipt in `_meta["astralyx/receipt"]`.

Elicitation follows the negotiated protocol: up to 2025-11-25 an `elicitation/create` request in the
middle of the call; from 2026-07-28 an `InputRequiredResult` the client answers by calling again with
`input_responses` (what the call needs to go on rides `request_state`, sealed by this server).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from .. import __version__
from ..auth.actor import Actor
from ..eos import knowledge
from ..errors import AstralyxError, Invalid, describe, error_body
from ..metis.saves import check_note
from ..metis.search import MAX_RESULTS
from . import tools as mcp_tools
from .tools import Caller, McpTools

if TYPE_CHECKING:
    from ..core import Astralyx

log = logging.getLogger("astralyx.mcp")

RECEIPT_META = "astralyx/receipt"
# Set by http.py on each /mcp request: the key's actor and the bases it asked for (?base=…).
ACTOR_SCOPE_KEY = "astralyx.mcp.actor"
BASES_SCOPE_KEY = "astralyx.mcp.bases"
PROGRESS_EVERY = 2.0  # seconds between progress notifications while the extractor reads
MAX_SHOWN = 4000  # characters of a note shown in the save question

INSTRUCTIONS = (
    "Astralyx holds the person's knowledge bases and memories. Search before answering questions they may "
    "answer (search_knowledge; cite passages as [ref] with their document), recall what is known about "
    "someone or something (recall), and offer to remember durable facts from the conversation (remember). "
    "Nothing is saved or kept without the person's choice unless a base is configured to save on its own."
)


# -- arguments: each field named and described in the tool's JSON schema ------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


def base_field(description: str) -> Any:
    """`base`: which base (or memory) a call is about, the one name in every tool. `memory`, its name in
    remember, keep_facts and recall before, is still taken for clients written then (not in the schema)."""
    return Field(default=None, validation_alias=AliasChoices("base", "memory"), description=description)


class SearchArgs(_Args):
    query: str = Field(description="What to look for, in a few words or a question")
    base: str | None = Field(default=None, description="The knowledge base to search; may be left out when there is one")
    max_results: int = Field(default=MAX_RESULTS, ge=1, le=MAX_RESULTS, description="At most this many passages (1 to 8)")
    as_of: str | None = Field(default=None, description="Search as things stood on this date (2026-09-30): in a "
                                                        "memory, the facts that held then")


class SaveArgs(_Args):
    base: str | None = Field(default=None, description="The knowledge base to save to; may be left out when there is one")
    title: str = Field(description="A short title for the note")
    text: str = Field(description="The note itself, in markdown")


class Message(_Args):
    model_config = ConfigDict(extra="allow")
    role: str = Field(default="user", description="user or assistant (other roles are not read)")
    content: str = Field(description="What was said")
    date: str | None = Field(default=None, description="When it was said (2026-10-12 or 2026-10-12T09:30:00Z)")


class RememberArgs(_Args):
    base: str | None = base_field("The memory to keep facts in; may be left out when there is one")
    text: str | None = Field(default=None, description="The conversation or text to read for facts (or give messages)")
    messages: list[Message] | None = Field(default=None, description="The conversation as messages (or give text)")
    source: str | None = Field(default=None, description="Where the facts come from, kept with each (e.g. 'chat: standup')")
    said_at: str | None = Field(default=None, description="When it was said, for messages without a date (2026-10-12)")


class FactArg(_Args):
    # remember's proposals come as they are: what they say beside the fact (status, replaces, …) is not kept.
    model_config = ConfigDict(extra="ignore")
    subject: str = Field(description="Who or what the fact is about (Ana, the launch)")
    attribute: str = Field(description="What about it (role, employer, deadline, preferred language)")
    fact: str = Field(description="The fact in one sentence (Ana works in research.)")
    said_at: str | None = Field(default=None, description="When it was said (2026-10-12); a newer fact replaces an older "
                                                          "one of the same subject and attribute")
    source: str | None = Field(default=None, description="Where it comes from (a conversation, a document)")


class KeepArgs(_Args):
    base: str | None = base_field("The memory to keep them in; may be left out when there is one")
    facts: list[FactArg] = Field(min_length=1, description="The facts the person chose to keep (remember's proposals "
                                                           "may be passed as they are)")


class RecallArgs(_Args):
    base: str | None = base_field("The memory to read; may be left out when there is one")
    subject: str | None = Field(default=None, description="Only facts about this subject")
    attribute: str | None = Field(default=None, description="Only facts of this attribute")
    as_of: str | None = Field(default=None, description="What held on this date (2026-09-30) instead of now")
    history: bool = Field(default=False, description="Also the older facts each current one replaced")


def input_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema as every client can read it: nested models inlined (no $ref / $defs) and
    optional fields as plain types (some clients refuse anyOf with null)."""
    schema = model.model_json_schema()
    defs = schema.pop("$defs", {})

    def flatten(node: Any) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                node = {**defs[ref.removeprefix("#/$defs/")], **{k: v for k, v in node.items() if k != "$ref"}}
            options = node.get("anyOf")
            if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
                other = next(o for o in options if o != {"type": "null"})
                node = {**{k: v for k, v in node.items() if k != "anyOf"}, **other}
                if node.get("default") is None:
                    node.pop("default", None)
            return {k: flatten(v) for k, v in node.items()}
        if isinstance(node, list):
            return [flatten(v) for v in node]
        return node

    schema = flatten(schema)
    schema.pop("title", None)
    return schema


@dataclass(frozen=True)
class ToolDef:
    name: str
    title: str
    args: type[_Args]
    annotations: types.ToolAnnotations
    describe: Callable[[list[mcp_tools.OfferedBase]], str]


def _names(offers: list[mcp_tools.OfferedBase], pick: Callable[[mcp_tools.OfferedBase], bool]) -> str:
    names = [f"{o.name} ({o.base.kind})" for o in offers if pick(o)]
    return ", ".join(names) if names else "none offered to this key"


TOOLS: dict[str, ToolDef] = {t.name: t for t in [
    ToolDef(
        "search_knowledge", "Search a knowledge base", SearchArgs,
        types.ToolAnnotations(title="Search a knowledge base", read_only_hint=True, destructive_hint=False,
                              idempotent_hint=True, open_world_hint=False),
        lambda offers: "Search a knowledge base (documents, notes, or a memory's facts) for passages that answer a "
                       "question. Use it whenever a question may need what a base knows. Answer from the passages "
                       "and cite each one you use as [ref] with its document. Bases: "
                       + _names(offers, lambda o: o.reader is not None) + ".",
    ),
    ToolDef(
        "save_to_knowledge", "Save a note to a knowledge base", SaveArgs,
        types.ToolAnnotations(title="Save a note to a knowledge base", read_only_hint=False, destructive_hint=False,
                              idempotent_hint=False, open_world_hint=False),
        lambda offers: "Save a note to a knowledge base when the person asks to save, keep or note something. The "
                       "person is asked first (they see the title and text and accept or decline), or it becomes a "
                       "draft they save or discard in the console; only a base configured so saves on its own. "
                       "Bases: " + _names(offers, lambda o: o.save is not None) + ".",
    ),
    ToolDef(
        "remember", "Remember facts from a conversation", RememberArgs,
        types.ToolAnnotations(title="Remember facts from a conversation", read_only_hint=False, destructive_hint=False,
                              idempotent_hint=False, open_world_hint=False),
        lambda offers: "Read a conversation or text for durable facts (who does what, dates, preferences) with the "
                       "memory's extractor model, and let the person choose which to keep. Nothing is kept without "
                       "their choice; what looks like a secret is left out. Slow on a CPU: it reports progress. "
                       "Memories: " + _names(offers, lambda o: o.base.kind == "memory") + ".",
    ),
    ToolDef(
        "keep_facts", "Keep facts in a memory", KeepArgs,
        types.ToolAnnotations(title="Keep facts in a memory", read_only_hint=False, destructive_hint=False,
                              idempotent_hint=True, open_world_hint=False),
        lambda offers: "Keep facts the person chose in a memory. A newer fact on the same subject and attribute "
                       "replaces the current one, which stays in the history; the same fact again changes nothing. "
                       "Secrets (passwords, keys, card numbers) are refused (FACT_SENSITIVE). Memories: "
                       + _names(offers, lambda o: o.base.kind == "memory") + ".",
    ),
    ToolDef(
        "recall", "Recall what a memory knows", RecallArgs,
        types.ToolAnnotations(title="Recall what a memory knows", read_only_hint=True, destructive_hint=False,
                              idempotent_hint=True, open_world_hint=False),
        lambda offers: "What a memory knows now (or held on a date, as_of), grouped by subject, each fact with when "
                       "it was said and its source; history adds what each replaced. Memories: "
                       + _names(offers, lambda o: o.base.kind == "memory") + ".",
    ),
]}


# -- sealed request state (2026-07-28 elicitation) ----------------------------------


class Sealer:
    """request_state the client echoes back: ours, unchanged (HMAC under a key derived from the receipts key)."""

    def __init__(self, core: Astralyx) -> None:
        self.core = core

    @property
    def _key(self) -> bytes:
        return hashlib.sha256(b"astralyx mcp request_state\0" + bytes(self.core.receipts.signing_key)).digest()

    def seal(self, value: dict[str, Any]) -> str:
        body = base64.urlsafe_b64encode(json.dumps(value, separators=(",", ":")).encode()).decode()
        return body + "." + hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()

    def open(self, state: str) -> dict[str, Any]:
        body, _, mac = state.rpartition(".")
        if not body or not hmac.compare_digest(mac, hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()):
            raise Invalid("request_state is not one this server gave: call the tool again from the start",
                          code="INVALID_STATE")
        return json.loads(base64.urlsafe_b64decode(body))


class NeedInput(Exception):
    """Raised inside a tool on 2026-07-28: answer the call with this InputRequiredResult."""

    def __init__(self, result: types.InputRequiredResult) -> None:
        self.result = result


@dataclass
class Call:
    """One tools/call on its way: the caller, the request context and the era's way of asking."""

    server: AstralyxMcp
    ctx: Any
    params: types.CallToolRequestParams
    caller: Caller

    @property
    def modern(self) -> bool:
        return self.ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def can_elicit(self) -> bool:
        caps = self.ctx.session.client_capabilities
        el = getattr(caps, "elicitation", None) if caps is not None else None
        # An empty elicitation capability means form mode (the 2025-06-18 shape).
        return el is not None and (el.form is not None or el.url is None)

    def state(self) -> dict[str, Any] | None:
        if not self.params.request_state:
            return None
        state = self.server.sealer.open(self.params.request_state)
        if state.get("tool") != self.params.name:
            raise Invalid(f"This request_state belongs to {state.get('tool')!r}, not {self.params.name!r}: call the tool "
                          "again from the start", code="INVALID_STATE")
        return state

    async def ask(self, key: str, message: str, schema: dict[str, Any], state: dict[str, Any]) -> types.ElicitResult:
        """The person's answer to a form; on 2026-07-28 the first round raises NeedInput."""
        if self.modern:
            answer = (self.params.input_responses or {}).get(key)
            if isinstance(answer, types.ElicitResult):
                return answer
            request = types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=schema))
            sealed = self.server.sealer.seal({**state, "tool": self.params.name})
            raise NeedInput(types.InputRequiredResult(input_requests={key: request}, request_state=sealed))
        return await self.ctx.session.elicit_form(message, schema, related_request_id=self.ctx.request_id)

    async def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))

    async def progress(self, fn: Callable[[], Any], message: str) -> Any:
        """Run fn in a thread, telling the client it is still at work every few seconds (clients that reset
        their time-out on progress then wait for a slow CPU model instead of cutting the call off)."""
        done = anyio.Event()
        every = self.server.progress_every

        async def beat() -> None:
            n = 0
            while not done.is_set():
                try:
                    await self.ctx.session.report_progress(n, None, f"{message} ({n * every:.0f} s)")
                except Exception:  # a client that went away: the work goes on, its answer is dropped
                    log.debug("progress notification not sent", exc_info=True)
                n += 1
                with anyio.move_on_after(every):
                    await done.wait()

        outcome: list[Any] = []

        async def work() -> None:
            try:
                outcome.append(await anyio.to_thread.run_sync(fn))
            except Exception as e:  # raised below, as itself (not inside a task group's ExceptionGroup)
                outcome.append(e)
            finally:
                done.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(beat)
            tg.start_soon(work)
        if isinstance(outcome[0], Exception):
            raise outcome[0]
        return outcome[0]


class AstralyxMcp:
    """The MCP server of one Astralyx instance. `actor` serves stdio; over HTTP each request brings its own."""

    def __init__(self, core: Astralyx, *, actor: Actor | None = None, bases: list[str] | None = None,
                 progress_every: float = PROGRESS_EVERY) -> None:
        self.core = core
        self.tools = McpTools(core)
        self.actor = actor
        self.bases = frozenset(bases) if bases else None
        self.progress_every = progress_every
        self.sealer = Sealer(core)
        self.session = uuid.uuid4().hex[:12]  # names a stdio connection (one per process) on drafts and receipts
        self.server: Server[Any] = Server(
            "astralyx",
            version=__version__,
            title="Astralyx",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
        )
        self.handlers: dict[str, Callable[[Call, Any], Awaitable[dict[str, Any]]]] = {
            "search_knowledge": self._search,
            "save_to_knowledge": self._save,
            "remember": self._remember,
            "keep_facts": self._keep,
            "recall": self._recall,
        }

    # -- who is calling -----------------------------------------------------------
    def caller(self, ctx: Any) -> Caller:
        request = getattr(ctx, "request", None)
        scope = getattr(request, "scope", None) or {}
        actor = scope.get(ACTOR_SCOPE_KEY) or self.actor
        if actor is None:  # pragma: no cover - http.py always sets it
            raise AstralyxError("No caller: this MCP server needs a key", code="UNAUTHORIZED")
        bases = self.bases
        asked = scope.get(BASES_SCOPE_KEY)
        if asked:
            bases = frozenset(asked) if bases is None else bases & frozenset(asked)
        params = ctx.session.client_params
        info = getattr(params, "client_info", None) if params is not None else None
        client = f"mcp:{info.name}" if info is not None and info.name else "mcp"
        headers = getattr(request, "headers", None)
        session = (headers.get("mcp-session-id") if headers is not None else None) or self.session
        return Caller(actor, bases, client, f"MCP session {session}", over_http=bool(asked))

    # -- tools ------------------------------------------------------------------------
    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        caller = self.caller(ctx)
        offers = await anyio.to_thread.run_sync(lambda: self.tools.offers(caller))
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, title=t.title, description=t.describe(offers), input_schema=input_schema(t.args),
                       annotations=t.annotations)
            for t in TOOLS.values()
        ])

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        caller = self.caller(ctx)
        tool = TOOLS.get(params.name)
        arguments = params.arguments or {}
        if tool is None:
            outcome: dict[str, Any] = error_body("UNKNOWN_TOOL", f"There is no tool named {params.name!r}: the tools are "
                                                                 + ", ".join(TOOLS))
        else:
            try:
                args = tool.args.model_validate(arguments)
                outcome = await self.handlers[tool.name](Call(self, ctx, params, caller), args)
            except NeedInput as need:
                return need.result
            except ValidationError as e:
                outcome = error_body("INVALID_ARGUMENTS", f"The arguments of {tool.name} are not valid: {describe(e)}")
            except AstralyxError as e:
                outcome = e.to_dict()
            except Exception as e:  # a failure of ours: the model is told, the log says what
                log.exception("MCP tool %s failed", params.name)
                outcome = error_body("INTERNAL", f"The tool failed on the server ({type(e).__name__}); its log says what")
        base = outcome.get("knowledge_base") if isinstance(outcome.get("knowledge_base"), str) else (
            arguments.get("base") or arguments.get("memory"))
        receipt = await anyio.to_thread.run_sync(lambda: self.core.receipts.issue(
            workspace=caller.actor.workspace, deployment="mcp", caller=caller.actor.key_id or "local",
            tool=params.name, function=params.name, knowledge_base=base if isinstance(base, str) else None,
            arguments=arguments, result=outcome, conversation=caller.conversation,
        ))
        text = json.dumps(outcome, ensure_ascii=False, indent=1)
        return types.CallToolResult(
            content=[types.TextContent(text=text)], structured_content=outcome, is_error="error" in outcome,
            _meta={RECEIPT_META: receipt.model_dump(mode="json")},
        )

    async def _search(self, call: Call, args: SearchArgs) -> dict[str, Any]:
        return await call.run(self.tools.search, call.caller, args.query, args.base, args.max_results, args.as_of)

    async def _save(self, call: Call, args: SaveArgs) -> dict[str, Any]:
        tools, core, caller = self.tools, self.core, call.caller
        offer = await call.run(tools.offer, caller, args.base, "save")
        title, text = check_note(args.title, args.text)
        if offer.save == "on_its_own":
            return (await call.run(tools.save, caller, offer, title, text, confirm=False)).result
        state = call.state()
        if state is not None:  # 2026-07-28, the second round: the draft made in the first
            draft = await call.run(core.saves.draft, caller.actor, offer.name, state["draft"])
        else:
            done = await call.run(tools.save, caller, offer, title, text, confirm=True)
            if done.draft is None:
                return done.result
            draft = done.draft
        if not call.can_elicit:
            return self._draft_answer(call, draft, "")
        shown = draft.text if len(draft.text) <= MAX_SHOWN else draft.text[:MAX_SHOWN] + " …"
        schema = {
            "type": "object",
            "properties": {
                "title": {"type": "string", "title": "Title", "default": draft.title, "maxLength": 200},
                "text": {"type": "string", "title": "Text", "default": draft.text},
            },
            "required": ["title", "text"],
        }
        try:
            answer = await call.ask("save", f"Save this note to {offer.name}?\n\n{draft.title}\n\n{shown}", schema,
                                    {"draft": draft.id})
        except NeedInput:
            raise
        except Exception as e:  # the client could not ask (no back channel, time-out): the draft waits
            log.info("elicitation for draft %s failed: %s", draft.id, e)
            return self._draft_answer(call, draft, "The person could not be asked here. ")
        if answer.action == "accept":
            content = answer.content or {}
            _, save = await call.run(core.saves.save_draft, caller.actor, offer.name, draft.id,
                                     _text(content.get("title")), _text(content.get("text")))
            return {**knowledge.saved_answer(save), "asked_first": True,
                    "note": f"The person chose to save it: the note is saved in {offer.name}. They can undo it "
                            "under Saved by models."}
        if answer.action == "decline":
            await call.run(core.saves.discard_draft, caller.actor, offer.name, draft.id)
            return {"status": "declined", "knowledge_base": offer.name, "draft": {"id": draft.id, "status": "discarded"},
                    "note": "The person chose not to save it: nothing was saved. Do not save it again unless they ask."}
        return self._draft_answer(call, draft, "The person closed the question without choosing. ")

    def _draft_answer(self, call: Call, draft: Any, why: str) -> dict[str, Any]:
        page = f"/metis/knowledge-bases/{draft.knowledge_base}#drafts"
        request: Any = getattr(call.ctx, "request", None)
        console = str(request.base_url).rstrip("/") + page if getattr(request, "base_url", None) else page
        answer = knowledge.draft_answer(draft)
        answer["where"] = {"console": console, **{k: draft.to_dict()[k] for k in ("save", "discard")}}
        answer["note"] = (why + "Nothing is saved yet: the note waits as a draft. Tell the person to save or discard it "
                          f"in the console, on the base's page under Drafts waiting ({console}).")
        return answer

    async def _remember(self, call: Call, args: RememberArgs) -> dict[str, Any]:
        tools, caller = self.tools, call.caller
        state = call.state()
        if state is not None:  # 2026-07-28, the second round: the proposals read in the first
            name, found = state["memory"], state["found"]
        else:
            if args.messages:
                messages = [m.model_dump(exclude_none=True) for m in args.messages]
            elif args.text and args.text.strip():
                messages = [{"role": "user", "content": args.text}]
            else:
                raise Invalid("Give the conversation to read: text, or messages [{role, content}]",
                              code="INVALID_ARGUMENTS")
            name = await call.run(tools.memory, caller, args.base, mcp_tools.WRITE_CONTENT)
            source = args.source or caller.client
            found = await call.progress(
                lambda: tools.extract(caller, name, messages, source=source, said_at=args.said_at),
                f"reading the conversation for facts with {name}'s extractor",
            )
        proposals = found["proposals"]
        secrets = found.get("left_out_secrets") or 0
        said = (f" {secrets} that looked like secrets (a password, a key or token, a card number) "
                "were left out and will not be kept." if secrets else "")
        base = {"knowledge_base": name, "source": found.get("source"), "left_out_secrets": secrets}
        if not proposals:
            return {**base, "status": "nothing_found", "proposals": [], "kept": 0,
                    "note": "No fact worth remembering was found; nothing was kept." + said}
        if not call.can_elicit:
            return {**base, "status": "proposed", "proposals": proposals, "kept": 0,
                    "note": "Nothing is kept yet. Show the person these facts (what each would replace, and which are "
                            "known already) and call keep_facts with the ones they choose, as they are." + said}
        schema: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        lines = []
        for i, p in enumerate(proposals, 1):
            label = f"{p['subject']} — {p['attribute']}: {p['fact']}"
            extra = (f"replaces: {p['replaces']['fact']}" if p.get("replaces") else
                     "known already" if p.get("known") else
                     f"older than what holds now: {p['current']['fact']}" if p.get("current") else "new")
            schema["properties"][f"fact_{i}"] = {"type": "boolean", "title": label, "description": extra,
                                                 "default": not p.get("known")}
            lines.append(f"{i}. {label} ({extra}, said {str(p.get('said_at'))[:10]})")
        message = f"Remember these in {name}? Untick what should not be kept.\n\n" + "\n".join(lines) + (
            f"\n\n{secrets} left out: they looked like secrets." if secrets else "")
        answer = await call.ask("remember", message, schema, {"memory": name, "found": found})
        if answer.action != "accept":
            return {**base, "status": "declined", "kept": 0, "proposals": proposals,
                    "note": "The person chose not to keep these: nothing was kept." + said}
        content = answer.content or {}
        chosen = [p for i, p in enumerate(proposals, 1) if content.get(f"fact_{i}") is True]
        if not chosen:
            return {**base, "status": "none_chosen", "kept": 0,
                    "note": "The person ticked none of the facts: nothing was kept." + said}
        facts = [{k: p[k] for k in ("subject", "attribute", "fact", "source", "said_at") if p.get(k)} for p in chosen]
        kept = await call.run(tools.keep, caller, name, facts)
        return {**base, **kept, "status": "kept", "chosen": len(chosen), "of": len(proposals),
                "note": f"Kept {kept['kept']} fact(s) the person chose in {name}"
                        + (f"; {kept['replaced']} replaced an older one." if kept["replaced"] else ".") + said}

    async def _keep(self, call: Call, args: KeepArgs) -> dict[str, Any]:
        source = call.caller.client
        facts = [{**f.model_dump(exclude_none=True), "source": f.source or source} for f in args.facts]
        return await call.run(self.tools.keep, call.caller, args.base, facts)

    async def _recall(self, call: Call, args: RecallArgs) -> dict[str, Any]:
        return await call.run(self.tools.recall, call.caller, args.base, args.subject, args.attribute, args.as_of,
                              args.history)

    # -- resources: bases, and their notes by path ----------------------------------------
    async def _list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        caller = self.caller(ctx)
        offers = await anyio.to_thread.run_sync(lambda: self.tools.offers(caller))
        return types.ListResourcesResult(resources=[
            types.Resource(uri=f"astralyx://bases/{o.name}", name=o.name, title=f"{o.name} ({o.base.kind})",
                           description=f"The knowledge base {o.name}: its kind and notes", mime_type="application/json")
            for o in offers if caller.actor.can(mcp_tools.READ)
        ])

    async def _list_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template="astralyx://bases/{base}/{path}", name="note",
                                   title="A note of a knowledge base",
                                   description="A note by its path in the base: notes/<path>.md or saved/<path>.md",
                                   mime_type="text/markdown"),
        ])

    async def _read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        caller = self.caller(ctx)
        uri = str(params.uri)
        prefix = "astralyx://bases/"
        if not uri.startswith(prefix):
            raise _resource_error(f"{uri} is not an Astralyx resource (astralyx://bases/<base>[/<path>])")
        name, _, path = uri[len(prefix):].partition("/")
        try:
            if not path:
                text = await anyio.to_thread.run_sync(lambda: json.dumps(self._base_resource(caller, name)))
                return types.ReadResourceResult(contents=[
                    types.TextResourceContents(uri=uri, mime_type="application/json", text=text)])
            note = await anyio.to_thread.run_sync(lambda: self.tools.note(caller, name, path))
        except AstralyxError as e:
            raise _resource_error(f"{e.message} ({e.code})") from None
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, mime_type="text/markdown", text=note.content)])

    def _base_resource(self, caller: Caller, name: str) -> dict[str, Any]:
        self.tools.check_offered(caller, name)
        base = self.core.bases.get(caller.actor, name)
        notes = [f"{n.area}/{n.path}" for area in ("notes", "saved") for n in self.core.notes.list(caller.actor, name, area)]
        return {"name": base.name, "kind": base.kind, "save": mcp_tools.base_save_mode(base),
                "notes": [{"path": p, "uri": f"astralyx://bases/{name}/{p}"} for p in notes]}


def _resource_error(message: str) -> Exception:
    from mcp.shared.exceptions import MCPError

    return MCPError(types.INVALID_PARAMS, message)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
