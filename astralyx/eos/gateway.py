"""The chat gateway: POST /v1/chat/completions for a chat deployment, with its built-in tools.

The gateway offers the model the deployment's built-in tools (search_knowledge, save_to_knowledge)
next to the client's own, calls the model, runs every built-in call itself (a signed receipt each),
feeds the results back and loops until the model answers, at most MAX_ROUNDS rounds. A call of a
client tool goes back to the client as usual (finish_reason "tool_calls"); the built-in calls run
in that same turn are kept and put back into the conversation when the client answers, so the
model still sees them. Malformed arguments and unknown names are answered to the model, which
can try again. What the client should show (drafts, saves, receipts) comes in the `astralyx`
field of the response, or of the last chunk when streaming.

Where the deployment's context is known (an embedded model's window, an upstream's runtime.context),
the request is sized to it: a conversation that leaves no room to answer is 413 CONVERSATION_TOO_LONG
before the model is called, and each search's passages are fitted into the room the conversation
leaves (fewer, or the best one shortened; the tool result's note says so), keeping room for the answer.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..auth.actor import Actor
from ..auth.roles import DEPLOYMENTS_CALL
from ..engines import Database
from ..errors import Invalid, TooLarge, describe, error_body
from ..metis.bases import KnowledgeBases
from ..metis.saves import Saves
from ..metis.search import Search
from ..util import iso, new_id, now
from . import knowledge
from . import tools as tool_specs
from .deployments import Deployment, Deployments
from .receipts import Receipts
from .runtimes import Runtimes
from .runtimes.base import ChatModel
from .tools import SEARCH, ToolGrant

log = logging.getLogger("astralyx.gateway")

MAX_ROUNDS = 6
MAX_RESULTS = 8
ANSWER_TOKENS = 512  # room kept for the answer when the request sets no max_tokens (at most a quarter of the context)
MIN_ANSWER_TOKENS = 32  # a conversation that leaves less than this cannot be answered: 413


EDGE_MESSAGE = (
    "{tool} is unavailable here: this is an edge gateway (a machine's own gateway), and the knowledge base {base} is "
    "reached through Astralyx, which an edge gateway does not call on a person's behalf. Answer without it and say so."
)
LIMIT_NOTE = (
    "You have used the {rounds} rounds of tool calls allowed for one answer. Do not call tools now: answer with what "
    "you have, and say that you stopped before finishing."
)
LIMIT_FALLBACK = (
    "I stopped after {rounds} rounds of tool calls without reaching an answer (the gateway's limit). "
    "Please ask again, perhaps more precisely."
)
FULL_NOTE = (
    "The tool results have filled your context. Do not call tools now: answer with what you have, and say that "
    "you stopped before finishing."
)
FULL_FALLBACK = (
    "I stopped: the tool results filled this model's context before I could answer. Please ask again more "
    "precisely, or in a new conversation."
)


class ChatRequest(BaseModel):
    """OpenAI's chat completion request as the gateway reads it: the fields it reads are named, the rest
    (temperature, max_tokens, tool_choice, …) go to the model as they were sent (`options`)."""

    model_config = ConfigDict(extra="allow")
    model: str = Field(min_length=1, description="A chat deployment's name, or <workspace>/<name> for one shared with you")
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool = Field(default=False, description="Server-sent events, ending with data: [DONE]")
    tools: list[dict[str, Any]] | None = Field(default=None, description="Your own tools, beside the built-in ones")
    n: Literal[1] | None = None
    metadata: dict[str, Any] | None = Field(default=None, description="conversation_title or conversation_id names "
                                            "the conversation in receipts")

    def options(self) -> dict[str, Any]:
        """What goes to the model as it was sent: every field given, less those the gateway reads itself."""
        return self.model_dump(exclude_unset=True, exclude=set(READ_BY_GATEWAY))

    def extra(self, name: str) -> Any:
        """An OpenAI field the gateway reads loosely, as clients send it (stream_options, conversation_id)."""
        return (self.model_extra or {}).get(name)


READ_BY_GATEWAY = ("model", "messages", "stream", "stream_options", "metadata", "tools", "conversation_id")
TOOL_SHAPE = 'Each of "tools" is {"type": "function", "function": {"name": ..., ...}}'
# The gateway's words for a request a shell built that does not fit (the API's body says its own: models.ChatIn).
SAY = {
    "model": 'Say which deployment answers: "model": "<deployment name>"',
    "messages": '"messages" must be a non-empty list of messages',
    "n": '"n" must be 1: the gateway answers one choice',
    "tools": '"tools" must be a list',
}


def parse_chat(data: Any) -> ChatRequest:
    """A chat request from what a shell gathered (the console's playground), or INVALID_REQUEST saying what is wrong."""
    if not isinstance(data, dict):
        raise Invalid("The body is a chat completion request: {\"model\": ..., \"messages\": [...]}", code="INVALID_REQUEST")
    try:
        return ChatRequest.model_validate(data)
    except ValidationError as e:
        where = e.errors()[0]["loc"]
        field_name = str(where[0]) if where else ""
        message = TOOL_SHAPE if field_name == "tools" and len(where) > 1 else SAY.get(field_name)
        raise Invalid(message or describe(e, "chat completion request"), code="INVALID_REQUEST") from None


@dataclass
class Turn:
    """One chat request on its way through the gateway."""

    actor: Actor
    deployment: Deployment
    model: ChatModel
    builtins: dict[str, ToolGrant]  # by the name the model calls it: the tool and what it grants the caller
    client_tools: set[str]
    conversation: str
    request: dict[str, Any]  # what the model is sent, less messages
    messages: list[dict[str, Any]]
    include_usage: bool = False
    receipts: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    drafts: list[dict[str, Any]] = field(default_factory=list)
    saves: list[dict[str, Any]] = field(default_factory=list)
    rounds: int = 0
    stopped: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    pending: list[dict[str, Any]] = field(default_factory=list)  # the round's call and results, not yet in messages
    full: bool = False  # tool results have filled the model's context: it answers now

    @property
    def final(self) -> bool:
        """The last round: the model is asked to answer without tools."""
        return self.rounds >= MAX_ROUNDS or self.full

    @property
    def limit(self) -> str:
        """Which limit the last round is at: MAX_ROUNDS or CONTEXT_FULL."""
        return "MAX_ROUNDS" if self.rounds >= MAX_ROUNDS else "CONTEXT_FULL"

    def fallback(self) -> str:
        """The answer when the model gave none at the limit."""
        return LIMIT_FALLBACK.format(rounds=MAX_ROUNDS) if self.limit == "MAX_ROUNDS" else FULL_FALLBACK

    def upstream(self, messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        body = {**self.request, "messages": list(self.messages if messages is None else messages)}
        if self.final:
            note = LIMIT_NOTE.format(rounds=MAX_ROUNDS) if self.limit == "MAX_ROUNDS" else FULL_NOTE
            body["messages"].append({"role": "system", "content": note})
            if body.get("tools"):
                body["tool_choice"] = "none"
        return body

    def add_usage(self, usage: Any) -> None:
        if isinstance(usage, dict):
            for k in ("prompt_tokens", "completion_tokens", "total_tokens"):
                if isinstance(usage.get(k), int):
                    self.usage[k] = self.usage.get(k, 0) + usage[k]

    def report(self) -> dict[str, Any]:
        return {
            "receipts": self.receipts,
            "tool_calls": self.calls,
            "drafts": self.drafts,
            "saves": self.saves,
            "rounds": self.rounds,
            "stopped": self.stopped,
        }


@dataclass
class Step:
    """What follows the model's reply in a round: `answer` (no calls, or the round limit reached: `limited`),
    `client` (calls of the client's tools to hand back) or `again` (built-in calls run: another round)."""

    next: str
    client_calls: list[dict[str, Any]] = field(default_factory=list)
    limited: bool = False


class Gateway:
    def __init__(
        self,
        db: Database,
        deployments: Deployments,
        runtimes: Runtimes,
        bases: KnowledgeBases,
        search: Search,
        saves: Saves,
        receipts: Receipts,
        *,
        edge: bool = False,
    ) -> None:
        self.db = db
        self.deployments = deployments
        self.runtimes = runtimes
        self.bases = bases
        self.search = search
        self.saves = saves
        self.receipts = receipts
        self.edge = edge  # an edge gateway: the knowledge tools answer as unavailable

    # -- the request ------------------------------------------------------------
    def prepare(self, actor: Actor, chat: ChatRequest) -> Turn:
        """Find the request's deployment and check what the request's model cannot say alone (its tools beside the
        deployment's); errors here are HTTP errors, before any streaming."""
        actor.require(DEPLOYMENTS_CALL)
        name = chat.model
        # One of the workspace's deployments, or <owner>/<name> shared with it: the tools then work in the owner's.
        dep = self.deployments.callable(actor, name)
        if dep.spec.kind != "chat":
            raise Invalid(f"Deployment {name!r} is an {dep.spec.kind} deployment: chat needs a chat deployment",
                          code="WRONG_DEPLOYMENT_KIND")
        builtins = {grant.tool.name: grant for grant in tool_specs.offers(dep, actor)}
        client_tools = chat.tools or []
        client_names = set()
        for t in client_tools:
            fn = t.get("function")  # a client's tool is passed through as sent: only its name is read
            tname = fn.get("name") if isinstance(fn, dict) else None
            if not isinstance(tname, str):
                raise Invalid(TOOL_SHAPE, code="INVALID_REQUEST")
            if tname in builtins:
                raise Invalid(f"The deployment {name!r} has a built-in tool named {tname!r}: give your tool another name",
                              code="TOOL_NAME_TAKEN")
            client_names.add(tname)
        metadata = chat.metadata or {}
        conversation = (
            _text(metadata.get("conversation_title")) or _text(metadata.get("conversation_id"))
            or _text(chat.extra("conversation_id")) or new_id("conv")
        )
        request = chat.options()
        offered = [grant.tool.schema() for grant in builtins.values()] + client_tools
        if offered:
            request["tools"] = offered
        else:
            request.pop("tool_choice", None)
            request.pop("parallel_tool_calls", None)
        model = self.runtimes.chat(dep.workspace, dep.name, wake=True)  # a call through the API wakes it
        stream_options = chat.extra("stream_options")
        include_usage = isinstance(stream_options, dict) and bool(stream_options.get("include_usage"))
        turn = Turn(actor, dep, model, builtins, client_names, conversation, request,
                    self._restore(dep.workspace, dep.name, chat.messages), include_usage)
        self._check_length(turn)
        return turn

    # -- the model's context ---------------------------------------------------------
    def _check_length(self, turn: Turn) -> None:
        """413 when the conversation alone leaves the model no room to answer (known context only)."""
        context = turn.model.context_length
        if not context:
            return
        tokens = turn.model.count_tokens(turn.upstream())
        if tokens + MIN_ANSWER_TOKENS > context:
            name = turn.deployment.name
            raise TooLarge(
                f"The conversation takes {tokens} tokens, and deployment {name!r} reads {context} at most, with room "
                "to answer: shorten it or start a new one (a model with a larger context reads more)",
                code="CONVERSATION_TOO_LONG",
                details={"deployment": name, "tokens": tokens, "context": context},
            )

    @staticmethod
    def _room(turn: Turn) -> int | None:
        """The tokens the prompt may take, room for the answer kept; None where the context is not known."""
        context = turn.model.context_length
        if not context:
            return None
        asked = turn.request.get("max_completion_tokens") or turn.request.get("max_tokens")
        answer = asked if isinstance(asked, int) and not isinstance(asked, bool) and asked > 0 else ANSWER_TOKENS
        return context - min(answer, context // 4)

    def _fit(self, turn: Turn, call_id: str, result: dict[str, Any]) -> dict[str, Any]:
        """A search's passages fitted into the room the conversation (and the round so far) leaves."""
        room = self._room(turn)
        if room is None:
            return result

        def fits(candidate: dict[str, Any]) -> bool:
            said = {"role": "tool", "tool_call_id": call_id, "content": json.dumps(candidate, ensure_ascii=False)}
            return turn.model.count_tokens(turn.upstream([*turn.messages, *turn.pending, said])) <= room

        return knowledge.fit(result, fits)

    # -- not streaming -----------------------------------------------------------
    def complete(self, turn: Turn) -> dict[str, Any]:
        said: list[str] = []  # words the model wrote beside its built-in calls: part of the answer, as when streaming
        while True:
            response = turn.model.complete(turn.upstream())
            turn.add_usage(response.get("usage"))
            choice = (response.get("choices") or [{}])[0]
            message = dict(choice.get("message") or {"role": "assistant", "content": None})
            own = message.get("content")
            finish = choice.get("finish_reason") or "stop"
            step = self._step(turn, own, _with_ids(message.get("tool_calls") or []))
            if step.next == "again":
                if own:
                    said.append(own)
                continue
            if step.limited:
                message["content"] = own or turn.fallback()
                finish = "stop"
            if said:
                message["content"] = "".join(said) + (message.get("content") or "")
            if step.next == "client":
                message["tool_calls"] = step.client_calls
                return self._answer(turn, response, message, "tool_calls")
            message.pop("tool_calls", None)
            return self._answer(turn, response, message, "stop" if finish == "tool_calls" else finish)

    def _answer(self, turn: Turn, response: dict[str, Any], message: dict[str, Any], finish: str) -> dict[str, Any]:
        message.setdefault("role", "assistant")
        message.setdefault("content", None)
        out = {
            "id": response.get("id") or f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": response.get("created") or int(time.time()),
            "model": turn.deployment.name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if turn.usage:
            out["usage"] = turn.usage
        out["astralyx"] = turn.report()
        return out

    # -- streaming -----------------------------------------------------------------
    def stream(self, turn: Turn) -> Iterator[dict[str, Any]]:
        """chat.completion.chunk dicts; the last one (no choices) carries `astralyx` (and usage when asked)."""
        cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {"id": cid, "object": "chat.completion.chunk", "created": created, "model": turn.deployment.name,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        started = False
        while True:
            parts: dict[int, dict[str, Any]] = {}
            content: list[str] = []
            finish = None
            body = turn.upstream()
            if turn.include_usage:
                body["stream_options"] = {"include_usage": True}
            for up in turn.model.stream(body):
                if not started:  # the first upstream event has come: the answer has begun
                    started = True
                    yield chunk({"role": "assistant", "content": ""})
                turn.add_usage(up.get("usage"))
                for ch in up.get("choices") or []:
                    delta = ch.get("delta") or {}
                    if delta.get("content"):
                        content.append(delta["content"])
                        yield chunk({"content": delta["content"]})
                    for tc in delta.get("tool_calls") or []:
                        _assemble(parts, tc)
                    if ch.get("finish_reason"):
                        finish = ch["finish_reason"]
            if not started:
                started = True
                yield chunk({"role": "assistant", "content": ""})
            step = self._step(turn, "".join(content) or None, _with_ids([parts[i] for i in sorted(parts)]))
            if step.next == "again":
                continue
            if step.limited and not content:
                yield chunk({"content": turn.fallback()})
            if step.next == "client":
                yield chunk({"tool_calls": [{"index": i, **c} for i, c in enumerate(step.client_calls)]})
                yield chunk({}, "tool_calls")
            else:
                yield chunk({}, "stop" if step.limited or finish in (None, "tool_calls") else finish)
            break
        last: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created,
                                "model": turn.deployment.name, "choices": [], "astralyx": turn.report()}
        if turn.include_usage:
            last["usage"] = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, **turn.usage}
        yield last

    # -- running tool calls -----------------------------------------------------------
    def _step(self, turn: Turn, content: str | None, calls: list[dict[str, Any]]) -> Step:
        """One round's end, the same for complete and stream: the model's calls in the last round are not run
        (it answers instead); else its built-in calls run, and the client's go back to the client."""
        if calls and turn.final:
            turn.stopped = turn.limit
            return Step("answer", limited=True)
        if not calls:
            return Step("answer")
        turn.rounds += 1
        client_calls = self._run(turn, content, calls)
        return Step("client", client_calls) if client_calls else self._again(turn)

    def _again(self, turn: Turn) -> Step:
        """Another round after built-in calls, unless their results filled the context (known contexts only):
        then the model answers without tools, or, without room even for that, the gateway says why it stopped."""
        room = self._room(turn)
        if room is None or turn.model.count_tokens(turn.upstream()) <= room:
            return Step("again")
        turn.full = True
        if turn.model.count_tokens(turn.upstream()) + MIN_ANSWER_TOKENS <= (turn.model.context_length or 0):
            return Step("again")
        turn.stopped = "CONTEXT_FULL"
        return Step("answer", limited=True)

    def _run(self, turn: Turn, content: str | None, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Run the built-in calls of one round (and answer unknown ones); return the client's calls, if any."""
        ours, results, client_calls = [], [], []
        # What the model will read of this round, as its results come: a search fits into the room left.
        turn.pending = [{"role": "assistant", "content": content,
                         "tool_calls": [c for c in calls if c["function"].get("name") not in turn.client_tools]}]
        for call in calls:
            name = call["function"].get("name") or ""
            if name in turn.client_tools:
                client_calls.append(call)
                continue
            grant = turn.builtins.get(name)
            result = self._builtin(turn, grant, call) if grant else self._unknown(turn, name)
            ours.append(call)
            results.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result, ensure_ascii=False)})
            turn.pending.append(results[-1])
        turn.pending = []
        if client_calls:
            if ours:
                self._keep(turn, client_calls, ours, results)
            return client_calls
        turn.messages.append({"role": "assistant", "content": content, "tool_calls": ours})
        turn.messages.extend(results)
        # A forced tool choice ("required", or one function) held for the first round: now the model may answer.
        if turn.request.get("tool_choice") not in (None, "auto", "none"):
            turn.request["tool_choice"] = "auto"
        return []

    def _unknown(self, turn: Turn, name: str) -> dict[str, Any]:
        known = sorted(set(turn.builtins) | turn.client_tools)
        turn.calls.append({"name": name, "status": "unknown_tool"})
        return error_body("UNKNOWN_TOOL", f"There is no tool named {name!r}. "
                          + (f"The tools you may call are: {', '.join(known)}." if known else "You have no tools here."))

    def _builtin(self, turn: Turn, grant: ToolGrant, call: dict[str, Any]) -> dict[str, Any]:
        tool = grant.tool
        raw = call["function"].get("arguments") or ""
        result = self._result(turn, grant, raw, call["id"])
        workspace = turn.deployment.workspace
        receipt = self.receipts.issue(
            workspace=workspace, deployment=turn.deployment.name, caller=turn.actor.key_id or "local",
            tool=tool.name, function=tool.builtin, knowledge_base=tool.knowledge_base,
            arguments=raw, result=result, conversation=turn.conversation,
        )
        rid = receipt.receipt.id
        turn.receipts.append(rid)
        error = result.get("error") if isinstance(result, dict) else None
        turn.calls.append({
            "id": call["id"], "name": tool.name, "function": tool.builtin, "knowledge_base": tool.knowledge_base,
            "status": (error or {}).get("code") or result.get("status") or "ok", "receipt": rid,
        })
        return result

    def _result(self, turn: Turn, grant: ToolGrant, raw: str, call_id: str) -> dict[str, Any]:
        tool = grant.tool
        usage = '{"query": "..."}' if tool.builtin == SEARCH else '{"title": "...", "text": "..."}'
        try:
            args = json.loads(raw or "{}")
        except json.JSONDecodeError as e:
            return error_body("INVALID_ARGUMENTS", f"The arguments are not valid JSON ({e.msg} at character {e.pos}): "
                                                   f"call {tool.name} again with {usage}")
        if not isinstance(args, dict):
            return error_body("INVALID_ARGUMENTS", f"The arguments must be a JSON object: call {tool.name} again with {usage}")
        if self.edge:
            return error_body("TOOL_UNAVAILABLE", EDGE_MESSAGE.format(tool=tool.name, base=tool.knowledge_base))
        if tool.builtin == SEARCH:  # fitted before its receipt: the receipt is of what the model reads
            return self._fit(turn, call_id, self._search(grant, args))
        return self._save(grant, turn, args)

    def _search(self, grant: ToolGrant, args: dict[str, Any]) -> dict[str, Any]:
        # As the tool grants it (eos/tools.py, ToolGrant): as a reader of the deployment's workspace, not as the caller.
        assert grant.reader is not None
        return knowledge.search(self.search, grant.reader, grant.knowledge_base, args.get("query"), max_results=MAX_RESULTS,
                                tool=grant.tool.name)

    def _save(self, grant: ToolGrant, turn: Turn, args: dict[str, Any]) -> dict[str, Any]:
        base = self.bases.find(turn.deployment.workspace, grant.knowledge_base)
        if base is None:
            return error_body("BASE_NOT_FOUND", f"The knowledge base {grant.knowledge_base!r} no longer exists: nothing "
                                                "was saved. Tell the person.")
        done = knowledge.save(self.saves, base, by=turn.deployment.name, conversation=turn.conversation,
                              title=args.get("title"), text=args.get("text"), confirm=grant.save == "ask",
                              maker=turn.actor.key_id)
        if done.draft is not None:
            turn.drafts.append(done.draft.to_dict())
        if done.save is not None:
            turn.saves.append(done.save.to_dict())
        return done.result

    # -- built-in calls made beside a client's call -----------------------------------
    def _keep(self, turn: Turn, client_calls: list[dict[str, Any]], ours: list[dict[str, Any]],
              results: list[dict[str, Any]]) -> None:
        """Keep the built-in exchange of a turn that goes back to the client, to put it back later."""
        with self.db.transaction() as conn:
            # Kept for a week: long enough for a client to answer its call, and the table stays small.
            conn.execute("DELETE FROM gateway_exchanges WHERE created_at < ?", (iso(now() - timedelta(days=7)),))
            for call in client_calls:
                conn.execute(
                    "INSERT INTO gateway_exchanges(call_id, workspace, deployment, calls, results, created_at) "
                    "VALUES (?,?,?,?,?,?) ON CONFLICT (workspace, deployment, call_id) DO UPDATE SET "
                    "calls=excluded.calls, results=excluded.results, created_at=excluded.created_at",
                    (call["id"], turn.deployment.workspace, turn.deployment.name, json.dumps(ours), json.dumps(results),
                     iso()),
                )

    def _restore(self, workspace: str, deployment: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Put kept built-in calls back beside the client's calls they came with, so the model sees their results."""
        out: list[dict[str, Any]] = []
        for message in messages:
            calls = message.get("tool_calls") if message.get("role") == "assistant" else None
            if not calls:
                out.append(message)
                continue
            extra_calls: list[dict[str, Any]] = []
            extra_results: list[dict[str, Any]] = []
            for call in calls:
                cid = call.get("id") if isinstance(call, dict) else None
                if not cid:
                    continue
                row = self.db.one(
                    "SELECT calls, results FROM gateway_exchanges WHERE workspace=? AND deployment=? AND call_id=?",
                    (workspace, deployment, cid),
                )
                if row is not None and not extra_calls:
                    extra_calls, extra_results = json.loads(row["calls"]), json.loads(row["results"])
            if extra_calls:
                out.append({**message, "tool_calls": [*extra_calls, *calls]})
                out.extend(extra_results)
            else:
                out.append(message)
        return out


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _with_ids(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for call in calls:
        if not isinstance(call, dict):
            continue
        fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
        out.append({
            "id": call.get("id") or f"call_{uuid.uuid4().hex[:16]}",
            "type": "function",
            "function": {"name": fn.get("name") or "", "arguments": _arguments(fn.get("arguments"))},
        })
    return out


def _arguments(value: Any) -> str:
    # Some servers send the arguments as an object rather than a JSON string.
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _assemble(parts: dict[int, dict[str, Any]], delta: dict[str, Any]) -> None:
    """Put a streamed tool-call delta into the call it belongs to (by index; without one, a new id starts a call)."""
    index = delta.get("index")
    if not isinstance(index, int):
        last = max(parts) if parts else None
        new_call = last is None or (delta.get("id") and parts[last]["id"] not in (None, delta["id"]))
        index = (last + 1 if last is not None else 0) if new_call or last is None else last
    part = parts.setdefault(index, {"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
    if delta.get("id"):
        part["id"] = delta["id"]
    fn = delta.get("function") or {}
    if fn.get("name"):
        part["function"]["name"] += fn["name"]
    if fn.get("arguments"):
        part["function"]["arguments"] += _arguments(fn["arguments"])
