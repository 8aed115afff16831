"""The Memory service: keep, preview, list, edit and forget the facts of a memory base.

Permissions live here (keep/edit/forget: knowledge-bases:write-content; reading: knowledge-bases:read).
Every change runs under the base's folder lock, reads the facts from their files, applies the
timeline rules (timeline.py) and writes the difference as one step (store.py), through the
base's writer (metis/writer.py), which tells the index.
"""

from __future__ import annotations

import builtins
import threading
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import Field, ValidationError

from ...answers import Answer, absent
from ...auth.actor import Actor
from ...auth.roles import READ, WRITE_CONTENT
from ...errors import BadRequest, Conflict, Invalid, NotFound, describe
from ...locks import Locks
from ...util import iso, new_id
from ..bases import KnowledgeBase, KnowledgeBases
from ..writer import Writer
from .facts import ID_RE, MAX_FACT, Correction, Fact, FactIn, moment, normalize_said_at, one_line
from .secrets import find_secret_in_fact
from .store import JOURNAL, MemoryStore, ParsedFacts
from .timeline import CONFIRMS, KNOWN, OLDER, REPLACES, held_on, key_of, norm_name, place, settle

MAX_BATCH = 500


# -- what the memory answers ------------------------------------------------------------------------
class FactBrief(Answer):
    """A fact named beside another one (the one it replaces, the one that holds, the same fact known)."""

    id: str
    fact: str
    said_at: str
    source: str
    said_again: list[str] | None = absent("Its later sayings (left out when none)")


class CorrectionView(Answer):
    """What one correction changed: the values before it, and its day."""

    from_: str | None = absent("The earlier wording", alias="from")
    said_at: str | None = absent("The earlier date")
    source: str | None = absent("The earlier source")
    on: str = Field(description="The day of the correction")


class Held(Answer):
    from_: str = Field(alias="from", description="Its first saying")
    until: str | None = Field(description="When the next fact was said (null: it holds)")


class FactView(Answer):
    """A fact as answered: what the file keeps, and the period it held."""

    id: str
    subject: str
    attribute: str
    fact: str
    source: str
    said_at: str = Field(description="Its first saying: a date or a UTC date-time")
    kept_at: str
    until: str | None = absent("Once replaced: when the next fact was said")
    replaced_by: str | None = absent("Once replaced: the fact that replaced it")
    edited_at: str | None = absent("When it was last corrected")
    said_again: list[str] | None = absent("Its later sayings, in order")
    corrected: list[CorrectionView] | None = absent("What each correction changed, oldest first")
    status: str = Field(description="current | history")
    held: Held
    replaced: list[FactView] | None = absent("With history: the facts it replaced, newest first")

    @classmethod
    def of(cls, fact: Fact) -> FactView:
        corrected = [CorrectionView.model_construct(from_=c.fact, said_at=c.said_at, source=c.source, on=c.on)
                     for c in fact.corrected]
        return cls.model_construct(
            id=fact.id, subject=fact.subject, attribute=fact.attribute, fact=fact.fact, source=fact.source,
            said_at=fact.said_at, kept_at=fact.kept_at, until=fact.until, replaced_by=fact.replaced_by,
            edited_at=fact.edited_at, said_again=list(fact.said_again) or None, corrected=corrected or None,
            status=fact.status, held=Held.model_construct(from_=fact.said_at, until=fact.until), replaced=None,
        )


class SubjectFacts(Answer):
    subject: str
    facts: list[FactView]


class FactListing(Answer):
    """A memory's facts grouped by subject (what held on `as_of`; only `subject`'s, `attribute`'s when given)."""

    knowledge_base: str
    subjects: list[SubjectFacts]
    count: int = Field(description="How many facts hold (are listed)")
    history_count: int | None = absent("With history: how many facts they replaced")
    as_of: str | None = absent()
    subject: str | None = absent()
    attribute: str | None = absent()


class KeptFact(Answer):
    """What became of one fact kept (or what would, in a preview)."""

    subject: str = Field(description="As the memory spells it (one spelling per subject and attribute)")
    attribute: str
    fact: str
    source: str
    said_at: str
    change: str = Field(description="new, replaces, older, known or confirms (known, said on another date: recorded "
                                    "in its said_again)")
    id: str | None = absent("The fact kept (not for one known already)")
    status: str | None = absent("current, history, or known (not kept twice)")
    known: FactBrief | None = absent("The fact the memory knows already")
    replaces: FactBrief | None = absent("The fact it replaced")
    current: FactBrief | None = absent("Older than what holds: the fact that holds")
    splits: FactBrief | None = absent("Said between two sayings of a fact: now two facts")
    until: str | None = absent("Kept to the history: when the next fact was said")
    replaced_by: str | None = absent()


