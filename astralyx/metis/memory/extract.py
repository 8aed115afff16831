"""Remember a conversation: the base's extractor reads it and proposes facts; nothing is kept here.

    messages → lines (dated, numbered) → window(s) → one extractor call each (JSON schema)
             → facts parsed (think blocks, fences, prose and truncation survived; one retry)
             → cleaned, deduplicated, secrets left out and counted
             → what each would become if kept (memory preview: new / replaces / older / known / confirms)

The conversation lives only in this call's memory: it is never written to a file, the index or a log
(errors name what went wrong, never what was said). Keeping the chosen facts is POST …/memory.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Any

from pydantic import Field

from ... import links
from ...answers import Answer, absent
from ...auth.actor import Actor
from ...auth.roles import WRITE_CONTENT
from ...errors import AstralyxError, BadGateway, Conflict, Invalid, TooLarge, Unavailable
from ...util import iso
from . import prompt
from .facts import FactIn, normalize_said_at
from .prompt import Line
from .secrets import find_secret_in_fact
from .service import FactBrief

if TYPE_CHECKING:
    from ...eos.catalog import Models
    from ...eos.deployments import Deployments
    from ...eos.runtimes import Runtimes
    from ..bases import KnowledgeBase, KnowledgeBases
    from .service import KeptFact, Memory

# Without a context length from the runtime, assume Ollama's default window (4096 tokens).
DEFAULT_CONTEXT_TOKENS = 4096
CHARS_PER_TOKEN = 3  # conservative: English is ~4, other languages and names fewer
MAX_WINDOWS = 16  # beyond this a CPU model would read for an hour: ask for a part of it
ROLES_READ = ("user", "assistant")  # system prompts and tool outputs are not the conversation


class Unreadable(Exception):
    """The model's answer holds no facts we can read."""


# -- the conversation --------------------------------------------------------


def _parse_when(value: Any, what: str) -> str:
    """A date ('2026-10-12') or date-time ('2026-10-12T09:30:00Z') as ISO, or 422 INVALID_DATE."""
    if not isinstance(value, str) or not value.strip():
        raise Invalid(f"{what} must be a date (2026-10-12) or a date-time (2026-10-12T09:30:00Z)", code="INVALID_DATE")
    return normalize_said_at(value, what)  # the one rule (and code) for dates of facts