class KeptFacts(Answer):
    knowledge_base: str
    facts: list[KeptFact] = Field(description="What became of each fact, in order")
    kept: int
    replaced: int
    known: int
    confirmed: int


class Forgotten(Answer):
    knowledge_base: str
    forgotten: str
    history_forgotten: int = Field(description="How many older facts it replaced were forgotten with it")
    current: FactView | None = absent("The fact that holds again, when the forgotten one held")
    rejoined: FactView | None = absent("The facts on either side of it, one fact again")


# What keeping a batch would do: the answers, and the facts before and after by id.
Plan = tuple[list[KeptFact], dict[str, Fact], dict[str, Fact]]


def _brief(fact: Fact) -> FactBrief:
    return FactBrief.model_construct(id=fact.id, fact=fact.fact, said_at=fact.said_at, source=fact.source,
                                     said_again=list(fact.said_again) or None)


def _swap(facts: dict[str, Fact], old: list[Fact], new: list[Fact]) -> None:
    """Put a key's new timeline in place of its old one (a note merged into another one goes)."""
    for fact in old:
        facts.pop(fact.id, None)
    facts.update({f.id: f for f in new})


def _stamp(dt: datetime) -> str:
    return dt.isoformat(timespec="microseconds").replace("+00:00", "Z")


class Memory:
    def __init__(self, bases: KnowledgeBases, writer: Writer, *, locks: Locks) -> None:
        self.bases = bases
        self.locks = locks
        self.writer = writer  # every fact's file is written through it (the index hears of it there)
        self._repaired: set[str] = set()
        self.parsed = ParsedFacts()  # the facts its stores read, kept while their files are unchanged
        self._guard = threading.Lock()

    # -- bases -------------------------------------------------------------
    def base(self, actor: Actor, name: str, permission: str = READ) -> KnowledgeBase:
        actor.require(permission)
        base = self.bases.get(actor, name)
        self.check_memory(base)
        return base

    @staticmethod
    def check_memory(base: KnowledgeBase) -> None:
        if base.kind != "memory":
            raise Conflict(
                f"{base.name!r} is a knowledge base of documents, not a memory: facts are kept in a base of "
                "kind memory (create one with spec.kind \"memory\")",
                code="NOT_A_MEMORY",
            )

    def store(self, base: KnowledgeBase) -> MemoryStore:
        """The base's store, repaired before first use in this process. Call under the base's folder lock."""
        store = MemoryStore(base.folder, self.writer.of(base), self.parsed)
        key = f"{base.folder}|{base.created_at}"
        # A journal left by a process that crashed (maybe another one: a local CLI beside the server)
        # is replayed before anything else is changed, so it can never replay over newer changes.
        if key not in self._repaired or store.journal.exists():
            with self._guard:
                self._repaired.add(key)
            store.repair()
        return store

    def repair(self, base: KnowledgeBase) -> list[str]:
        """Repair one memory now (at start, or after files were changed by hand). Paths changed."""
        self.check_memory(base)
        with self.locks.folder(base.folder):
            changed = MemoryStore(base.folder, self.writer.of(base), self.parsed).repair()
            with self._guard:
                self._repaired.add(f"{base.folder}|{base.created_at}")
        return changed

    def repair_all(self) -> None:
        for base in self.bases.all():
            if base.kind == "memory" and base.folder.exists():
                self.repair(base)

    def repair_interrupted(self) -> None:
        """At start: finish any change a crash interrupted (its journal is still there). Cheap: one stat a memory."""
        for base in self.bases.all():
            if base.kind == "memory" and (base.folder / JOURNAL).exists():
                self.repair(base)

    # -- reading -----------------------------------------------------------
    def facts_in(self, base: KnowledgeBase) -> list[Fact]:
        """Every fact of the base, arranged (current and history). No permission check: callers did it."""
        with self.locks.folder(base.folder):
            store = self.store(base)
            return [f for tl in store.timelines(store.facts()).values() for f in tl]

    def known_subjects(self, base: KnowledgeBase) -> dict[str, list[str]]:
        """Subjects the memory knows and their attributes (as spelt by the current facts): for the extractor."""
        out: dict[str, list[str]] = {}
        seen: dict[str, str] = {}
        for fact in sorted(self.facts_in(base), key=lambda f: (norm_name(f.subject), norm_name(f.attribute))):
            if fact.status != "current":
                continue
            subject = seen.setdefault(norm_name(fact.subject), fact.subject)
            out.setdefault(subject, []).append(fact.attribute)
        return out

    def get(self, actor: Actor, base_name: str, fact_id: str) -> Fact:
        base = self.base(actor, base_name)
        return self._find(self.facts_in(base), base, fact_id)

    @staticmethod
    def _find(facts: list[Fact], base: KnowledgeBase, fact_id: str) -> Fact:
        for fact in facts:
            if fact.id == fact_id:
                return fact
        raise NotFound(
            f"No fact {fact_id!r} in memory {base.name!r}: `astra metis memory {base.name} --history` lists them",
            code="FACT_NOT_FOUND",
        )

    def list(self, actor: Actor, base_name: str, *, history: bool = False, as_of: str | None = None,
             subject: str | None = None, attribute: str | None = None) -> FactListing:
        """Current facts grouped by subject; with history, what each replaced; as_of: what held then; subject,
        attribute: only the facts about that subject, of that attribute (named as facts are matched: without case
        and extra spaces). The API's listing and MCP's recall."""
        base = self.base(actor, base_name)
        facts = self.facts_in(base)
        only = (norm_name(subject or ""), norm_name(attribute or ""))
        timelines: dict[tuple[str, str], list[Fact]] = {}
        for fact in facts:
            key = key_of(fact)
            if all(not wanted or wanted == part for wanted, part in zip(only, key, strict=True)):
                timelines.setdefault(key, []).append(fact)
        at = as_of_moment(as_of) if as_of else None
        subjects: dict[str, SubjectFacts] = {}
        counts = {"current": 0, "history": 0}
        for key in sorted(timelines):
            timeline = timelines[key]
            if at is not None:
                held = [f for f in timeline if held_on(f, at)]
                if not held:
                    continue
                head = held[-1]
                older = timeline[: timeline.index(head)]
            else:
                head, older = timeline[-1], timeline[:-1]
            item = FactView.of(head)
            counts["current"] += 1
            if history:
                item.replaced = [FactView.of(f) for f in reversed(older)]
                counts["history"] += len(older)
            group = subjects.setdefault(key[0], SubjectFacts.model_construct(subject=timeline[-1].subject, facts=[]))
            group.facts.append(item)
        return FactListing.model_construct(
            knowledge_base=base.name, subjects=list(subjects.values()), count=counts["current"],
            history_count=counts["history"] if history else None, as_of=as_of or None,
            subject=subject if only[0] else None, attribute=attribute if only[1] else None,
        )

    # -- keeping -----------------------------------------------------------
    def preview(
        self, actor: Actor, base_name: str, facts: builtins.list[FactIn | dict[str, Any]]
    ) -> builtins.list[KeptFact]:
        """What each fact WOULD become if kept (new, replaces, older, known). Writes nothing."""
        base = self.base(actor, base_name, WRITE_CONTENT)
        incoming = self._validate(facts)
        with self.locks.folder(base.folder):
            store = self.store(base)
            results, _, _ = self._plan(store, incoming)
        return results

    def keep(self, actor: Actor, base_name: str, facts: builtins.list[FactIn | dict[str, Any]]) -> KeptFacts:
        """Keep facts as one step (all or nothing). Answers what became of each and how many were replaced."""
        base = self.base(actor, base_name, WRITE_CONTENT)
        incoming = self._validate(facts)
        with self.locks.folder(base.folder):
            store = self.store(base)
            results, before, after = self._plan(store, incoming)
            ops = store.ops_for(before, after)
            store.commit(ops)  # under the lock: the index hears of changes in the order they were made
        return KeptFacts.model_construct(
            knowledge_base=base.name,
            facts=results,
            kept=sum(1 for r in results if r.status != "known"),
            replaced=sum(1 for r in results if r.change == REPLACES),
            # Known already: not kept twice; of those, confirmed: a saying on another date, recorded.
            known=sum(1 for r in results if r.status == "known"),
            confirmed=sum(1 for r in results if r.change == CONFIRMS),
        )

    def _validate(self, facts: builtins.list[FactIn | dict[str, Any]]) -> builtins.list[FactIn]:
        if not isinstance(facts, list) or not facts:
            raise BadRequest('Send {"facts": [{"subject", "attribute", "fact", "source", "said_at"?}, …]}', code="INVALID_FACT")
        if len(facts) > MAX_BATCH:
            raise Invalid(f"At most {MAX_BATCH} facts at once: send them in several requests", code="TOO_MANY_FACTS")
        incoming: builtins.list[FactIn] = []
        for i, raw in enumerate(facts):
            try:
                fact = raw if isinstance(raw, FactIn) else FactIn.model_validate(raw)
            except ValidationError as e:
                raise Invalid(describe(e, "fact" if len(facts) == 1 else f"facts[{i}]"),
                              code="INVALID_FACT") from None
            incoming.append(fact)
        # Secrets first, for the whole batch: nothing of any of them is written.
        for i, fact in enumerate(incoming):
            where = "The fact" if len(incoming) == 1 else f"facts[{i}]"
            refuse_secret(fact.subject, fact.attribute, fact.fact, fact.source, where=where)
        return incoming

    def _plan(self, store: MemoryStore, incoming: builtins.list[FactIn]) -> Plan:
        existing = store.facts()
        timelines = store.timelines(existing)
        before = {f.id: f for tl in timelines.values() for f in tl}
        after = dict(before)
        latest = max((moment(f.kept_at) for f in existing), default=datetime.min.replace(tzinfo=UTC))
        start = max(datetime.now(UTC), latest + timedelta(microseconds=1))
        said_default = iso()
        results: builtins.list[KeptFact] = []
        ids: builtins.list[str | None] = []
        for i, fin in enumerate(incoming):
            fact = Fact(
                id=new_id("f"),
                subject=fin.subject,
                attribute=fin.attribute,
                fact=fin.fact,
                source=fin.source,
                said_at=fin.said_at or said_default,
                kept_at=_stamp(start + timedelta(microseconds=i)),
            )
            key = key_of(fact)
            timeline = timelines.get(key, [])
            if timeline:  # one spelling per subject and attribute: the one the memory knows
                fact = fact.with_(subject=timeline[-1].subject, attribute=timeline[-1].attribute)
            placement = place(timeline, fact)
            entry = KeptFact.model_construct(
                subject=fact.subject, attribute=fact.attribute, fact=fact.fact, source=fact.source, said_at=fact.said_at,
                change=placement.change, status=None, known=None, replaces=None, current=None, splits=None, id=None,
                until=None, replaced_by=None,
            )
            if placement.change in (KNOWN, CONFIRMS):
                # Not kept twice. Confirms: said on another date, which the fact records (said_again).
                assert placement.known is not None
                entry.status = "known"
                entry.known = _brief(placement.known)
                results.append(entry)
                ids.append(None)
                if placement.change == KNOWN:
                    continue
            elif placement.change == REPLACES:
                assert placement.current is not None
                entry.replaces = _brief(placement.current)
            assert placement.timeline is not None  # known changes nothing and went on above
            if placement.change == OLDER:
                entry.current = _brief(placement.timeline[-1])
                if placement.split is not None:  # said between two sayings of a fact: now two facts
                    entry.splits = _brief(placement.split)
            _swap(after, timeline, placement.timeline)
            timelines[key] = placement.timeline
            if placement.change == CONFIRMS:
                continue
            entry.id = fact.id
            results.append(entry)
            ids.append(fact.id)
        for entry, fid in zip(results, ids, strict=True):
            if fid is None or fid not in after:
                continue
            final = after[fid]
            entry.status = final.status
            if final.status == "history":
                entry.until = final.until
                entry.replaced_by = final.replaced_by
        return results, before, after

    # -- correcting and forgetting ---------------------------------------------
    def edit(
        self,
        actor: Actor,
        base_name: str,
        fact_id: str,
        fact: str | None = None,
        *,
        said_at: str | None = None,
        source: str | None = None,
    ) -> Fact:
        """Correct a fact's wording (or its date or source), for every saying of it. Its place in the history
        is kept; if it now says what the fact beside it says, the two are one fact (the corrected one answered)."""
        base = self.base(actor, base_name, WRITE_CONTENT)
        changes: dict[str, Any] = {}
        if fact is not None:
            wording = one_line(fact, "the fact")
            if not wording or len(wording) > MAX_FACT:
                raise Invalid(f"A fact is one sentence of 1 to {MAX_FACT} characters", code="INVALID_FACT")
            changes["fact"] = wording
        if source is not None:
            if not str(source).strip():
                raise Invalid("source cannot be empty", code="INVALID_FACT")
            changes["source"] = one_line(source, "source")
        if said_at is not None:
            changes["said_at"] = normalize_said_at(said_at)
        if not changes:
            raise BadRequest('Send {"fact": "the corrected sentence"}', code="INVALID_FACT")
        refuse_secret("", "", changes.get("fact", ""), changes.get("source", ""), where="the correction")
        check_id(fact_id)
        with self.locks.folder(base.folder):
            store = self.store(base)
            timelines = store.timelines(store.facts())
            before = {f.id: f for tl in timelines.values() for f in tl}
            current = self._find(list(before.values()), base, fact_id)
            if all(getattr(current, k) == v for k, v in changes.items()):
                return current
            stamp = iso()
            record = correction(current, changes, stamp)
            edited = current.with_(**changes, edited_at=stamp, corrected=(*current.corrected, record))
            old = timelines[key_of(current)]
            # The edited fact may now be the same fact as one beside it: then they are one fact (one note).
            timeline, where = settle([edited if f.id == fact_id else f for f in old])
            home = where[fact_id]
            timeline = [f.with_(edited_at=edited.edited_at) if f.id == home else f for f in timeline]
            after = dict(before)
            _swap(after, old, timeline)
            ops = store.ops_for(before, after)
            store.commit(ops)  # under the lock: the index hears of changes in the order they were made
        return after[home]

    def forget(self, actor: Actor, base_name: str, fact_id: str, *, history: bool = False) -> Forgotten:
        """Delete a fact; with history, also the older facts of its subject and attribute it replaced.

        Without history the facts it replaced stay: the one before it holds again (it was current
        before this one was said).
        """
        base = self.base(actor, base_name, WRITE_CONTENT)
        check_id(fact_id)
        with self.locks.folder(base.folder):
            store = self.store(base)
            timelines = store.timelines(store.facts())
            before = {f.id: f for tl in timelines.values() for f in tl}
            fact = self._find(list(before.values()), base, fact_id)
            timeline = timelines[key_of(fact)]
            index = next(i for i, f in enumerate(timeline) if f.id == fact_id)
            gone = {fact_id} | ({f.id for f in timeline[:index]} if history else set())
            # The facts on either side of a forgotten one may be the same fact: one fact again (one note).
            remaining, where = settle([f for f in timeline if f.id not in gone])
            after = dict(before)
            _swap(after, timeline, remaining)
            ops = store.ops_for(before, after)
            store.commit(ops)  # under the lock: the index hears of changes in the order they were made
        joined = {home for fid, home in where.items() if fid != home}
        return Forgotten.model_construct(
            knowledge_base=base.name, forgotten=fact_id, history_forgotten=len(gone) - 1,
            current=FactView.of(remaining[-1]) if fact.status == "current" and remaining else None,
            # the facts on either side of it were the same fact: one fact again
            rejoined=FactView.of(next(f for f in remaining if f.id in joined)) if joined else None,
        )