def _text_of(content: Any) -> str:
    """Message content as text: a string, or the text parts of an OpenAI content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p for p in content if isinstance(p, dict) and p.get("type") == "text"]
        return "\n".join(p["text"] for p in parts if isinstance(p.get("text"), str))
    return ""


def conversation(messages: Any, *, said_at: str | None = None, now: str | None = None) -> list[Line]:
    """The messages worth reading, numbered from 1, each with the date it was said.

    A message's own `date` or `time` wins, then the request's `said_at`, then the date of the message
    before it (or after it, for the first ones), then now.
    """
    if not isinstance(messages, list) or not messages:
        raise Invalid(
            'Send the conversation as "messages": [{"role": "user", "content": "…"}, …]', code="INVALID_CONVERSATION"
        )
    default = _parse_when(said_at, "said_at") if said_at is not None else None
    lines: list[Line] = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict):
            raise Invalid(f"messages[{i}] must be an object with role and content", code="INVALID_CONVERSATION")
        role = m.get("role", "user")
        if role not in ROLES_READ:
            continue
        text = _text_of(m.get("content")).strip()
        if not text:
            continue
        when = m.get("time") if m.get("time") is not None else m.get("date")
        raw_name = m.get("name")
        name = raw_name if isinstance(raw_name, str) and raw_name.strip() else None
        lines.append(
            Line(
                number=len(lines) + 1,
                role=role,
                name=name.strip() if name else None,
                content=text,
                said_at=_parse_when(when, f"messages[{i}].{'time' if m.get('time') is not None else 'date'}")
                if when is not None
                else default or "",
            )
        )
    if not lines:
        raise Invalid("The conversation has no user or assistant message with text to read", code="INVALID_CONVERSATION")
    # Undated messages (and no said_at): the conversation's dates around them, else now.
    dated = [line.said_at for line in lines if line.said_at]
    previous = dated[0] if dated else (now or iso())
    for line in lines:
        if line.said_at:
            previous = line.said_at
        else:
            line.said_at = previous
    return lines


def windows(lines: list[Line], budget_chars: int) -> list[list[Line]]:
    """The conversation in as few windows as fit the budget; one when it fits (the usual case).

    Windows break between messages; a single message longer than a window is cut in pieces that
    keep its number and date.
    """
    budget_chars = max(budget_chars, 500)
    out: list[list[Line]] = []
    current: list[Line] = []
    size = 0
    for line in lines:
        pieces = [line]
        if len(prompt.render_line(line)) > budget_chars:
            step = budget_chars - 100
            pieces = [
                Line(line.number, line.role, line.name, line.content[i : i + step], line.said_at)
                for i in range(0, len(line.content), step)
            ]
        for piece in pieces:
            n = len(prompt.render_line(piece)) + 1
            if current and size + n > budget_chars:
                out.append(current)
                current, size = [], 0
            current.append(piece)
            size += n
    if current:
        out.append(current)
    return out


# -- the answer --------------------------------------------------------------

_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)
_FACT_KEYS = ("subject", "attribute", "fact")


def _facts_in(value: Any) -> list[dict[str, Any]] | None:
    """The fact objects of a decoded answer, or None if it is not an answer at all."""
    if isinstance(value, dict):
        if isinstance(value.get("facts"), list):
            facts = value["facts"]
            return facts if all(isinstance(f, dict) for f in facts) else None
        if all(k in value for k in _FACT_KEYS):
            return [value]
        return None
    if isinstance(value, list) and all(isinstance(f, dict) for f in value):
        return list(value)
    return None


def parse_answer(text: str | None) -> list[dict[str, Any]]:
    """Read the facts out of what a model said, whatever it wrapped them in.

    Copes with <think>…</think> (closed, or left open), ```json fences, prose before and after,
    and an answer cut short by max_tokens (the complete facts are kept). Raises Unreadable when
    no answer can be found.
    """
    if not text or not text.strip():
        raise Unreadable("empty answer")
    text = _THINK.sub(" ", text)
    if re.search(r"</think(?:ing)?>", text, re.IGNORECASE):  # an unmatched close: the answer follows it
        text = re.split(r"</think(?:ing)?>", text, flags=re.IGNORECASE)[-1]
    text = re.sub(r"<think(?:ing)?>", " ", text, flags=re.IGNORECASE)
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        candidate = candidate.strip()
        try:
            found = _facts_in(json.loads(candidate))
            if found is not None:
                return found
        except ValueError:
            pass
        # Prose around it: the first JSON value that is an answer.
        for match in re.finditer(r"[\[{]", candidate):
            try:
                value, _ = decoder.raw_decode(candidate, match.start())
            except ValueError:
                continue
            found = _facts_in(value)
            if found is not None:
                return found
    # Cut short (or otherwise broken): keep every complete fact object there is.
    salvaged: list[dict[str, Any]] = []
    pos = 0
    while True:
        start = text.find("{", pos)
        if start < 0:
            break
        try:
            value, end = decoder.raw_decode(text, start)
        except ValueError:
            pos = start + 1
            continue
        if isinstance(value, dict) and all(k in value for k in _FACT_KEYS):
            salvaged.append(value)
            pos = end
        else:
            pos = start + 1
    if salvaged:
        return salvaged
    raise Unreadable("no JSON answer")


def _clean_text(value: Any, limit: int) -> str:
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        return ""
    return re.sub(r"\s+", " ", str(value)).strip()[:limit]


def _key(subject: str, attribute: str, fact: str) -> tuple[str, str, str]:
    def norm(s: str) -> str:
        return re.sub(r"\s+", " ", s).strip().rstrip(".!?;").strip().lower()

    return norm(subject), norm(attribute), norm(fact)


@dataclass
class Proposals:
    facts: list[dict[str, Any]] = field(default_factory=list)
    left_out_secrets: int = 0
    dropped: int = 0  # items the model gave that were not facts (missing fields)



class Proposal(Answer):
    """A fact the extractor proposes, and what it would become if kept."""

    subject: str = Field(description="As the memory spells it, when it knows it")
    attribute: str
    fact: str
    said_at: str
    source: str
    status: str = Field(description="new, replaces, older, known or confirms (known, said on another date)")
    known: bool = Field(description="Known already: shown unticked")
    replaces: FactBrief | None = absent("The fact it would replace")
    current: FactBrief | None = absent("Older than what holds: the fact that holds")
    same_as: FactBrief | None = absent("The fact the memory knows already")


class Timing(Answer):
    seconds: float
    model_seconds: float
    model_calls: int


class Extraction(Answer):
    """What the extractor read in a conversation: proposals only, nothing kept."""

    knowledge_base: str
    source: str
    extractor: str = Field(description="The chat deployment that read it")
    proposals: list[Proposal]
    left_out_secrets: int = Field(description="Facts left out because they looked like secrets")
    windows: int = Field(description="How many parts of the extractor's context the conversation took")
    timing: Timing


def clean(raw: list[dict[str, Any]], lines: list[Line], *, source: str) -> Proposals:
    """Proposals from the model's facts: complete, deduplicated, dated from their message, no secrets."""
    by_number = {line.number: line for line in lines}
    last = lines[-1]
    out = Proposals()
    seen: set[tuple[str, str, str]] = set()
    for item in raw:
        subject = _clean_text(item.get("subject"), 200)
        attribute = _clean_text(item.get("attribute"), 100).lower()
        fact = _clean_text(item.get("fact"), 1000)
        if not subject or not attribute or not fact:
            out.dropped += 1
            continue
        key = _key(subject, attribute, fact)
        if key in seen:
            continue
        seen.add(key)
        # As the memory checks it when keeping: each field, and the attribute as the secret's name
        # ("wifi password" / "It is sunflower42.").
        if find_secret_in_fact(subject, attribute, fact) is not None:
            out.left_out_secrets += 1
            continue
        number = item.get("message")
        line = by_number.get(number) if isinstance(number, int) and not isinstance(number, bool) else None
        if line is None and isinstance(number, str) and number.strip().isdigit():
            line = by_number.get(int(number.strip()))
        out.facts.append(
            {
                "subject": subject,
                "attribute": attribute,
                "fact": fact if fact[-1] in ".!?…" else fact + ".",
                "said_at": (line or last).said_at,
                "source": source,
            }
        )
    return out


# -- the service -------------------------------------------------------------


@dataclass
class Call:
    deployment: str = ""
    model_seconds: float = 0.0
    calls: int = 0
    retries: int = 0


class Extractor:
    """`POST …/memory/extract`: the base's extractor proposes facts; the memory says what each would become.

    The memory decides what each proposal would become; the runtimes run the base's extractor model,
    whose context window the deployments and the model library tell.
    """

    def __init__(self, bases: KnowledgeBases, memory: Memory, runtimes: Runtimes, deployments: Deployments,
                 models: Models) -> None:
        self.bases = bases
        self.memory = memory
        self.runtimes = runtimes
        self.deployments = deployments
        self.models = models

    def extract(
        self,
        actor: Actor,
        base_name: str,
        messages: Any,
        *,
        source: str | None = None,
        said_at: str | None = None,
        today: date | None = None,
    ) -> Extraction:
        # Reading a conversation for facts is the first step of keeping them.
        actor.require(WRITE_CONTENT)
        base = self.bases.get(actor, base_name)
        self.check(base)
        source = (source or "").strip() or "conversation"
        if len(source) > 200:
            raise Invalid("source is at most 200 characters", code="INVALID_CONVERSATION")
        started = time.monotonic()
        call = Call()
        proposals, parts = self.propose(base, messages, source=source, said_at=said_at, today=today, call=call)
        facts = self._preview(actor, base_name, proposals.facts)
        timing = Timing.model_construct(seconds=round(time.monotonic() - started, 3),
                                        model_seconds=round(call.model_seconds, 3), model_calls=call.calls)
        return Extraction.model_construct(knowledge_base=base_name, source=source, extractor=call.deployment,
                                          proposals=facts, left_out_secrets=proposals.left_out_secrets, windows=parts,
                                          timing=timing)

    @staticmethod
    def check(base: KnowledgeBase) -> None:
        """A memory with an extractor, or 409 naming what to set."""
        if base.kind != "memory":
            raise Conflict(
                f"{base.name!r} is a knowledge base of documents, not a memory: remember conversations in a memory "
                "(astra metis create NAME --kind memory --extractor DEPLOYMENT)",
                code="NOT_A_MEMORY",
            )
        if base.spec.extractor is None:
            raise Conflict(
                f"The memory {base.name!r} has no extractor model: set spec.extractor.deployment to a chat deployment "
                f"(PUT {links.base('<name>')}), or keep facts by hand",
                code="NO_EXTRACTOR",
            )

    def propose(
        self,
        base: KnowledgeBase,
        messages: Any,
        *,
        source: str,
        said_at: str | None = None,
        today: date | None = None,
        known: dict[str, list[str]] | None = None,
        call: Call | None = None,
    ) -> tuple[Proposals, int]:
        """The facts the extractor reads in one conversation (one call per window), cleaned; and how many windows.
        No permission check and nothing kept: callers checked (extract, an import job started by its person)."""
        self.check(base)
        assert base.spec.extractor is not None
        call = call if call is not None else Call()
        lines = conversation(messages, said_at=said_at)
        today = today or datetime.now(UTC).date()
        known = self.memory.known_subjects(base) if known is None else known
        deployment = call.deployment = base.spec.extractor.deployment
        model = self._model(base.workspace, deployment)

        context = self._context_tokens(base.workspace, deployment, model)
        answer_tokens = max(256, min(2048, context // 4))
        overhead = sum(len(m["content"]) for m in prompt.messages([], today=today, known=known))
        budget = (context - answer_tokens) * CHARS_PER_TOKEN - overhead
        parts = windows(lines, budget)
        if len(parts) > MAX_WINDOWS:
            raise TooLarge(
                f"The conversation is too long to read at once ({len(parts)} windows of the extractor's context, "
                f"at most {MAX_WINDOWS}): send a part of it",
                code="CONVERSATION_TOO_LONG",
            )
        raw: list[dict[str, Any]] = []
        for part in parts:
            raw.extend(self._read(model, deployment, part, today=today, known=known, max_tokens=answer_tokens, call=call))
        return clean(raw, lines, source=source), len(parts)

    # -- the model -----------------------------------------------------------
    def _model(self, workspace: str, deployment: str) -> Any:
        try:
            return self.runtimes.chat(workspace, deployment)
        except AstralyxError as e:
            raise _unavailable(deployment, e) from None

    def _context_tokens(self, workspace: str, deployment: str, model: Any) -> int:
        """The context window the extractor is run with, in tokens.

        The runtime's own figure if it gives one; for an embedded model the library's (it loads the
        model with that window); for an upstream server 4096: it does not say how much of the model's
        window it serves (Ollama serves 4096 by default, whatever the model could take).
        """
        for attribute in ("context_length", "n_ctx"):
            value = getattr(model, attribute, None)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 512:
                return value
        dep = self.deployments.find(workspace, deployment)
        if dep is not None and dep.spec.runtime.type == "embedded":
            library = self.models.resolve(dep.spec.model)
            if library is not None and getattr(library, "context", None):
                return int(library.context)
        return DEFAULT_CONTEXT_TOKENS

    def _read(
        self, model: Any, deployment: str, part: list[Line], *, today: date, known: dict[str, list[str]], max_tokens: int,
        call: Call,
    ) -> list[dict[str, Any]]:
        """One window → its facts; one retry when the answer cannot be read."""
        for attempt in range(2):
            request = {
                "model": deployment,
                "messages": prompt.messages(part, today=today, known=known, retry=attempt > 0),
                "response_format": prompt.RESPONSE_FORMAT,
                "temperature": 0.0 if attempt == 0 else 0.3,
                "max_tokens": max_tokens,
                "stream": False,
            }
            started = time.monotonic()
            try:
                response = model.complete(request)
            except AstralyxError as e:
                raise _unavailable(deployment, e) from None
            except Exception as e:  # noqa: BLE001 - an in-process engine failing: an answer, not a crash
                cause = AstralyxError(f"{type(e).__name__}: {str(e)[:200]}", code="ENGINE_ERROR")
                raise _unavailable(deployment, cause) from None
            finally:
                call.model_seconds += time.monotonic() - started
                call.calls += 1
            try:
                return parse_answer(_content(response))
            except Unreadable:
                call.retries += 1
                continue
        raise BadGateway(
            f"The extractor {deployment!r} did not answer with facts (twice): try again; a larger chat model is steadier",
            code="EXTRACTOR_UNREADABLE",
        )

    # -- the memory ----------------------------------------------------------
    def _preview(self, actor: Actor, base_name: str, facts: list[dict[str, Any]]) -> list[Proposal]:
        """Each proposal with what it would become if kept (the memory decides; nothing is written)."""
        if not facts:
            return []
        outcomes = self.memory.preview(actor, base_name, list[FactIn | dict[str, Any]](facts))
        return [_proposal(fact, outcome) for fact, outcome in zip(facts, outcomes, strict=True)]


def _proposal(fact: dict[str, Any], outcome: KeptFact) -> Proposal:
    """A proposal as clients show it: status new / replaces / older / known / confirms; known ones flagged
    (unticked). Confirms: known, said on another date; kept, it records that saying on the fact.

    The memory may respell subject and attribute as it knows them (one spelling per timeline).
    """
    status = outcome.change or "new"
    return Proposal.model_construct(
        subject=outcome.subject or fact["subject"], attribute=outcome.attribute or fact["attribute"], fact=fact["fact"],
        said_at=fact["said_at"], source=fact["source"], status=status, known=status in ("known", "confirms"),
        # id, fact, said_at of the fact it would replace; the newer fact that holds (this one would go to the history);
        # the fact known already
        replaces=outcome.replaces if status == "replaces" else None,
        current=outcome.current if status == "older" else None,
        same_as=outcome.known if status in ("known", "confirms") else None,
    )


def _content(response: Any) -> str | None:
    try:
        message = response["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return None
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else None


def _unavailable(deployment: str, error: AstralyxError) -> Unavailable:
    return Unavailable(
        f"The extractor deployment {deployment!r} does not answer ({error.message}): check it in Eos → Deployments "
        "(astra eos deployments); keep it at one replica",
        code="EXTRACTOR_UNAVAILABLE",
        details={"deployment": deployment, "cause": error.code},
    )