def correction(fact: Fact, changes: dict[str, Any], stamp: str) -> Correction:
    """What an Edit of `fact` keeps: the values it changed, as they were. An earlier wording that looks
    like a secret is not kept (the correction may be what took it out)."""
    before = {k: getattr(fact, k) for k, v in changes.items() if getattr(fact, k) != v}
    if "fact" in before and find_secret_in_fact("", "", before["fact"], ""):
        del before["fact"]
    if "source" in before and find_secret_in_fact("", "", "", before["source"]):
        del before["source"]
    return Correction(on=stamp[:10], **before)


def check_id(fact_id: str) -> None:
    if not ID_RE.match(fact_id or ""):
        raise NotFound(f"{fact_id!r} is not a fact id (f_ and 16 hex digits)", code="FACT_NOT_FOUND")


def refuse_secret(subject: str, attribute: str, fact: str, source: str, *, where: str) -> None:
    found = find_secret_in_fact(subject, attribute, fact, source)
    if found:
        reason, field = found
        # The message never repeats the text: it must not reach a log either.
        raise Invalid(
            f"{where} looks like {reason} (in its {field}): secrets are never kept in a memory, and nothing of it "
            "was written. Keep it in a password manager, or reword the fact without it",
            code="FACT_SENSITIVE",
            details={"reason": reason, "where": where, "field": field},
        )


def as_of_moment(value: str) -> datetime:
    """The instant `as_of` asks about: a date means by the end of that day (a bad one: INVALID_DATE)."""
    return moment(normalize_said_at(value, "as_of"), end_of_day=True)
